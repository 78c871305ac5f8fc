// Device authorizations (RFC 8628) raced between separate OS processes, each with its own connection (the racer
// of races.test.ts): per round, N processes decide one pending authorization, poll one at the same instant, or
// redeem one approved authorization; on PostgreSQL, Redis and SQLite exactly one decides, exactly one poll is in
// time (the others get slow_down), and exactly one redeems, with only its token stored. Node only.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, test } from "vitest";
import { sha256 } from "../../lib/sha256.ts";
import { type Database, type Skipped, started, startPostgres, startRedis } from "../support/databases.ts";
import { type Driver, openStore } from "../support/stores.ts";

const ROUNDS = Number(process.env.RACE_ROUNDS ?? 8);
const RACERS = Number(process.env.RACE_RACERS ?? 4);

const [postgresServer, redisServer]: (Database | Skipped)[] = await Promise.all([startPostgres(), startRedis()]);
const sqliteDir = mkdtempSync(join(tmpdir(), "oauth-device-race-"));
afterAll(async () => {
  for (const server of [postgresServer, redisServer]) if (started(server)) await server.stop();
  rmSync(sqliteDir, { recursive: true, force: true });
}, 30_000);

interface Racer {
  child: ChildProcess;
  lines: AsyncIterator<string>;
}

async function spawnRacer(driver: Driver, target: string): Promise<Racer> {
  const child = spawn(process.execPath, ["--import", "tsx", "test/support/racer.ts", driver, target], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.value !== "ready") throw new Error(`racer did not start: ${String(first.value)}`);
  return { child, lines };
}

const cases: [Driver, () => string | undefined][] = [
  ["pg", () => (started(postgresServer) ? postgresServer.url : undefined)],
  ["ioredis", () => (started(redisServer) ? redisServer.url : undefined)],
  ["node:sqlite", () => join(sqliteDir, "device-race.db")],
];

describe.each(cases)("device authorizations raced by %s processes", (driver, target) => {
  test.skipIf(target() === undefined)(`${ROUNDS} rounds x ${RACERS} processes: one decision, one poll in time, one redemption`, async () => {
    const { store, close } = await openStore(driver, target()!);
    const racers = await Promise.all(Array.from({ length: RACERS }, () => spawnRacer(driver, target()!)));
    const race = async (verb: string, round: number, hash: string, grant: string, now: number) => {
      for (const racer of racers) racer.child.stdin!.write(`${JSON.stringify({ round, verb, hash, grant, now })}\n`);
      return Promise.all(racers.map(async (racer) => JSON.parse((await racer.lines.next()).value as string) as { won: boolean; access: string }));
    };
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const now = Date.now();
        const hash = `device-${crypto.randomUUID()}`;
        const userCode = sha256(`code-${crypto.randomUUID()}`);
        const grant = `race-device-${driver}-${round}-${crypto.randomUUID()}`;
        expect(await store.saveDeviceAuthorization({
          hash, user_code_hash: userCode, client_id: "race", scope: "read", grant_id: grant, created_at: now,
          codes_expire_at: now + 600_000, expires_at: now + 1_200_000, interval: 5000, status: "pending",
        }, now)).toBe(true);
        await store.pollDeviceAuthorization(hash, now);

        const decided = (await race("device-decide", round, userCode, grant, now)).filter((r) => r.won);
        expect(decided.length, `decide round ${round}: exactly one decision`).toBe(1);
        expect((await store.findDeviceAuthorization(userCode, now))?.user_id).toBe(decided[0]!.access);

        const inTime = (await race("device-poll", round, hash, grant, now + 5000)).filter((r) => r.won);
        expect(inTime.length, `poll round ${round}: exactly one poll in time`).toBe(1);
        expect((await store.findDeviceAuthorization(userCode, now))?.interval).toBe(5000 + 5000 * (RACERS - 1));

        const results = await race("device-redeem", round, hash, grant, now + 10_000);
        const winners = results.filter((r) => r.won);
        expect(winners.length, `redeem round ${round}: exactly one redemption`).toBe(1);
        const stored = await Promise.all(results.map((r) => store.findAccessToken(r.access, now)));
        expect(stored.filter((t) => t !== null).map((t) => t!.hash), `redeem round ${round}: only the winner's token`).toEqual([winners[0]!.access]);
      }
    } finally {
      for (const racer of racers) racer.child.stdin!.end();
      await Promise.all(racers.map((r) => new Promise((resolve) => r.child.exitCode !== null ? resolve(null) : r.child.once("exit", resolve))));
      await close();
    }
  }, 120_000);
});
