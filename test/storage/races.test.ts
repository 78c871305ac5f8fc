// Races between separate OS processes, each with its own database connection: N racers redeem one code, rotate
// one refresh token, or swap one setting, at once; on every store, every round, exactly one wins and only the winner's
// tokens are stored. A single JS thread proves nothing about a database; this does. Node only.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createInterface, type Interface } from "node:readline";
import { afterAll, describe, expect, test } from "vitest";
import { type Database, type Skipped, started, startPostgres, startRedis } from "../support/databases.ts";
import { MIGRATIONS } from "../../lib/storage/sql_migrations.ts";
import { type Driver, openStore } from "../support/stores.ts";

const ROUNDS = Number(process.env.RACE_ROUNDS ?? 20);
const RACERS = Number(process.env.RACE_RACERS ?? 8);

const [postgresServer, redisServer]: (Database | Skipped)[] = await Promise.all([startPostgres(), startRedis()]);
const sqliteDir = mkdtempSync(join(tmpdir(), "oauth-sqlite-race-"));
afterAll(async () => {
  for (const server of [postgresServer, redisServer]) if (started(server)) await server.stop();
  rmSync(sqliteDir, { recursive: true, force: true });
}, 30_000);

/** What a racer prints for a code or refresh task. */
interface Raced {
  won: boolean;
  access: string;
  first: boolean;
  sealed?: string;
  successor?: string;
  refresh: string;
}

interface Racer {
  child: ChildProcess;
  lines: AsyncIterator<string>;
}

async function spawnRacer(driver: Driver, target: string, migrate = false): Promise<Racer> {
  const child = spawn(process.execPath, ["--import", "tsx", "test/support/racer.ts", driver, target], {
    stdio: ["pipe", "pipe", "inherit"],
    env: migrate ? { ...process.env, RACER_MIGRATE: "1" } : process.env,
  });
  const reader: Interface = createInterface({ input: child.stdout! });
  const lines = reader[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.value !== "ready") throw new Error(`racer did not start: ${String(first.value)}`);
  return { child, lines };
}

const cases: [Driver, () => string | undefined][] = [
  ["pg", () => (started(postgresServer) ? postgresServer.url : undefined)],
  ["postgres.js", () => (started(postgresServer) ? postgresServer.url : undefined)],
  ["ioredis", () => (started(redisServer) ? redisServer.url : undefined)],
  ["node-redis", () => (started(redisServer) ? redisServer.url : undefined)],
  ["node:sqlite", () => join(sqliteDir, "race.db")],
];

