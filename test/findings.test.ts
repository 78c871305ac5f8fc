// The findings of issue 15, through the handler: the same file runs under vitest, bun test and deno test.
// test/runtimes/attacks.test.ts runs the same attacks over HTTP against the reference server on each runtime.
import { describe, expect, test } from "vitest";
import { passwordLogin } from "../lib/consent/login.ts";
import type { Throttle } from "../lib/throttle.ts";
import { memoryThrottle } from "../lib/throttle.ts";
import {
  authorizeUrl, bearer, codeRequest, csrfOf, errorOf, fixture, getAuthorize, pkce, postToken, REDIRECT, SECRETS, spaCode, webCode,
} from "./helpers.ts";

const SECRET = "0123456789abcdef0123456789abcdef";
const URL_ = "https://auth.example/authorize?response_type=code&client_id=printer";
const CLIENT = { client_id: "printer", name: "Photo Printer" };

describe("1. the login throttle under concurrency", () => {
  async function loginRig(throttle?: Throttle) {
    let evaluated = 0;
    const hook = passwordLogin({
      secret: SECRET,
      ...(throttle ? { throttle } : {}),
      verify: async (username, password) => {
        evaluated++;
        await new Promise((done) => setTimeout(done, 20)); // a slow hash
        return username === "alice" && password === "right" ? { id: "alice" } : null;
      },
    });
    const page = (await hook(new Request(URL_), { form: null, client: CLIENT, scope: "s", remoteAddress: "203.0.113.9" })) as Response;
    const csrf = /name="csrf" value="([^"]*)"/.exec(await page.text())![1]!;
    const nonce = page.headers.getSetCookie()[0]!.split(";")[0]!;
    const attempt = async (password: string, address = "203.0.113.9") => {
      const form = new URLSearchParams({ csrf, username: "alice", password });
      const request = new Request(URL_, { method: "POST", headers: { cookie: nonce } });
      return ((await hook(request, { form, client: CLIENT, scope: "s", remoteAddress: address })) as Response).status;
    };
    return { attempt, evaluated: () => evaluated };
  }

  test("60 concurrent guesses: at most 5 wrong passwords are evaluated, and the right one does not win", async () => {
    const { attempt, evaluated } = await loginRig();
    const wrong = Array.from({ length: 59 }, (_, i) => attempt(`wrong-${i}`));
    // The right password arrives while the first wrong ones are still being hashed (the attack's timing).
    while (evaluated() < 5) await new Promise((done) => setTimeout(done, 1));
    const statuses = await Promise.all([...wrong, attempt("right")]);
    expect(evaluated()).toBeLessThanOrEqual(5);
    expect(statuses.filter((s) => s === 303)).toEqual([]);
    expect(statuses.filter((s) => s === 429).length).toBe(55);
  });

  test("a success gives its reservation back: a typo or four, then the right password, blocks nobody", async () => {
    const { attempt } = await loginRig(memoryThrottle({ maxFailures: 5, windowSeconds: 300 }));
    for (let i = 0; i < 4; i++) expect(await attempt(`typo-${i}`)).toBe(401);
    expect(await attempt("right")).toBe(303);
    expect(await attempt("right")).toBe(303);
    expect(await attempt("typo-5")).toBe(401);
    expect(await attempt("right")).toBe(429);
  });
});

