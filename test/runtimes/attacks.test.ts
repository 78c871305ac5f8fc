// The attacks of issue 15, run as an attacker would: over real HTTP against the reference server on Node,
// Deno and Bun. Vitest on Node only: it spawns the other runtimes.
import { existsSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { base64url, hmac, hmacKey } from "../../lib/crypto.ts";
import { sha256 } from "../../lib/sha256.ts";
import { compressionBombs, type DocumentHost, peakMemory, startDocumentHost } from "./document_host.ts";
import {
  authorizePath, Browser, challengeOf, config, csrfOf, decide, killAll, PASSWORD, REDIRECT, type Running, SECRETS, signIn, spaCode,
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

// The attacks on what round 2 added (client metadata documents, open registration, the store file, the consent
// page's names), as an attacker sends them: over real HTTP, one reference server per runtime with documents,
// open registration, metrics and a trusted proxy, so each attack comes from its own forwarded address.
describe.each(RUNTIMES)("round-2 surfaces on %s", (runtime) => {
  let server: Running;
  let host: DocumentHost;
  beforeAll(async () => {
    compressionBombs();
    host = await startDocumentHost();
    server = await startReference(runtime, config({
      default_scope: "read",
      registration: { enabled: true },
      client_metadata_documents: { enabled: true, allow_origins: [host.origin] },
      metrics: { enabled: true },
      clients: [...config().clients as unknown[], {
        client_id: "holdout", name: "Holdout Web", redirect_uris: [REDIRECT], scopes: ["read"], grant_types: ["authorization_code"],
      }],
    }), ["--trust-proxy", "127.0.0.1,::1"]);
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await host?.close();
  });

  let nextAddress = 1;
  /** A forwarded address no other request of these tests used. */
  const address = () => `198.51.${Math.floor(nextAddress / 250)}.${(nextAddress++ % 250) + 1}`;
  const authorizeDocument = (clientId: string, from = address()) =>
    fetch(`${server.url}${documentPath(clientId)}`, { headers: { "x-forwarded-for": from } }).then(async (r) => ({ status: r.status, body: await r.text() }));
  const register = (body: Record<string, unknown>) =>
    fetch(`${server.url}/register`, {
      method: "POST", headers: { "content-type": "application/json", "x-forwarded-for": address() }, body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: await r.json() as Record<string, unknown> }));

  test("1. compressed documents stop at 5 KB decoded: four brotli and gzip bombs of 128 MiB leave peak memory flat", async () => {
    // Warm the fetch path first, so that its first use is not counted as the bomb's.
    expect((await authorizeDocument(`${host.origin}/doc/warm-up`)).status).toBe(200);
    const before = peakMemory(server.child.pid!);
    const answers = await Promise.all(["bomb-br/1", "bomb-br/2", "bomb-gzip/1", "bomb-gzip/2"].map((path) => authorizeDocument(`${host.origin}/${path}`)));
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(answer.body).not.toContain('name="csrf"');
    }
    const grown = peakMemory(server.child.pid!) - before;
    expect(grown, `peak memory grew by ${Math.round(grown / 1048576)} MiB`).toBeLessThan(48 * 1024 * 1024);
    expect((await authorizeDocument(`${host.origin}/doc/after-the-bombs`)).status).toBe(200);
  }, 60_000);

  test("2. open registration: no client_credentials client, and the default scope, not every scope", async () => {
    const machine = await register({ client_name: "Exporter", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic", response_types: [] });
    expect([machine.status, machine.body.error]).toEqual([400, "invalid_client_metadata"]);
    const host = await register({ client_name: "Notes CLI", redirect_uris: ["http://127.0.0.1/callback"], token_endpoint_auth_method: "none" });
    expect([host.status, host.body.scope, host.body.application_type]).toEqual([201, "read", "native"]);
  });

  test("5. what the store file holds forges no session; the key file beside the config is mode 0600", async () => {
    const storeFile = /^store: sqlite:(.+)$/m.exec(server.output())![1]!;
    const keyFile = /^secret: key file (.+?)(?: \(created, mode 0600\))?$/m.exec(server.output())![1]!;
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(storeFile, { readOnly: true });
    const values = new Set<string>();
    for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]) {
      for (const row of db.prepare(`SELECT * FROM "${name}"`).all()) for (const value of Object.values(row)) if (typeof value === "string") values.add(value);
    }
    db.close();
    expect(values.size).toBeGreaterThan(0);
    const opens = async (secret: string) => {
      const browser = new Browser(server.url);
      browser.cookies.set("oauth2_session", await forgedSession(secret, "alice"));
      return (await (await browser.request(authorizePath("web"))).text()).includes('name="decision"');
    };
    // The forgery is made right: with the key file's secret it opens the consent page.
    expect(await opens(readFileSync(keyFile, "utf8").trim())).toBe(true);
    for (const value of values) expect(await opens(value), `a session forged from a stored value opened the consent page`).toBe(false);
  }, 60_000);

  test("6. 100 authorization requests naming 100 documents from one address: at most 20 fetches, then 429", async () => {
    const from = address();
    const before = host.served.get("doc") ?? 0;
    const statuses = await Promise.all(Array.from({ length: 100 }, (_, i) => authorizeDocument(`${host.origin}/doc/flood-${i}`, from).then((a) => a.status)));
    expect(host.served.get("doc")! - before).toBeLessThanOrEqual(20);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(20);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(80);
  }, 60_000);

  test("7. 30 requests naming missing documents: no stack frame in the output, one log line, counted in /metrics", async () => {
    const metric = async () => Number(/oauth2_client_metadata_documents_refused_total\{reason="status"\} (\d+)/.exec(await (await fetch(`${server.url}/metrics`)).text())?.[1] ?? 0);
    const counted = await metric();
    const printed = server.output().length;
    for (let i = 0; i < 30; i++) expect((await authorizeDocument(`${host.origin}/missing/${i}`)).status).toBe(400);
    expect(await metric()).toBe(counted + 30);
    await new Promise((done) => setTimeout(done, 200));
    const output = server.output().slice(printed);
    expect(output).not.toMatch(/^\s+at /m);
    expect(output).not.toMatch(/Error|error at/);
    expect(output.split("\n").filter((line) => line.includes("client.document_refused")).length).toBeLessThanOrEqual(1);
  }, 60_000);

  test("8. look-alikes of a configured client: refused at registration, flagged on a document's consent page", async () => {
    for (const name of ["Holdout Web", "H\u043eldout Web", "HOLDOUT WEB"]) {
      const refused = await register({ client_name: name, redirect_uris: ["https://evil.example/cb"], token_endpoint_auth_method: "none" });
      expect([refused.status, refused.body.error]).toEqual([400, "invalid_client_metadata"]);
    }
    const clientId = `${host.origin}/doc/lookalike?name=${encodeURIComponent("H\u043eldout Web")}`;
    const browser = new Browser(server.url);
    const html = await signIn(browser, documentPath(clientId));
    expect(html).toContain('<span class="tag">unverified</span>');
    expect(html).toContain("This is not <strong>Holdout Web</strong>");
  }, 60_000);

  test("9. names with terminal escapes are refused at registration and in documents", async () => {
    const hostile = "Tool\u001b[2K\u001b[1A\u001b]0;owned\u0007";
    const refused = await register({ client_name: hostile, redirect_uris: ["http://127.0.0.1/callback"], token_endpoint_auth_method: "none" });
    expect([refused.status, refused.body.error]).toEqual([400, "invalid_client_metadata"]);
    expect((await authorizeDocument(`${host.origin}/doc/escape?name=${encodeURIComponent(hostile)}`)).status).toBe(400);
  });

  test("5. a shared store without a configured secret does not start", async () => {
    await expect(startReference(runtime, config(), ["--store", "redis://127.0.0.1:1/"])).rejects.toThrow(/Cannot start on a shared store without a signing secret/);
  }, 60_000);
});

/** The authorization request of a document client, with PKCE. */
function documentPath(clientId: string): string {
  return `/index.php?${new URLSearchParams({
    module: "OAuth2", action: "authorize", response_type: "code", client_id: clientId, redirect_uri: REDIRECT, scope: "read", state: "st",
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", code_challenge_method: "S256",
  })}`;
}

/** A session cookie as the reference server signs one, with `secret` as its signing secret. */
async function forgedSession(secret: string, user: string): Promise<string> {
  const payload = base64url(new TextEncoder().encode(JSON.stringify({ sub: user, exp: Math.floor(Date.now() / 1000) + 3600, sid: "forged" })));
  const key = await hmacKey(sha256(`login-session\u0000${secret}`));
  return `${payload}.${await hmac(key, `oauth2-fetch-server/session:${payload}`)}`;
}