describe.each(cases)("races between %s racer processes", (driver, target) => {
  test.skipIf(target() === undefined)(
    `${ROUNDS} rounds x ${RACERS} processes: one swapSetting wins per value, from a stored value and from none`,
    async () => {
      const { store, close } = await openStore(driver, target()!);
      const racers = await Promise.all(Array.from({ length: RACERS }, () => spawnRacer(driver, target()!)));
      try {
        for (let round = 0; round < ROUNDS; round++) {
          const name = `race-setting-${driver}-${round}-${crypto.randomUUID()}`;
          // Odd rounds race to create the setting (expected null), even rounds to replace a stored value.
          const expected = round % 2 === 0 ? `v0-${crypto.randomUUID()}` : null;
          if (expected !== null) await store.initSetting(name, expected);
          const task = `${JSON.stringify({ round, verb: "setting", hash: name, grant: "", now: Date.now(), expected })}\n`;
          for (const racer of racers) racer.child.stdin!.write(task);
          const results = await Promise.all(racers.map(async (racer) => JSON.parse((await racer.lines.next()).value as string) as { won: boolean; access: string }));
          const winners = results.filter((r) => r.won);
          expect(winners.length, `setting round ${round}: exactly one winner`).toBe(1);
          expect(await store.getSetting(name), `setting round ${round}: the winner's value`).toBe(winners[0]!.access);
        }
      } finally {
        for (const racer of racers) racer.child.stdin!.end();
        await Promise.all(racers.map((r) => new Promise((resolve) => r.child.exitCode !== null ? resolve(null) : r.child.once("exit", resolve))));
        await close();
      }
    },
    120_000,
  );

  test.skipIf(target() === undefined)(
    `${ROUNDS} rounds x ${RACERS} processes: one code redeemed once, one refresh token rotated once; retries inside a grace window all succeed, sharing one successor`,
    async () => {
      const { store, close } = await openStore(driver, target()!);
      const racers = await Promise.all(Array.from({ length: RACERS }, () => spawnRacer(driver, target()!)));
      try {
        for (const verb of ["code", "refresh", "grace"] as const) {
          // A grace window is for retries of one multi-process client: there every racer succeeds.
          for (let round = 0; round < (verb === "grace" ? Math.ceil(ROUNDS / 4) : ROUNDS); round++) {
            const now = Date.now();
            const grant = `race-${driver}-${verb}-${round}-${crypto.randomUUID()}`;
            const hash = `${verb}-${crypto.randomUUID()}`;
            if (verb === "code") {
              await store.saveCode({ hash, grant_id: grant, client_id: "race", user_id: "u", redirect_uri: "https://a.example/cb", scope: "read", expires_at: now + 600_000 });
            } else {
              await store.saveTokens({
                access: { hash: `at-${hash}`, client_id: "race", user_id: "u", scope: "read", grant_id: grant, expires_at: now + 3_600_000 },
                refresh: { hash, client_id: "race", user_id: "u", scope: "read", grant_id: grant, expires_at: now + 7_200_000 },
              }, now);
            }
            const task = `${JSON.stringify({ round, verb, hash, grant, now })}\n`;
            for (const racer of racers) racer.child.stdin!.write(task);
            const results = await Promise.all(racers.map(async (racer) => JSON.parse((await racer.lines.next()).value as string) as Raced));
            const winners = results.filter((r) => r.won);
            if (verb === "grace") {
              expect(winners.length, `grace round ${round}: every retry inside the window succeeds`).toBe(RACERS);
              // ... and they all share one successor: one first rotation, whose seal every retry gets back.
              const firsts = results.filter((r) => r.first);
              expect(firsts.length, `grace round ${round}: one first rotation`).toBe(1);
              expect(results.filter((r) => !r.first).map((r) => r.successor), `grace round ${round}: every retry gets its seal`)
                .toEqual(Array.from({ length: RACERS - 1 }, () => firsts[0]!.sealed));
              const live = await Promise.all(results.map((r) => store.findRefreshToken(r.refresh, now)));
              expect(live.filter((t) => t !== null).map((t) => t!.hash), `grace round ${round}: one live refresh token`).toEqual([firsts[0]!.refresh]);
              continue;
            }
            expect(winners.length, `${verb} round ${round}: exactly one winner`).toBe(1);
            const stored = await Promise.all(results.map((r) => store.findAccessToken(r.access, now)));
            expect(stored.filter((t) => t !== null).map((t) => t!.hash), `${verb} round ${round}: only the winner's token`).toEqual([winners[0]!.access]);
          }
        }
      } finally {
        for (const racer of racers) racer.child.stdin!.end();
        await Promise.all(racers.map((r) => new Promise((resolve) => r.child.exitCode !== null ? resolve(null) : r.child.once("exit", resolve))));
        await close();
      }
    },
    120_000,
  );
});

test(`${RACERS} processes that start at once on one new SQLite file all migrate it, and the schema is recorded once`, async () => {
  const file = join(sqliteDir, "migrate.db");
  const racers = await Promise.all(Array.from({ length: RACERS }, () => spawnRacer("node:sqlite", file, true)));
  for (const racer of racers) racer.child.stdin!.end();
  await Promise.all(racers.map((r) => new Promise((resolve) => r.child.exitCode !== null ? resolve(null) : r.child.once("exit", resolve))));
  expect(racers.map((r) => r.child.exitCode)).toEqual(racers.map(() => 0));
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(file);
  const [recorded] = db.prepare("SELECT count(*) AS n, max(version) AS v FROM oauth_migrations").all() as { n: number; v: number }[];
  expect([recorded!.n, recorded!.v]).toEqual([MIGRATIONS.length, MIGRATIONS.at(-1)!.version]);
  expect(recorded!.v).toBeGreaterThanOrEqual(2);
  db.close();
}, 60_000);