describe("3. replayed codes and refresh tokens revoke only for their own, authenticated client", () => {
  const exchange = (server: Awaited<ReturnType<typeof fixture>>["server"], code: string, fields: Record<string, string>) =>
    postToken(server, { grant_type: "authorization_code", redirect_uri: REDIRECT, code, ...fields });

  test("another public client's id, or the code's own client with a wrong verifier: invalid_grant, nothing revoked", async () => {
    const { server } = await fixture();
    await server.clients.register({ client_id: "spa2", name: "Another SPA", type: "public", redirect_uris: [REDIRECT], scopes: ["read"] });
    const { code, verifier } = await spaCode(server);
    const tokens = await (await exchange(server, code, { client_id: "spa", code_verifier: verifier })).json();
    expect(await errorOf(await exchange(server, code, { client_id: "spa2", code_verifier: verifier }))).toMatchObject({ error: "invalid_grant" });
    const other = await pkce();
    expect(await errorOf(await exchange(server, code, { client_id: "spa", code_verifier: other.verifier }))).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, tokens.access_token)).resolves.toMatchObject({ user_id: "alice" });
    expect(await errorOf(await exchange(server, code, { client_id: "spa", code_verifier: verifier }))).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, tokens.access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("another confidential client replaying a spent code revokes nothing", async () => {
    const { server } = await fixture();
    const code = await webCode(server);
    const tokens = await (await exchange(server, code, { client_id: "web", client_secret: SECRETS.web })).json();
    expect(await errorOf(await exchange(server, code, { client_id: "other", client_secret: SECRETS.other }))).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, tokens.access_token)).resolves.toMatchObject({ client_id: "web" });
  });

  test("the code's own confidential client replaying it revokes the grant even when another check fails too", async () => {
    const { server } = await fixture();
    const code = await webCode(server);
    const tokens = await (await exchange(server, code, { client_id: "web", client_secret: SECRETS.web })).json();
    const replay = await exchange(server, code, { client_id: "web", client_secret: SECRETS.web, redirect_uri: "https://app.example.com/other" });
    expect(await errorOf(replay)).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, tokens.access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("a public client's code replayed with its verifier but a wrong redirect_uri still revokes", async () => {
    const { server } = await fixture();
    const { code, verifier } = await spaCode(server);
    const tokens = await (await exchange(server, code, { client_id: "spa", code_verifier: verifier })).json();
    await exchange(server, code, { client_id: "spa", code_verifier: verifier, redirect_uri: "https://app.example.com/other" });
    await expect(bearer(server, tokens.access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("a rotated refresh token presented by another client revokes nothing; by its own client, the grant", async () => {
    const { server } = await fixture();
    const code = await webCode(server);
    const first = await (await exchange(server, code, { client_id: "web", client_secret: SECRETS.web })).json();
    const refresh = (fields: Record<string, string>) => postToken(server, { grant_type: "refresh_token", refresh_token: first.refresh_token, ...fields });
    const second = await (await refresh({ client_id: "web", client_secret: SECRETS.web })).json();
    expect(await errorOf(await refresh({ client_id: "other", client_secret: SECRETS.other }))).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, second.access_token)).resolves.toMatchObject({ client_id: "web" });
    expect(await errorOf(await refresh({ client_id: "web", client_secret: SECRETS.web, scope: "write" }))).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, second.access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });
});

describe("5. throttle keys have a fixed size", () => {
  test("an 11 KiB client_id reaches the throttle as a key of at most 64 characters", async () => {
    const keys: string[] = [];
    const recording: Throttle = { retryAfter: (key) => (keys.push(key), 0), fail: (key) => void keys.push(key) };
    const { server } = await fixture({ throttle: recording });
    const response = await server.fetch(new Request("https://auth.example.com/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${"x".repeat(11 * 1024)}:wrong`)}` },
      body: "grant_type=client_credentials",
    }), { remoteAddr: { hostname: "2001:db8::1" } });
    expect(response.status).toBe(401);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key.length).toBeLessThanOrEqual(64);
  });
});

describe("2. one consent, one code", () => {
  const approve = (server: Awaited<ReturnType<typeof fixture>>["server"], params: Record<string, string>, csrf: string) =>
    server.fetch(new Request(authorizeUrl(params), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ decision: "allow", csrf }).toString(),
    }));

  test("a consent approval is single-use: 50 replays of the POST mint no code", async () => {
    const { server } = await fixture();
    const params = codeRequest("web");
    const csrf = csrfOf(await (await getAuthorize(server, params)).text());
    expect((await approve(server, params, csrf)).status).toBe(303);
    const replays = await Promise.all(Array.from({ length: 50 }, () => approve(server, params, csrf)));
    for (const replay of replays) {
      expect(replay.status).toBe(403);
      expect(replay.headers.get("location")).toBeNull();
    }
  });

  test("so is a denial: the POST cannot be turned into an approval", async () => {
    const { server } = await fixture();
    const params = codeRequest("web");
    const csrf = csrfOf(await (await getAuthorize(server, params)).text());
    const deny = await server.fetch(new Request(authorizeUrl(params), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ decision: "deny", csrf }).toString(),
    }));
    expect(new URL(deny.headers.get("location")!).searchParams.get("error")).toBe("access_denied");
    expect((await approve(server, params, csrf)).status).toBe(403);
  });

  test("at most 5 unredeemed codes per user and client: the oldest are dropped", async () => {
    const { server } = await fixture();
    const codes: string[] = [];
    for (let i = 0; i < 7; i++) codes.push(await webCode(server));
    const redeem = (code: string) =>
      postToken(server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code });
    expect(await errorOf(await redeem(codes[0]!))).toMatchObject({ error: "invalid_grant" });
    expect(await errorOf(await redeem(codes[1]!))).toMatchObject({ error: "invalid_grant" });
    for (const code of codes.slice(2)) expect((await redeem(code)).status).toBe(200);
  });
});
