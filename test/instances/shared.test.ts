// Two reference-server processes on one PostgreSQL, and again on one Redis, started as `npm start` starts them
// with `--store URL`: what one instance issues, the other honours; races between them have one winner; a
// sign-in started at one finishes at the other, also after the first was killed; and a stopped database gives
// 503 temporarily_unavailable, never a 500 or an unsaved token, and service resumes by itself.
// Real servers on random loopback ports (test/support/databases.ts); skipped with a reason where not installed.
import { readFileSync } from "node:fs";
import { createServer, type Socket, connect } from "node:net";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { type Database, type Skipped, started, startPostgres, startRedis } from "../support/databases.ts";
import {
  apiStatus, Browser, csrfOf, decide, killInstances, REDIRECT, spaCode, startInstance, token, writeConfig, type Instance,
} from "./support.ts";

const WORKER_SECRET = "worker-secret-0123456789abcdef";
/** The usual users and scopes, a public SPA, and a client whose client_credentials tokens come with a refresh token. */
function configFile(): string {
  return writeConfig({
    // Instances on one shared store sign sessions with one configured secret (the server refuses to start without).
    secret: "shared-session-secret-0123456789abcdef",
    clients: [
      { client_id: "spa", name: "SPA", redirect_uris: [REDIRECT], scopes: ["read"], grant_types: ["authorization_code", "refresh_token"] },
      {
        client_id: "worker", client_secret: WORKER_SECRET, name: "Worker", redirect_uris: [], scopes: ["export"],
        grant_types: ["client_credentials", "refresh_token"], client_credentials_refresh_token: true,
      },
    ],
  });
}

const servers: (Database | Skipped)[] = await Promise.all([startPostgres(), startRedis()]);
afterEach(killInstances);
afterAll(async () => {
  for (const server of servers) if (started(server)) await server.stop();
}, 60_000);

const ROUNDS = 20;

/**
 * A TCP proxy to the database on a random loopback port that can freeze: it then holds every byte, as a
 * database that hangs (a lock, a full disk, a stalled network) would. Connections stay open.
 */
