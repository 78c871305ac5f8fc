// DPoP on every store (memory, SQLite, PostgreSQL through pg and postgres.js, Redis through ioredis and node-redis):
// markOnce as the store of proof jtis (one winner among concurrent marks of one proof, the mark held until the
// proof is too old, a jti per key), one proof sent to server instances in separate processes on one store getting
// one token, the binding fields of the records (jkt on access and refresh tokens, dpop_jkt on codes) kept by all,
// and end to end through a server on each store: a bound opaque token refused as Bearer, bound codes and refresh tokens.
// Node only: it starts PostgreSQL and Redis, and racer processes.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, test } from "vitest";
import { createAuthorizationServer, memoryStorage, type Storage } from "../../mod.ts";
import { PROOF_MAX_AGE, replayExpiry, replayKey, type VerifiedProof } from "../../lib/features/dpop_proof.ts";
import { type Database, type Skipped, started, startPostgres, startRedis } from "../support/databases.ts";
import { DPOP_RACE } from "../support/dpop_race.ts";
import { type Driver, openStore } from "../support/stores.ts";
import { ath, proof, type ProofKey, proofKey } from "../dpop_helpers.ts";
import { pkce } from "../helpers.ts";
import { approve } from "../mcp_helpers.ts";

const RACERS = Number(process.env.RACE_RACERS ?? 4);
const ROUNDS = Number(process.env.RACE_ROUNDS ?? 5);

const [postgresServer, redisServer]: (Database | Skipped)[] = await Promise.all([startPostgres(), startRedis()]);
const sqliteDir = mkdtempSync(join(tmpdir(), "oauth-dpop-"));
afterAll(async () => {
  for (const server of [postgresServer, redisServer]) if (started(server)) await server.stop();
  rmSync(sqliteDir, { recursive: true, force: true });
}, 30_000);

type Target = Driver | "memory";
const TARGETS: [Target, () => string | undefined][] = [
  ["memory", () => "memory"],
  ["node:sqlite", () => join(sqliteDir, "dpop.db")],
  ["pg", () => (started(postgresServer) ? postgresServer.url : undefined)],
  ["postgres.js", () => (started(postgresServer) ? postgresServer.url : undefined)],
  ["ioredis", () => (started(redisServer) ? redisServer.url : undefined)],
  ["node-redis", () => (started(redisServer) ? redisServer.url : undefined)],
];

async function open(target: Target, where: string, connections = 20): Promise<{ store: Storage; close(): Promise<void> }> {
  if (target === "memory") return { store: memoryStorage(), close: async () => {} };
  return openStore(target, where, connections);
}

const id = (what: string) => `${what}-${crypto.randomUUID()}`;
const REDIRECT = "https://app.example/cb";
const API = "https://auth.example.com/api/export";
const verified = (jkt: string, jti: string, iat: number): VerifiedProof => ({ jkt, jti, iat, nonce: undefined });

