// The storage contract on SQLite: node:sqlite on Node and Deno, bun:sqlite on Bun, each through its one-line
// adapter from the README. In-memory databases, one per check; the cross-process races are in races.test.ts.
import { describe, expect, test } from "vitest";
import { sqlStorage, storageContract } from "../../mod.ts";
import { MIGRATIONS } from "../../lib/storage/sql_migrations.ts";
import { openSqlite } from "../support/sqlite.ts";
import { sealsFollowTheChain } from "../support/seals.ts";
import { steadyLoad } from "../support/steady.ts";

describe(`storage contract: sqlStorage on SQLite (${openSqlite.driver})`, () => {
  for (const check of storageContract(() => sqlStorage(openSqlite(":memory:")))) test(check.name, check.run);
});

test("migrate() is idempotent and reports the schema version", async () => {
  const executor = openSqlite(":memory:");
  const store = sqlStorage(executor);
  const version = await store.migrate();
  expect(version).toBeGreaterThanOrEqual(1);
  expect(await sqlStorage(executor).migrate()).toBe(version);
  const rows = await executor.query("SELECT version FROM oauth_migrations", []);
  expect(rows.map((r) => Number(r.version)).sort((x, y) => x - y)).toEqual(MIGRATIONS.map((m) => m.version));
});

test("only hashes reach the database: a stored client carries its secret hash, never a secret", async () => {
  const executor = openSqlite(":memory:");
  const store = sqlStorage(executor);
  await store.saveClient({
    client_id: "c", name: "C", type: "confidential", secret_hash: "aGFzaA", redirect_uris: [], scopes: ["read"],
    grant_types: ["client_credentials"], client_credentials_refresh_token: false, active: true, created_at: 1,
    metadata: { client_uri: "https://c.example" },
  });
  const [row] = await executor.query("SELECT record FROM oauth_clients", []);
  expect(JSON.parse(String(row!.record))).toMatchObject({ secret_hash: "aGFzaA", metadata: { client_uri: "https://c.example" } });
  expect(await store.getClient("c")).toMatchObject({ client_id: "c", active: true, metadata: { client_uri: "https://c.example" } });
});

test("a rotation drops the sealed successor its predecessor kept for the grace window", async () => {
  const executor = openSqlite(":memory:");
  await sealsFollowTheChain(sqlStorage(executor), async (hash) =>
    ((await executor.query("SELECT successor FROM oauth_refresh_tokens WHERE hash = ?1", [hash]))[0]?.successor ?? null) as string | null);
});

test("a database error is a 503 temporarily_unavailable, not a crash", async () => {
  const store = sqlStorage({ dialect: "sqlite", query: () => { throw new Error("disk I/O error"); } });
  await expect(store.findAccessToken("x", 1)).rejects.toMatchObject({ code: "temporarily_unavailable", status: 503 });
});

test("storage stays bounded under steady load: purgeExpired removes what expired", async () => {
  const executor = openSqlite(":memory:");
  const store = sqlStorage(executor);
  let now = Date.now();
  const tables = ["oauth_codes", "oauth_access_tokens", "oauth_refresh_tokens", "oauth_grants", "oauth_once"];
  const { counts, issued } = await steadyLoad(store, {
    cycles: 30, perCycle: 40, lifetime: 2500,
    advance: async () => (now += 1000),
    count: async () => {
      let rows = 0;
      for (const table of tables) rows += Number((await executor.query(`SELECT count(*) AS n FROM ${table}`, []))[0]!.n);
      return rows;
    },
  });
  // Records live 2.5 cycles, so about three cycles' worth are held at any time, whatever the total issued.
  expect(Math.max(...counts.slice(5))).toBeLessThanOrEqual(3 * 40 * 6);
  expect(counts.at(-1)).toBeLessThan(issued / 8);
});

test("a code redemption and a refresh rotation each write in one statement (one commit); so does an access token alone", async () => {
  const executor = openSqlite(":memory:");
  const writes: string[] = [];
  const store = sqlStorage({
    dialect: "sqlite",
    query: (text, params) => {
      if (!/^\s*SELECT/i.test(text)) writes.push(text);
      return executor.query(text, params);
    },
  });
  const now = Date.now();
  const expires = now + 60_000;
  const tokens = (n: number) => ({
    access: { hash: `a${n}`, client_id: "c", user_id: "u", scope: "read", grant_id: "g", expires_at: expires },
    refresh: { hash: `r${n}`, grant_id: "g", client_id: "c", user_id: "u", scope: "read", expires_at: expires },
  });
  const code = (hash: string) => ({ hash, grant_id: "g", client_id: "c", user_id: "u", redirect_uri: "https://c.example/cb", scope: "read", expires_at: expires });
  // The first use of a client also writes its last_used_at (at most once a minute): let that happen first.
  await store.saveCode(code("k0"));
  expect(await store.redeemCode("k0", tokens(0), now)).not.toBeNull();
  await store.saveCode(code("k1"));
  writes.length = 0;
  expect(await store.redeemCode("k1", tokens(1), now)).not.toBeNull();
  expect(writes).toHaveLength(1);
  writes.length = 0;
  expect(await store.rotateRefreshToken("r1", tokens(2), now)).not.toBeNull();
  expect(writes).toHaveLength(1);
  writes.length = 0;
  await store.saveTokens({ access: { hash: "a3", client_id: "c", scope: "read", expires_at: expires } }, now);
  expect(writes).toHaveLength(1);
  expect(await store.findAccessToken("a2", now)).not.toBeNull();
  expect(await store.findAccessToken("a3", now)).not.toBeNull();
});
