// The attacks of issue 15, run as an attacker would: over real HTTP against the reference server on Node,
// Deno and Bun. Vitest on Node only: it spawns the other runtimes.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import {
  authorizePath, Browser, challengeOf, config, csrfOf, decide, killAll, PASSWORD, type Running, SECRETS, signIn, spaCode,
  startReference, token,
} from "./reference_process.ts";

afterAll(killAll);

const RUNTIMES = ["node", "deno", "bun"] as const;

async function withServer<T>(runtime: string, body: (server: Running) => Promise<T>, extra: Record<string, unknown> = {}): Promise<T> {
  const server = await startReference(runtime, config(extra));
  try {
    return await body(server);
  } finally {
    await server.stop();
  }
}

const bearer = (base: string, accessToken: string) =>
  fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${accessToken}` } }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });

describe.each(RUNTIMES)("on %s", (runtime) => {
  test("1. 60 concurrent password guesses: at most 5 are evaluated", async () => {
    await withServer(runtime, async ({ url }) => {
      const browser = new Browser(url);
      const path = authorizePath("spa", await challengeOf("v".repeat(43)));
      const csrf = csrfOf(await (await browser.request(path)).text());
      // Every guess carries the same cookies, as an attacker's script would: a response that rotates the
      // sign-in nonce must not turn a later guess into a CSRF refusal (403) and make the count flaky.
      const guess = (password: string) => {
        const attacker = new Browser(url);
        for (const [name, value] of browser.cookies) attacker.cookies.set(name, value);
        return attacker.request(path, { form: { csrf, username: "alice", password } }).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        });
      };
      const wrong = Array.from({ length: 59 }, (_, i) => guess(`wrong-${i}`));
      // The right password arrives while the wrong ones are still being hashed.
      await new Promise((done) => setTimeout(done, 30));
      const right = guess(PASSWORD);
      const statuses = await Promise.all([...wrong, right]);
      const counts = Object.fromEntries([401, 429, 303].map((s) => [s, statuses.filter((x) => x === s).length]));
      // At most 5 wrong passwords are evaluated (401); everything else waits (429). The right one (303) wins
      // only if it was reserved among the first 5 to arrive, as with any throttle; a success gives its
      // reservation back, so it never costs a wrong guess's place but never adds one either.
      expect(counts[401]!, JSON.stringify(statuses)).toBeLessThanOrEqual(5);
      expect(counts[303]!, JSON.stringify(statuses)).toBeLessThanOrEqual(1);
      expect(counts[429], JSON.stringify(statuses)).toBe(60 - counts[401]! - counts[303]!);
    });
  }, 60_000);

  test("2. a consent approval is single-use: replaying the POST mints no second code", async () => {
    await withServer(runtime, async ({ url }) => {
      const browser = new Browser(url);
      const path = authorizePath("web");
      const csrf = csrfOf(await signIn(browser, path));
      const first = await decide(browser, path, csrf);
      expect(first.status).toBe(303);
      expect(new URL(first.headers.get("location")!).searchParams.get("code")).toBeTruthy();
      const replays = await Promise.all(Array.from({ length: 20 }, () => decide(browser, path, csrf)));
      for (const replay of replays) {
        expect(replay.status).toBe(403);
        expect(replay.headers.get("location")).toBeNull();
        await replay.arrayBuffer();
      }
    });
  }, 60_000);

  test("2. outstanding codes per user and client are capped: the oldest is dropped", async () => {
    await withServer(runtime, async ({ url }) => {
      const browser = new Browser(url);
      const path = authorizePath("web");
      let html = await signIn(browser, path);
      const codes: string[] = [];
      for (let i = 0; i < 8; i++) {
        const response = await decide(browser, path, csrfOf(html));
        codes.push(new URL(response.headers.get("location")!).searchParams.get("code")!);
        html = await (await browser.request(path)).text();
      }
      const redeem = (code: string) =>
        token(url, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: "http://127.0.0.1:9999/callback", code });
      expect((await redeem(codes[0]!)).body).toMatchObject({ error: "invalid_grant" });
      expect((await redeem(codes[7]!)).status).toBe(200);
    });
  }, 60_000);

  test("3. a replayed code with another client's id, or a wrong verifier, revokes nothing", async () => {
    await withServer(runtime, async ({ url }) => {
      const { code, verifier } = await spaCode(url);
      const exchange = (fields: Record<string, string>) =>
        token(url, { grant_type: "authorization_code", redirect_uri: "http://127.0.0.1:9999/callback", code, ...fields });
      const issued = await exchange({ client_id: "spa", code_verifier: verifier });
      expect(issued.status).toBe(200);
      const accessToken = issued.body.access_token as string;

      expect((await exchange({ client_id: "other-spa", code_verifier: verifier })).body).toMatchObject({ error: "invalid_grant" });
      expect((await exchange({ client_id: "spa", code_verifier: "w".repeat(43) })).body).toMatchObject({ error: "invalid_grant" });
      expect(await bearer(url, accessToken)).toBe(200);
      // The code's own client, proven by its verifier, does trigger the replay revocation.
      expect((await exchange({ client_id: "spa", code_verifier: verifier })).body).toMatchObject({ error: "invalid_grant" });
      expect(await bearer(url, accessToken)).toBe(401);
    });
  }, 60_000);

  test("4. a client_credentials backend cannot introspect another client's tokens", async () => {
    await withServer(runtime, async ({ url }) => {
      const { code, verifier } = await spaCode(url);
      const issued = await token(url, {
        grant_type: "authorization_code", client_id: "spa", redirect_uri: "http://127.0.0.1:9999/callback", code, code_verifier: verifier,
      });
      const introspect = async (clientId: string, secret: string, value: string) => {
        const response = await fetch(`${url}/introspect`, {
          method: "POST",
          headers: { authorization: `Basic ${btoa(`${clientId}:${secret}`)}` },
          body: new URLSearchParams({ token: value }),
        });
        return response.json();
      };
      expect(await introspect("backend", SECRETS.backend, issued.body.access_token as string)).toEqual({ active: false });
      expect(await introspect("backend", SECRETS.backend, issued.body.refresh_token as string)).toEqual({ active: false });
      expect(await introspect("auditor", "auditor-secret-0123456789abcdef", issued.body.access_token as string)).toMatchObject({
        active: true, client_id: "spa", sub: "alice",
      });
    }, {
      clients: [...(config().clients as unknown[]), {
        client_id: "auditor", client_secret: "auditor-secret-0123456789abcdef", name: "Resource server", redirect_uris: [],
        scopes: ["export"], grant_types: ["client_credentials"], introspection: "all",
      }],
    });
  }, 60_000);

  test("9. behind a trusted proxy (--trust-proxy), one attacker's failures do not lock out other clients", async () => {
    const server = await startReference(runtime, config(), ["--trust-proxy", "127.0.0.1,::1"]);
    try {
      const attempt = async (secret: string, forwardedFor: string) => {
        const response = await fetch(`${server.url}/index.php?module=OAuth2&action=token`, {
          method: "POST",
          headers: { "x-forwarded-for": forwardedFor, authorization: `Basic ${btoa(`backend:${secret}`)}` },
          body: new URLSearchParams({ grant_type: "client_credentials", scope: "export" }),
        });
        await response.arrayBuffer();
        return response.status;
      };
      for (let i = 0; i < 15; i++) await attempt(`wrong-${i}-0123456789`, "203.0.113.9");
      expect(await attempt(SECRETS.backend, "203.0.113.9")).toBe(429);
      expect(await attempt(SECRETS.backend, "198.51.100.7")).toBe(200);
    } finally {
      await server.stop();
    }
  }, 60_000);

  test("10. audit_log writes JSON lines with ids and addresses, and no secret or token", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "oauth2-audit-")), "audit.jsonl");
    await withServer(runtime, async ({ url }) => {
      const issued = await token(url, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" });
      expect(issued.status).toBe(200);
      await token(url, { grant_type: "client_credentials", client_id: "backend", client_secret: "wrong-secret-0123456789", scope: "export" });
      const { code, verifier } = await spaCode(url);
      await token(url, { grant_type: "authorization_code", client_id: "spa", redirect_uri: "http://127.0.0.1:9999/callback", code, code_verifier: verifier });
      let text = "";
      for (let i = 0; i < 50 && !text.includes("code.redeemed"); i++) {
        await new Promise((done) => setTimeout(done, 100));
        text = existsSync(file) ? readFileSync(file, "utf8") : "";
      }
      const events = text.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
      const types = events.map((e) => e.type);
      for (const type of ["client.registered", "token.issued", "signin.succeeded", "consent.granted", "code.issued", "code.redeemed"]) {
        expect(types).toContain(type);
      }
      expect(events.find((e) => e.type === "code.redeemed")).toMatchObject({ client_id: "spa", user_id: "alice", address: "127.0.0.1" });
      for (const secret of [SECRETS.backend, issued.body.access_token as string, code, verifier, PASSWORD]) expect(text).not.toContain(secret);
    }, { audit_log: file });
  }, 60_000);

  test("11. logout (POST, CSRF-protected) ends the session on the server: a kept copy of the cookie is dead", async () => {
    await withServer(runtime, async ({ url }) => {
      const browser = new Browser(url);
      const path = authorizePath("web");
      await signIn(browser, path);
      const session = [...browser.cookies].find(([name]) => name === "oauth2_session")!;
      const copy = new Browser(url);
      copy.cookies.set(session[0], session[1]);
      // Without the form's token, a POST (a cross-site form, say) ends nothing.
      const forged = await browser.request("/logout", { form: { csrf: "forged" } });
      expect(forged.status).toBe(403);
      await forged.arrayBuffer();
      expect(await (await browser.request(path)).text()).toContain('name="decision"');
      const page = await browser.request("/logout");
      const loggedOut = await browser.request("/logout", { form: { csrf: csrfOf(await page.text()) } });
      expect(loggedOut.status).toBe(200);
      expect(loggedOut.headers.getSetCookie().join("\n")).toMatch(/oauth2_session=;.*Max-Age=0/);
      await loggedOut.arrayBuffer();
      // The copied cookie no longer signs anyone in: the sign-in page comes back.
      const again = await (await copy.request(path)).text();
      expect(again).toContain('name="password"');
      expect(again).not.toContain('name="decision"');
    });
  }, 60_000);

  test("11. the session cookie is Secure whenever the issuer is https, also behind a TLS-terminating proxy", async () => {
    const server = await startReference(runtime, config(), ["--issuer", "https://auth.example.com"]);
    try {
      const browser = new Browser(server.url);
      const path = authorizePath("web");
      const page = await browser.request(path);
      const csrf = csrfOf(await page.text());
      expect(page.headers.getSetCookie().join("\n")).toMatch(/oauth2_session_login=[^;]+;.*Secure/);
      const login = await browser.request(path, { form: { csrf, username: "alice", password: PASSWORD } });
      expect(login.status).toBe(303);
      expect(login.headers.getSetCookie().find((c) => c.startsWith("oauth2_session="))).toMatch(/; Secure/);
      // The redirect after sign-in is relative: Host never picks where the browser goes.
      expect(login.headers.get("location")).toMatch(/^\/index\.php\?/);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
