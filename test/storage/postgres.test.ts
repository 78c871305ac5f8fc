// The storage contract on a real PostgreSQL server (started by test/support/databases.ts), through pg (named
// statements) and through postgres.js (prepared), each with the README's one-line adapter and a pool, so that every racer of the
// concurrency checks holds its own connection. Node only; skipped with a reason when PostgreSQL is missing
// (never under CI).
import process from "node:process";
import pg from "pg";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type IssuedTokens, sqlStorage, storageContract } from "../../mod.ts";
import { MIGRATIONS } from "../../lib/storage/sql_migrations.ts";
import { type Database, type Skipped, started, startPostgres } from "../support/databases.ts";
import { checkAgainstModel } from "../support/model.ts";
import { pair, sealsFollowTheChain } from "../support/seals.ts";
import { steadyLoad } from "../support/steady.ts";

const server: Database | Skipped = await startPostgres();
const url = started(server) ? server.url : "";
afterAll(async () => {
  if (started(server)) await server.stop();
}, 30_000);

describe.skipIf(!started(server))("storage contract: sqlStorage on PostgreSQL through pg", () => {
  let pool: pg.Pool;
  beforeAll(() => {
    pool = new pg.Pool({ connectionString: url, max: 50 }); // one connection per racer of the contract
  });
  afterAll(() => pool.end());
  const store = () => sqlStorage({ dialect: "postgres", query: (t, p, n) => pool.query({ text: t, values: p, name: n }).then((r) => r.rows) });
  for (const check of storageContract(store)) test(check.name, check.run, 20_000);

  test("a rotation drops the sealed successor its predecessor kept for the grace window", async () => {
    await sealsFollowTheChain(store(), async (hash) =>
      (await pool.query("SELECT successor FROM oauth_refresh_tokens WHERE hash = $1", [hash])).rows[0]?.successor ?? null);
  });

  test("without a grace window a rotation writes no new version of its predecessor's row", async () => {
    // Nothing to drop: an UPDATE that sets a NULL seal to NULL would still write a row version (and its WAL).
    const s = store();
    const now = Date.now();
    const id = `noseal-${now}-${Math.random().toString(36).slice(2)}`;
    const [first, second, third] = ["1", "2", "3"].map((n) => pair(`${id}-${n}`, `g-${id}`, now)) as [IssuedTokens, IssuedTokens, IssuedTokens];
    const version = async (hash: string) => (await pool.query("SELECT xmin::text AS v FROM oauth_refresh_tokens WHERE hash = $1", [hash])).rows[0]?.v;
    await s.saveTokens(first, now);
    expect(await s.rotateRefreshToken(first.refresh!.hash, second, now)).not.toBeNull();
    const before = await version(first.refresh!.hash);
    expect(await s.rotateRefreshToken(second.refresh!.hash, third, now + 1)).not.toBeNull();
    expect(before).toBeDefined();
    expect(await version(first.refresh!.hash), "the predecessor's row is untouched").toBe(before);
  });

  test("each statement is prepared once per connection, under a name of its own", async () => {
    const single = new pg.Pool({ connectionString: url, max: 1 });
    try {
      const one = sqlStorage({ dialect: "postgres", query: (t, p, n) => single.query({ text: t, values: p, name: n }).then((r) => r.rows) });
      const now = Date.now();
      for (let i = 0; i < 5; i++) {
        await one.saveTokens({ access: { hash: `prep-${i}-${now}`, client_id: "c", scope: "read", expires_at: now + 60_000 } }, now);
        await one.findAccessToken(`prep-${i}-${now}`, now);
      }
      const { rows } = await single.query("SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'oauth_%'");
      // The two verbs' statements (and the client touch), each prepared once however often it ran.
      expect(rows.length).toBeGreaterThanOrEqual(2);
      expect(new Set(rows.map((r) => r.statement)).size).toBe(rows.length);
      expect(rows.every((r) => /^oauth_[A-Za-z0-9_-]{16}$/.test(r.name))).toBe(true);
      expect(rows.some((r) => /FROM oauth_access_tokens/.test(r.statement))).toBe(true);
    } finally {
      await single.end();
    }
  });

  test("two instances migrating at once both succeed, and the schema is recorded once", async () => {
    const fresh = `oauth_migrate_${Date.now()}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${fresh}`);
    await admin.end();
    const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: url.replace(/\/postgres$/, `/${fresh}`), max: 1 }));
    try {
      const versions = await Promise.all(
        pools.map((p) => sqlStorage({ dialect: "postgres", query: (t, q) => p.query(t, q).then((r) => r.rows) }).migrate()),
      );
      expect(new Set(versions).size).toBe(1);
      const { rows } = await pools[0]!.query("SELECT count(*)::int AS n FROM oauth_migrations");
      expect(rows[0].n).toBe(MIGRATIONS.length);
      expect(versions[0]).toBe(MIGRATIONS.at(-1)!.version);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  }, 30_000);

  test("random sequences of verbs answer as the memory store does (model-based, 25 runs)", async () => {
    await checkAgainstModel((clock) => sqlStorage({ dialect: "postgres", clock, query: (t, p, n) => pool.query({ text: t, values: p, name: n }).then((r) => r.rows) }), Number(process.env.MODEL_RUNS_DB ?? 25));
  }, 120_000);

  test("storage stays bounded under steady load: purgeExpired removes what expired", async () => {
    let now = 1_900_000_000_000; // after every other test's records (2030), which this purge also removes
    const tables = ["oauth_codes", "oauth_access_tokens", "oauth_refresh_tokens", "oauth_grants", "oauth_once"];
    const { counts, issued } = await steadyLoad(store(), {
      cycles: 12, perCycle: 25, lifetime: 2500,
      advance: async () => (now += 1000),
      count: async () => {
        const { rows } = await pool.query(`SELECT ${tables.map((t) => `(SELECT count(*) FROM ${t})`).join(" + ")} AS n`);
        return Number(rows[0].n);
      },
    });
    expect(Math.max(...counts.slice(4))).toBeLessThanOrEqual(3 * 25 * 6);
    expect(counts.at(-1)).toBeLessThan(issued / 3);
  }, 60_000);

});

describe.skipIf(!started(server))("storage contract: sqlStorage on PostgreSQL through postgres.js", () => {
  let sql: postgres.Sql;
  beforeAll(() => {
    sql = postgres(url, { max: 50, onnotice: () => {} });
  });
  afterAll(() => sql.end({ timeout: 5 }));
  const store = () => sqlStorage({ dialect: "postgres", query: (t, p) => sql.unsafe(t, p as postgres.ParameterOrJSON<never>[], { prepare: true }) });
  for (const check of storageContract(store)) test(check.name, check.run, 20_000);
});
