// Item 12 of issue 15: the holes mutation testing found, each closed by a test that fails when its rule is
// removed. Through the handler only, so the same file runs under vitest, bun test and deno test.
import { describe, expect, test } from "vitest";
import { createAuthorizationServer } from "../mod.ts";
import { passwordLogin } from "../lib/consent/login.ts";
import type { Throttle } from "../lib/throttle.ts";
import {
  authorizeUrl, codeRequest, consent, csrfOf, errorOf, fixture, getAuthorize, ISSUER, pkce, postToken, REDIRECT, SECRETS,
  spaCode, spaTokens, webCode,
} from "./helpers.ts";

const form = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  new Request(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

describe("client registration", () => {
  test.each(["javascript:alert(1)", "data:text/html,hi"])("refuses the redirect URI %s", async (uri) => {
    const { server } = await fixture();
    await expect(server.clients.register({ client_id: "x", name: "X", type: "public", redirect_uris: [uri], scopes: ["read"] }))
      .rejects.toThrow(/uses a forbidden scheme/);
  });

  test("a secret needs 16 characters: 15 are refused, 16 accepted", async () => {
    const { server } = await fixture();
    const register = (secret: string) =>
      server.clients.register({ client_id: "c", client_secret: secret, name: "C", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] });
    await expect(register("a".repeat(15))).rejects.toThrow(/at least 16 characters/);
    await expect(register("a".repeat(16))).resolves.toMatchObject({ client_secret: "a".repeat(16) });
  });
});

describe("introspection", () => {
  const introspect = async (server: Awaited<ReturnType<typeof fixture>>["server"], token: string, hint?: string) =>
    (await server.fetch(form(`${ISSUER}/introspect`, { token, ...(hint ? { token_type_hint: hint } : {}) }, basic("web", SECRETS.web)))).json();

  test("a rotated refresh token is inactive", async () => {
    const { server } = await fixture();
    const code = await webCode(server);
    const tokens = await (await postToken(server, {
      grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code,
    })).json();
    expect(await introspect(server, tokens.refresh_token, "refresh_token")).toMatchObject({ active: true });
    const rotated = await postToken(server, { grant_type: "refresh_token", client_id: "web", client_secret: SECRETS.web, refresh_token: tokens.refresh_token });
    expect(rotated.status).toBe(200);
    expect(await introspect(server, tokens.refresh_token, "refresh_token")).toEqual({ active: false });
  });
});

describe("refresh tokens are issued only where registered", () => {
  test("a code client without the refresh_token grant gets no refresh token", async () => {
    const { server } = await fixture();
    await server.clients.register({
      client_id: "norefresh", client_secret: SECRETS.web, name: "No refresh", type: "confidential", redirect_uris: [REDIRECT],
      scopes: ["read"], grant_types: ["authorization_code"],
    });
    const location = await consent(server, codeRequest("norefresh"));
    const response = await postToken(server, {
      grant_type: "authorization_code", client_id: "norefresh", client_secret: SECRETS.web, redirect_uri: REDIRECT,
      code: location.searchParams.get("code")!,
    });
    const body = await response.json();
    expect(body.access_token).toBeTruthy();
    expect(body.refresh_token).toBeUndefined();
  });

  test("client_credentials carries a refresh token only with the opt-in, and it refreshes", async () => {
    const { server } = await fixture();
    const plain = await (await postToken(server, { grant_type: "client_credentials", scope: "export" }, basic("backend", SECRETS.backend))).json();
    expect(plain.refresh_token).toBeUndefined();
    const opted = await (await postToken(server, { grant_type: "client_credentials", scope: "export" }, basic("backend-refresh", SECRETS.backendRefresh))).json();
    expect(typeof opted.refresh_token).toBe("string");
    const refreshed = await postToken(server, { grant_type: "refresh_token", refresh_token: opted.refresh_token }, basic("backend-refresh", SECRETS.backendRefresh));
    expect(refreshed.status).toBe(200);
  });
});

