// The storage contract on SQLite: node:sqlite on Node and Deno, bun:sqlite on Bun, each through its one-line
// adapter from the README. In-memory databases, one per check; the cross-process races are in races.test.ts.
import { describe, expect, test } from "vitest";
import { sqlStorage, storageContract } from "../../mod.ts";
import { MIGRATIONS, SCHEMA_VERSION } from "../../lib/storage/sql_migrations.ts";
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

test("a version-3 database upgrades past 4: its rows stay, new tokens keep jkt, and a half-applied upgrade is finished", async () => {
  const executor = openSqlite(":memory:");
  // The schema as version 3 left it, with a token stored then.
  await executor.query("CREATE TABLE oauth_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)", []);
  for (const migration of MIGRATIONS.filter((m) => m.version <= 3)) {
    for (const statement of migration.sqlite) await executor.query(statement, []);
    await executor.query("INSERT INTO oauth_migrations (version, applied_at) VALUES (?1, 1)", [migration.version]);
  }
  await executor.query("INSERT INTO oauth_access_tokens (hash, client_id, scope, expires_at) VALUES ('old', 'c', 'read', 9000000000000)", []);
  const store = sqlStorage(executor);
  expect(await store.migrate()).toBe(SCHEMA_VERSION);
  expect(await store.findAccessToken("old", 1)).toEqual({ hash: "old", client_id: "c", scope: "read", expires_at: 9000000000000 });
  const access = { hash: "new", client_id: "c", scope: "read", expires_at: 9000000000000, grant_id: "g", jkt: "k" };
  await store.saveTokens({ access, refresh: { ...access, hash: "new-rt", grant_id: "g" } }, 1);
  expect(await store.findAccessToken("new", 1)).toEqual(access);
  // An instance that stopped after adding some of 4's columns (so before the later ones): they run again over them.
  await executor.query("DELETE FROM oauth_migrations WHERE version >= 4", []);
  expect(await sqlStorage(executor).migrate()).toBe(SCHEMA_VERSION);
  expect((await store.findRefreshToken("new-rt", 1))?.jkt).toBe("k");
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

test("a database at schema 3 with a rotation in flight upgrades, and its tokens rotate with seals afterwards", async () => {
  const executor = openSqlite(":memory:");
  await executor.query("CREATE TABLE oauth_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)", []);
  for (const migration of MIGRATIONS.filter((m) => m.version <= 3)) {
    for (const statement of migration.sqlite) await executor.query(statement, []);
    await executor.query("INSERT INTO oauth_migrations (version, applied_at) VALUES (?1, 1)", [migration.version]);
  }
  const old = sqlStorage(executor);
  const now = Date.now();
  const pair = (n: string) => ({
    access: { hash: `up-at-${n}`, client_id: "c", scope: "read", grant_id: "up", expires_at: now + 60_000 },
    refresh: { hash: `up-rt-${n}`, client_id: "c", scope: "read", grant_id: "up", expires_at: now + 120_000 },
  });
  await old.saveTokens(pair("1"), now);
  // Rotated under schema 3 (through its trigger, which knows no seal), then upgraded.
  await executor.query(`INSERT INTO oauth_rotate (old, grace, now, g_expires, a_hash, a_client, a_scope, a_grant, a_expires,
    r_hash, r_grant, r_client, r_scope, r_expires) VALUES ('up-rt-1', NULL, ?1, ?2, 'up-at-2', 'c', 'read', 'up', ?2, 'up-rt-2', 'up', 'c', 'read', ?3)`,
    [now, now + 60_000, now + 120_000]);
  expect(await sqlStorage(executor).migrate()).toBe(MIGRATIONS.at(-1)!.version);
  const store = sqlStorage(executor);
  expect(await store.rotateRefreshToken("up-rt-1", pair("x"), now + 1, 10_000), "no seal was kept: no retry").toBeNull();
  expect(await store.rotateRefreshToken("up-rt-2", { ...pair("3"), sealed: "seal-3" }, now + 2, 10_000)).not.toBeNull();
  expect((await store.rotateRefreshToken("up-rt-2", pair("4"), now + 3, 10_000))?.successor).toBe("seal-3");
  expect(await store.findRefreshToken("up-rt-4", now + 3)).toBeNull();
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