async function freezingProxy(port: number): Promise<{ url(base: string): string; freeze(): void; thaw(): void; close(): void }> {
  let frozen = false;
  const held: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const relay = (from: Socket, to: Socket) =>
    from.on("data", (chunk) => {
      if (frozen) held.push(() => to.write(chunk));
      else to.write(chunk);
    });
  const server = createServer((client) => {
    const upstream = connect(port, "127.0.0.1");
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => (client.destroy(), upstream.destroy(), sockets.delete(socket)));
    }
    relay(client, upstream);
    relay(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const own = (server.address() as { port: number }).port;
  return {
    url: (base) => base.replace(`:${port}`, `:${own}`),
    freeze: () => (frozen = true),
    thaw: () => {
      frozen = false;
      for (const write of held.splice(0)) write();
    },
    close: () => {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

const exchange = (base: string, code: string, verifier: string) =>
  token(base, { grant_type: "authorization_code", client_id: "spa", code, code_verifier: verifier, redirect_uri: REDIRECT });

for (const [name, server] of [["PostgreSQL", servers[0]], ["Redis", servers[1]]] as const) {
  describe.skipIf(!started(server))(`two instances on one ${name}`, () => {
    const db = server as Database;
    const pair = async (): Promise<[Instance, Instance]> => {
      const file = configFile();
      const a = await startInstance(file, ["--store", db.url]);
      const b = await startInstance(file, ["--store", db.url]);
      return [a, b];
    };

    test("a code issued at A is redeemed at B, and the tokens work at both", async () => {
      const [a, b] = await pair();
      const { code, verifier } = await spaCode(a.url);
      const issued = await exchange(b.url, code, verifier);
      expect(issued.status).toBe(200);
      expect(await apiStatus(a.url, issued.body.access_token as string)).toBe(200);
      const refreshed = await token(a.url, { grant_type: "refresh_token", client_id: "spa", refresh_token: issued.body.refresh_token as string });
      expect(refreshed.status).toBe(200);
    }, 60_000);

    test("what A issued and B spent or revoked is judged at A by the store: a replay, a reuse, a revoked token", async () => {
      // A keeps copies of its codes and refresh tokens (issuedRecords) and skips the read when they come back to it;
      // only the store's atomic step decides, so what B did meanwhile is what A answers by.
      const [a, b] = await pair();
      const { code, verifier } = await spaCode(a.url);
      const issued = await exchange(b.url, code, verifier);
      expect(issued.status).toBe(200);
      const replay = await exchange(a.url, code, verifier);
      expect([replay.status, replay.body.error_description]).toEqual([400, "The authorization code was already used"]);
      expect(await apiStatus(a.url, issued.body.access_token as string)).toBe(401);

      const cc = { grant_type: "client_credentials", client_id: "worker", client_secret: WORKER_SECRET, scope: "export" };
      const refresh = (base: string, refreshToken: unknown) =>
        token(base, { grant_type: "refresh_token", client_id: "worker", client_secret: WORKER_SECRET, refresh_token: refreshToken as string });
      const first = await token(a.url, cc);
      const rotated = await refresh(b.url, first.body.refresh_token);
      expect(rotated.status).toBe(200);
      const reuse = await refresh(a.url, first.body.refresh_token);
      expect([reuse.status, reuse.body.error_description]).toEqual([400, "The refresh token was already used"]);
      expect((await refresh(b.url, rotated.body.refresh_token)).status).toBe(400);

      const second = await token(a.url, cc);
      const body = new URLSearchParams({ token: second.body.refresh_token as string, client_id: "worker", client_secret: WORKER_SECRET });
      const metadata = (await (await fetch(`${b.url}/.well-known/oauth-authorization-server`)).json()) as { revocation_endpoint: string };
      const revoked = await fetch(metadata.revocation_endpoint.replace(a.url, b.url), { method: "POST", body });
      await revoked.arrayBuffer();
      expect(revoked.status).toBe(200);
      const late = await refresh(a.url, second.body.refresh_token);
      expect([late.status, late.body.error_description]).toEqual([400, "The refresh token is invalid, expired or revoked"]);
    }, 60_000);

    test("a token revoked at A is refused at A at once and at B within token_cache_ms; with 0, at B at once too", async () => {
      const revokeAt = async (base: string, accessToken: string) => {
        const metadata = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as { revocation_endpoint: string };
        const body = new URLSearchParams({ token: accessToken, client_id: "worker", client_secret: WORKER_SECRET });
        const response = await fetch(metadata.revocation_endpoint, { method: "POST", body });
        await response.arrayBuffer();
        expect(response.status).toBe(200);
      };
      const cc = { grant_type: "client_credentials", client_id: "worker", client_secret: WORKER_SECRET, scope: "export" };
      // The default bound (1 s): B keeps serving the record it read until the bound has passed, never longer.
      const [a, b] = await pair();
      const issued = (await token(a.url, cc)).body.access_token as string;
      expect(await apiStatus(b.url, issued)).toBe(200);
      await revokeAt(a.url, issued);
      const revokedAt = Date.now();
      expect(await apiStatus(a.url, issued)).toBe(401);
      let refusedAfter = Number.POSITIVE_INFINITY;
      while (Date.now() - revokedAt < 3000) {
        if (await apiStatus(b.url, issued) === 401) {
          refusedAfter = Date.now() - revokedAt;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(refusedAfter).toBeLessThanOrEqual(1000 + 250);
      await killInstances();
      // token_cache_ms 0: every check reads the store.
      const file = writeConfig({ ...JSON.parse(readFileSync(configFile(), "utf8")), token_cache_ms: 0 });
      const c = await startInstance(file, ["--store", db.url]);
      const d = await startInstance(file, ["--store", db.url]);
      const second = (await token(c.url, cc)).body.access_token as string;
      expect(await apiStatus(d.url, second)).toBe(200);
      await revokeAt(c.url, second);
      expect(await apiStatus(d.url, second)).toBe(401);
    }, 60_000);

    test(`one code sent to A and B at once: one 200, one invalid_grant, and the winner's tokens revoked, ${ROUNDS} rounds`, async () => {
      const [a, b] = await pair();
      for (let round = 0; round < ROUNDS; round++) {
        const { code, verifier } = await spaCode(a.url);
        // Warm connections to both, so that the two requests leave together and both may reach the atomic step.
        await Promise.all([a.url, b.url].map((url) => fetch(url).then((r) => r.arrayBuffer())));
        const results = await Promise.all([exchange(a.url, code, verifier), exchange(b.url, code, verifier)]);
        const statuses = results.map((r) => r.status).sort();
        expect(statuses).toEqual([200, 400]);
        const winner = results.find((r) => r.status === 200)!;
        const loser = results.find((r) => r.status === 400)!;
        expect(loser.body.error).toBe("invalid_grant");
        // RFC 6749 §4.1.2: a code used twice revokes what it issued, on either instance.
        expect(await apiStatus(a.url, winner.body.access_token as string)).toBe(401);
        expect(await apiStatus(b.url, winner.body.access_token as string)).toBe(401);
      }
    }, 120_000);

    test(`one refresh token rotated at A and B at once: exactly one winner, ${ROUNDS} rounds`, async () => {
      const [a, b] = await pair();
      for (let round = 0; round < ROUNDS; round++) {
        const first = await token(a.url, { grant_type: "client_credentials", client_id: "worker", client_secret: WORKER_SECRET, scope: "export" });
        expect(first.status).toBe(200);
        await Promise.all([a.url, b.url].map((url) => fetch(url).then((r) => r.arrayBuffer())));
        const refresh = { grant_type: "refresh_token", client_id: "worker", client_secret: WORKER_SECRET, refresh_token: first.body.refresh_token as string };
        const results = await Promise.all([token(a.url, refresh), token(b.url, refresh)]);
        expect(results.map((r) => r.status).sort(), `round ${round}`).toEqual([200, 400]);
      }
    }, 120_000);

    test("a sign-in started at A finishes at B, also when A was killed mid-flow", async () => {
      const [a, b] = await pair();
      const path = `/index.php?${new URLSearchParams({
        module: "OAuth2", action: "authorize", response_type: "code", client_id: "spa", redirect_uri: REDIRECT, scope: "read",
        state: "st", code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", code_challenge_method: "S256",
      })}`;
      const browser = new Browser(a.url);
      // The login form comes from A; it is posted to B with A's CSRF token.
      const form = csrfOf(await (await browser.request(path)).text());
      browser.base = b.url;
      const login = await browser.request(path, { form: { csrf: form, username: "alice", password: "correct horse battery staple" } });
      expect(login.status).toBe(303);
      await login.arrayBuffer();
      // The consent page comes from A; A dies; B takes the decision and redeems the code.
      browser.base = a.url;
      const consent = csrfOf(await (await browser.request(path)).text());
      await a.kill();
      browser.base = b.url;
      const decided = await decide(browser, path, consent);
      expect(decided.status).toBe(303);
      const code = new URL(decided.headers.get("location")!).searchParams.get("code")!;
      const issued = await token(b.url, {
        grant_type: "authorization_code", client_id: "spa", code, redirect_uri: REDIRECT,
        code_verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
      });
      expect(issued.status).toBe(200);
    }, 60_000);

    test(`${name} stopped: 503 temporarily_unavailable within the storage deadline, no token handed out, and service resumes by itself`, async () => {
      const [a] = await pair();
      const request = { grant_type: "client_credentials", client_id: "worker", client_secret: WORKER_SECRET, scope: "export" };
      expect((await token(a.url, request)).status).toBe(200);
      await db.pause();
      try {
        for (let i = 0; i < 3; i++) {
          const begun = Date.now();
          const response = await fetch(`${a.url}/index.php?module=OAuth2&action=token`, { method: "POST", body: new URLSearchParams(request) });
          const body = await response.json() as Record<string, unknown>;
          expect(response.status).toBe(503);
          expect(body.error).toBe("temporarily_unavailable");
          expect(body.access_token).toBeUndefined();
          // The default storage deadline is 5 s; a refused connection fails sooner.
          expect(Date.now() - begun).toBeLessThan(6000);
        }
        expect(await apiStatus(a.url, "any-token")).toBe(503);
      } finally {
        await db.resume();
      }
      // PostgreSQL kept everything: tokens are issued again. The test Redis runs without persistence (a durable
      // Redis needs AOF) and lost the clients, so there the sign of recovery is an answer from the store.
      const durable = name === "PostgreSQL";
      const recovered = async (): Promise<boolean> =>
        durable ? (await token(a.url, request)).status === 200 : (await apiStatus(a.url, "unknown-token")) === 401;
      let ok = false;
      for (let i = 0; i < 100 && !ok; i++) {
        ok = await recovered();
        if (!ok) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(ok).toBe(true);
      expect(a.output()).not.toMatch(/internal error/);
    }, 120_000);

    test(`${name} frozen: 503 temporarily_unavailable after the storage deadline, and service resumes when it answers again`, async () => {
      const proxy = await freezingProxy(db.port);
      try {
        const a = await startInstance(configFile(), ["--store", proxy.url(db.url)]);
        const request = { grant_type: "client_credentials", client_id: "worker", client_secret: WORKER_SECRET, scope: "export" };
        expect((await token(a.url, request)).status).toBe(200);
        proxy.freeze();
        const begun = Date.now();
        const response = await fetch(`${a.url}/index.php?module=OAuth2&action=token`, { method: "POST", body: new URLSearchParams(request) });
        const body = await response.json() as Record<string, unknown>;
        expect(response.status).toBe(503);
        expect(body).toMatchObject({ error: "temporarily_unavailable" });
        expect(body.access_token).toBeUndefined();
        // The default storage deadline: 5 s, not the minutes a TCP timeout takes.
        expect(Date.now() - begun).toBeGreaterThanOrEqual(4500);
        expect(Date.now() - begun).toBeLessThan(7000);
        proxy.thaw();
        let status = 0;
        for (let i = 0; i < 50 && status !== 200; i++) {
          status = (await token(a.url, request)).status;
          if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
        }
        expect(status).toBe(200);
        expect(a.output()).not.toMatch(/internal error/);
      } finally {
        proxy.close();
      }
    }, 60_000);
  });
}
