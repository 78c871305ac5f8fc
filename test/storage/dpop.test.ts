// DPoP on every store (memory, SQLite, PostgreSQL through pg and postgres.js, Redis through ioredis and node-redis):
// markOnce as the store of proof jtis (one winner among concurrent marks of one proof, the mark held until the
// proof is too old, a jti per key), one proof sent to server instances in separate processes on one store getting
// one token, and the binding fields of the records (jkt on access and refresh tokens, dpop_jkt on codes) kept by all.
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
import { proof, proofKey } from "../dpop_helpers.ts";

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