describe.each(TARGETS)("DPoP on %s", (target, where) => {
  const skip = where() === undefined;

  test.skipIf(skip)("markOnce as the proof jti store: one winner among 20 marks of one proof, held until the proof is too old, one jti per key", async () => {
    const { store, close } = await open(target, where()!);
    try {
      const now = Date.now();
      const iat = Math.floor(now / 1000);
      const proofOf = verified(id("jkt"), id("jti"), iat);
      const key = replayKey(proofOf);
      expect(key).toMatch(/^dpop:[\w-]{43}$/);
      const results = await Promise.all(Array.from({ length: 20 }, () => store.markOnce(key, replayExpiry(proofOf), now)));
      expect(results.filter(Boolean)).toHaveLength(1);
      // Held until the proof itself would be refused as too old.
      const expiry = replayExpiry(proofOf);
      expect(expiry).toBeGreaterThan((iat + PROOF_MAX_AGE) * 1000);
      expect(await store.isMarked(key, expiry - 1)).toBe(true);
      expect(await store.markOnce(key, expiry + 60_000, expiry - 1)).toBe(false);
      expect(await store.isMarked(key, expiry)).toBe(false);
      // The same jti under another key is another proof.
      const other = replayKey(verified(id("jkt"), proofOf.jti, iat));
      expect(other).not.toBe(key);
      expect(await store.markOnce(other, expiry, now)).toBe(true);
    } finally {
      await close();
    }
  }, 20_000);

  test.skipIf(skip)(`one proof sent to ${RACERS} server instances at once, ${ROUNDS} rounds: one token each round`, async () => {
    const { store, close } = await open(target, where()!);
    const setup = createAuthorizationServer({ ...DPOP_RACE.options, storage: store });
    await setup.clients.register({ ...DPOP_RACE.client, name: "DPoP racer", type: "confidential", scopes: ["export"], grant_types: ["client_credentials"] });
    // In separate processes where the store is shared between processes; the memory store lives in this one.
    const racers = target === "memory" ? inProcess(store) : await Promise.all(Array.from({ length: RACERS }, () => spawnRacer(target, where()!)));
    try {
      const key = await proofKey();
      for (let round = 0; round < ROUNDS; round++) {
        const one = await proof(key, { htu: DPOP_RACE.htu });
        const statuses = await Promise.all(racers.map((racer) => racer.send(round, one)));
        expect([round, statuses.filter((s) => s === 200).length, statuses.filter((s) => s === 400).length]).toEqual([round, 1, racers.length - 1]);
      }
    } finally {
      await Promise.all(racers.map((racer) => racer.stop()));
      await close();
    }
  }, 120_000);

  test.skipIf(skip)("end to end: a bound opaque token passes server.protect only with its proof; a code bound with dpop_jkt and the refresh token it gives refuse another key", async () => {
    const { store, close } = await open(target, where()!);
    try {
      const user = id("user");
      const server = createAuthorizationServer({ ...DPOP_RACE.options, storage: store, authenticateUser: () => ({ id: user }) });
      const [backend, app] = [id("backend"), id("app")];
      await server.clients.register({ ...DPOP_RACE.client, client_id: backend, name: "Backend", type: "confidential", scopes: ["export"], grant_types: ["client_credentials"] });
      await server.clients.register({ client_id: app, name: "App", type: "public", redirect_uris: [REDIRECT], scopes: ["export"] });
      const [key, thief] = [await proofKey(), await proofKey()];
      const token = async (fields: Record<string, string>, signer: ProofKey) => {
        const response = await server.fetch(new Request(DPOP_RACE.htu, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", dpop: await proof(signer, { htu: DPOP_RACE.htu }) },
          body: new URLSearchParams(fields).toString(),
        }));
        return { status: response.status, body: (await response.json()) as Record<string, string> };
      };
      // The opaque token's binding lives in the store alone: a store that lost jkt would let it pass as Bearer.
      const issued = await token({ grant_type: "client_credentials", client_id: backend, client_secret: DPOP_RACE.client.client_secret, scope: "export" }, key);
      expect([issued.status, issued.body.token_type]).toEqual([200, "DPoP"]);
      const at = issued.body.access_token!;
      const api = server.protect("export", () => new Response("ok"));
      const call = async (authorization: string, signer?: ProofKey) =>
        (await api(new Request(API, { headers: { authorization, ...(signer ? { dpop: await proof(signer, { htu: API, htm: "GET", ath: await ath(at) }) } : {}) } }))).status;
      expect([await call(`Bearer ${at}`), await call(`DPoP ${at}`, thief), await call(`DPoP ${at}`, key)]).toEqual([401, 401, 200]);
      // dpop_jkt binds the code (RFC 9449 §10); the public client's refresh token is bound to the key (§5).
      const code = async () => {
        const { verifier, challenge } = await pkce();
        const answer = await approve(server, {
          response_type: "code", client_id: app, redirect_uri: REDIRECT, scope: "export", state: "s", code_challenge: challenge, code_challenge_method: "S256", dpop_jkt: key.jkt,
        });
        const location = answer.headers.get("location");
        if (location === null) throw new Error(`no code: ${answer.status} ${await answer.text()}`);
        return { grant_type: "authorization_code", client_id: app, redirect_uri: REDIRECT, code_verifier: verifier, code: new URL(location).searchParams.get("code")! };
      };
      expect((await token(await code(), thief)).body.error).toBe("invalid_grant");
      const redeemed = await token(await code(), key);
      expect([redeemed.status, redeemed.body.token_type]).toEqual([200, "DPoP"]);
      const refresh = { grant_type: "refresh_token", client_id: app, refresh_token: redeemed.body.refresh_token! };
      expect((await token(refresh, thief)).body.error).toBe("invalid_grant");
      const rotated = await token(refresh, key);
      expect(rotated.status).toBe(200);
      expect((await token({ ...refresh, refresh_token: rotated.body.refresh_token! }, thief)).body.error).toBe("invalid_grant");
    } finally {
      await close();
    }
  }, 30_000);

  test.skipIf(skip)("the binding fields are kept: jkt on access and refresh tokens (saved, redeemed, rotated), dpop_jkt on codes", async () => {
    const { store, close } = await open(target, where()!);
    try {
      const now = Date.now();
      const jkt = id("jkt").replace(/-/g, "").slice(0, 43);
      const grant = id("grant");
      const issued = (g: string) => ({
        access: { hash: id("at"), client_id: "c", user_id: "u", scope: "read", grant_id: g, expires_at: now + 3_600_000, jkt },
        refresh: { hash: id("rt"), grant_id: g, client_id: "c", user_id: "u", scope: "read", expires_at: now + 7_200_000, jkt },
      });
      const saved = issued(grant);
      await store.saveTokens(saved, now);
      const code = { hash: id("code"), grant_id: id("grant"), client_id: "c", user_id: "u", redirect_uri: "https://a.example/cb", scope: "read", expires_at: now + 60_000, dpop_jkt: jkt };
      await store.saveCode(code);
      const redeemed = issued(code.grant_id);
      await store.redeemCode(code.hash, redeemed, now);
      const rotated = issued(grant);
      await store.rotateRefreshToken(saved.refresh.hash, rotated, now);
      const seen: Record<string, unknown> = {
        "access.jkt": (await store.findAccessToken(saved.access.hash, now))?.jkt,
        "refresh.jkt": (await store.findRefreshToken(saved.refresh.hash, now))?.jkt,
        "redeemed.jkt": (await store.findAccessToken(redeemed.access.hash, now))?.jkt,
        "rotated.jkt": (await store.findRefreshToken(rotated.refresh.hash, now))?.jkt,
        "code.dpop_jkt": (await store.findCode(code.hash, now))?.dpop_jkt,
      };
      // A store that loses jkt would let a bound opaque token pass as Bearer at server.protect.
      for (const [field, value] of Object.entries(seen)) expect(value, `${target} must keep ${field}`).toBe(jkt);
    } finally {
      await close();
    }
  }, 20_000);
});

interface Racer {
  send(round: number, proof: string): Promise<number>;
  stop(): Promise<void>;
}

/** Server instances in this process, on one store. */
function inProcess(store: Storage): Racer[] {
  return Array.from({ length: RACERS }, () => {
    const server = createAuthorizationServer({ ...DPOP_RACE.options, storage: store });
    return {
      send: async (_round, dpop) => {
        const response = await server.fetch(DPOP_RACE.request(dpop));
        await response.body?.cancel();
        return response.status;
      },
      stop: async () => {},
    };
  });
}

async function spawnRacer(driver: Driver, target: string): Promise<Racer> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "test/support/dpop_racer.ts", driver, target], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.value !== "ready") throw new Error(`racer did not start: ${String(first.value)}`);
  return {
    async send(round, dpop) {
      child.stdin!.write(`${JSON.stringify({ round, proof: dpop })}\n`);
      return (JSON.parse((await lines.next()).value as string) as { status: number }).status;
    },
    stop: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.stdin!.end();
    }),
  };
}