describe("expiry at the exact instant", () => {
  test("a code is good 1 ms before its expiry and dead at it", async () => {
    const { server, clock } = await fixture();
    const first = await spaCode(server);
    clock.now += 600_000 - 1;
    expect((await postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code: first.code, code_verifier: first.verifier })).status).toBe(200);
    const second = await spaCode(server);
    clock.now += 600_000;
    expect(await errorOf(await postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code: second.code, code_verifier: second.verifier }))).toMatchObject({ error: "invalid_grant" });
  });

  test("an access token is good 1 ms before its expiry and dead at it", async () => {
    const { server, clock } = await fixture();
    const tokens = await spaTokens(server);
    clock.now += 3_600_000 - 1;
    await expect(server.verifyAuthorization(`Bearer ${tokens.access_token}`)).resolves.toMatchObject({ client_id: "spa" });
    clock.now += 1;
    await expect(server.verifyAuthorization(`Bearer ${tokens.access_token}`)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("a refresh token is good 1 ms before its expiry and dead at it", async () => {
    const { server, clock } = await fixture();
    const a = await spaTokens(server);
    const b = await spaTokens(server);
    clock.now += 30 * 24 * 3_600_000 - 1;
    expect((await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: a.refresh_token })).status).toBe(200);
    clock.now += 1;
    expect(await errorOf(await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: b.refresh_token }))).toMatchObject({ error: "invalid_grant" });
  });
});

describe("headers", () => {
  test("the redirect that carries the code is Cache-Control: no-store", async () => {
    const { server } = await fixture();
    const params = codeRequest("web");
    const page = await getAuthorize(server, params);
    const response = await server.fetch(new Request(authorizeUrl(params), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ decision: "allow", csrf: csrfOf(await page.text()) }).toString(),
    }));
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toContain("code=");
    expect(response.headers.get("cache-control")).toBe("no-store");
  });

  test("a throttled client authentication says when to retry", async () => {
    const blocked: Throttle = { retryAfter: () => 1500, fail: () => {} };
    const { server } = await fixture({ throttle: blocked });
    const response = await postToken(server, { grant_type: "client_credentials" }, basic("backend", SECRETS.backend));
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("2");
  });

  test("without a known address, the throttle still counts failures per client_id", async () => {
    const keys: string[] = [];
    const recording: Throttle = { retryAfter: () => 0, fail: (key) => void keys.push(key) };
    const { server } = await fixture({ throttle: recording });
    await postToken(server, { grant_type: "client_credentials" }, basic("backend", "wrong-secret"));
    await postToken(server, { grant_type: "client_credentials" }, basic("other", "wrong-secret"));
    expect(keys.length).toBe(2);
    expect(new Set(keys).size).toBe(2);
  });
});

describe("PKCE challenge", () => {
  test.each([
    ["44 characters", "a".repeat(44)],
    ["a prefix before 43 good ones", "!" + "a".repeat(43)],
    ["a suffix after 43 good ones", "a".repeat(43) + "!"],
  ])("a challenge with %s is malformed", async (_, challenge) => {
    const { server } = await fixture();
    const response = await getAuthorize(server, codeRequest("spa", { code_challenge: challenge, code_challenge_method: "S256" }));
    expect(response.status).toBe(302);
    expect(new URL(response.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");
  });

  test("a good challenge with a wrong verifier of the right shape is invalid_grant", async () => {
    const { server } = await fixture();
    const { code } = await spaCode(server);
    const other = await pkce();
    expect(await errorOf(await postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: other.verifier })))
      .toMatchObject({ error: "invalid_grant" });
  });
});

describe("the consent form's CSRF token", () => {
  test("is accepted 10 minutes after the page and refused 1 ms later", async () => {
    const { server, clock } = await fixture();
    const params = codeRequest("web");
    const post = async (csrf: string) => server.fetch(new Request(authorizeUrl(params), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ decision: "allow", csrf }).toString(),
    }));
    const first = csrfOf(await (await getAuthorize(server, params)).text());
    const second = csrfOf(await (await getAuthorize(server, params)).text());
    clock.now += 10 * 60 * 1000;
    expect((await post(first)).status).toBe(303);
    clock.now += 1;
    expect((await post(second)).status).toBe(403);
  });
});

describe("the login hook", () => {
  test("a hook that returns an empty user id is a server_error, not a sign-in", async () => {
    const { server, errors } = await fixture({ authenticateUser: () => ({ id: "" }) });
    const response = await getAuthorize(server, codeRequest("web"));
    expect(response.status).toBe(500);
    expect(errors.length).toBe(1);
  });

  test("passwordLogin refuses a verify that returns an empty id", async () => {
    const hook = passwordLogin({ secret: "0123456789abcdef0123456789abcdef", verify: () => ({ id: "" }) });
    const url = `${ISSUER}/authorize`;
    const page = (await hook(new Request(url), { form: null, client: { client_id: "c", name: "C" }, scope: "s", remoteAddress: undefined })) as Response;
    const csrf = csrfOf(await page.text());
    const nonce = page.headers.getSetCookie()[0]!.split(";")[0]!;
    const attempt = hook(new Request(url, { method: "POST", headers: { cookie: nonce } }), {
      form: new URLSearchParams({ csrf, username: "u", password: "p" }), client: { client_id: "c", name: "C" }, scope: "s", remoteAddress: undefined,
    });
    await expect(attempt).rejects.toThrow(TypeError);
  });
});

test("an unknown client_id with a secret is refused like a wrong secret", async () => {
  const server = createAuthorizationServer({ issuer: ISSUER, scopes: { read: "Read" } });
  const response = await postToken(server, { grant_type: "client_credentials" }, basic("nobody", "some-secret-0123456789"));
  expect(response.status).toBe(401);
  expect(response.headers.get("www-authenticate")).toMatch(/^Basic /);
});

describe("the consent CSRF token, malformed or from the future", () => {
  const post = (server: Awaited<ReturnType<typeof fixture>>["server"], csrf: string) => server.fetch(new Request(authorizeUrl(codeRequest("web")), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ decision: "allow", csrf }).toString(),
  }));

  test.each(["", "abc", "a.b", "a.b.c.d", "zz.nonce.mac", "..", "1.2.3"])("%j is refused with 403, never a 500", async (csrf) => {
    const { server } = await fixture();
    expect((await post(server, csrf)).status).toBe(403);
  });

  test("a token issued after the clock's now (the clock went back) is refused", async () => {
    const { server, clock } = await fixture();
    const csrf = csrfOf(await (await getAuthorize(server, codeRequest("web"))).text());
    clock.now -= 1;
    expect((await post(server, csrf)).status).toBe(403);
    clock.now += 1;
    expect((await post(server, csrf)).status).toBe(303);
  });
});

describe("introspection details", () => {
  const introspect = (server: Awaited<ReturnType<typeof fixture>>["server"], fields: Record<string, string>) =>
    server.fetch(form(`${ISSUER}/introspect`, fields, basic("backend", SECRETS.backend)));

  test("without a token parameter: invalid_request", async () => {
    const { server } = await fixture();
    const response = await introspect(server, {});
    expect(response.status).toBe(400);
    expect((await response.json()).error).toBe("invalid_request");
  });

  test("a client's own client_credentials token has no sub", async () => {
    const { server } = await fixture();
    const token = (await (await postToken(server, { grant_type: "client_credentials", scope: "export" }, basic("backend", SECRETS.backend))).json()).access_token;
    const body = await (await introspect(server, { token })).json();
    expect(body).toMatchObject({ active: true, client_id: "backend", scope: "export" });
    expect("sub" in body).toBe(false);
    expect("aud" in body).toBe(false);
  });
});

test("a throttle that answers asynchronously (a shared store) is awaited: its block holds", async () => {
  const shared: Throttle = { retryAfter: () => Promise.resolve(1500), fail: () => Promise.resolve() };
  const { server } = await fixture({ throttle: shared });
  const response = await postToken(server, { grant_type: "client_credentials" }, basic("backend", SECRETS.backend));
  expect(response.status).toBe(429);
  expect(response.headers.get("retry-after")).toBe("2");
});
