// The storage contract on SQLite: node:sqlite on Node and Deno, bun:sqlite on Bun, each through its one-line
// adapter from the README. In-memory databases, one per check; the cross-process races are in races.test.ts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

test("a new file gets 2,048-byte pages; a file written with other pages keeps them, and the store works on it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "oauth-sqlite-pages-"));
  try {
    const fresh = openSqlite(join(dir, "new.sqlite"));
    await sqlStorage(fresh).migrate();
    expect(await fresh.query("PRAGMA page_size", [])).toEqual([{ page_size: 2048 }]);
    expect(await fresh.query("PRAGMA journal_mode", [])).toEqual([{ journal_mode: "wal" }]);
    // A file an older version made with SQLite's default pages: the setup leaves it as it is.
    const old = join(dir, "old.sqlite");
    const made = openSqlite.raw(old);
    made.exec("PRAGMA page_size = 4096; CREATE TABLE kept (x)");
    const executor = openSqlite(old);
    expect(await executor.query("PRAGMA page_size", [])).toEqual([{ page_size: 4096 }]);
    const store = sqlStorage(executor);
    await store.migrate();
    const access = { hash: "h", client_id: "c", scope: "read", expires_at: 9000000000000 };
    await store.saveTokens({ access }, 1);
    expect(await store.findAccessToken("h", 1)).toEqual(access);
    for (const db of [fresh.db, made, executor.db]) db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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

test("an exchange is one statement, for the winner and for every loser; a loser, or a revoked grant, gets null and nothing stored", async () => {
  const executor = openSqlite(":memory:");
  const statements: string[] = [];
  const store = sqlStorage({ dialect: "sqlite", query: (text, params) => (statements.push(text), executor.query(text, params)) });
  const now = Date.now();
  const expires = now + 60_000;
  const tokens = (n: string, grant = "g") => ({
    access: { hash: `a-${n}`, client_id: "c", user_id: "u", scope: "read", grant_id: grant, expires_at: expires },
    refresh: { hash: `r-${n}`, grant_id: grant, client_id: "c", user_id: "u", scope: "read", expires_at: expires },
  });
  const code = (hash: string, grant = "g") =>
    ({ hash, grant_id: grant, client_id: "c", user_id: "u", redirect_uri: "https://c.example/cb", scope: "read", expires_at: expires });
  // The client's last_used_at is written at most once a minute: let the first exchange write it.
  await store.saveCode(code("k0"));
  expect(await store.redeemCode("k0", tokens("0"), now)).not.toBeNull();
  const counted = async <T>(call: () => Promise<T>): Promise<[T, number]> => {
    statements.length = 0;
    const result = await call();
    return [result, statements.length];
  };
  await store.saveCode(code("k1"));
  expect(await counted(() => store.redeemCode("k1", tokens("1"), now))).toEqual([expect.objectContaining({ hash: "k1" }), 1]);
  expect(await counted(() => store.redeemCode("k1", tokens("1b"), now))).toEqual([null, 1]);
  expect(await counted(() => store.rotateRefreshToken("r-1", tokens("2"), now))).toEqual([expect.objectContaining({ hash: "r-1" }), 1]);
  expect(await counted(() => store.rotateRefreshToken("r-1", tokens("2b"), now))).toEqual([null, 1]);
  await store.saveDeviceAuthorization({
    hash: "dev", user_code_hash: "uc", client_id: "c", scope: "read", grant_id: "gd", created_at: now,
    codes_expire_at: expires, expires_at: expires, interval: 5000, status: "pending",
  }, now);
  await store.decideDeviceAuthorization("uc", { approved: true, user_id: "u" }, now);
  expect(await counted(() => store.redeemDeviceAuthorization("dev", tokens("d", "gd"), now)))
    .toEqual([expect.objectContaining({ hash: "dev", status: "approved" }), 1]);
  expect(await counted(() => store.redeemDeviceAuthorization("dev", tokens("d2", "gd"), now))).toEqual([null, 1]);
  for (const hash of ["a-1b", "r-1b", "a-2b", "r-2b", "a-d2", "r-d2"]) {
    expect((await executor.query("SELECT 1 FROM oauth_access_tokens WHERE hash = ?1 UNION ALL SELECT 1 FROM oauth_refresh_tokens WHERE hash = ?1", [hash])), hash).toHaveLength(0);
  }
  // A code whose grant was revoked (a racing revocation left it behind): null, and no token of it is stored.
  await store.saveCode(code("k3", "gr"));
  await executor.query("INSERT INTO oauth_grants (grant_id, expires_at, revoked_at) VALUES ('gr', ?1, ?2)", [expires, now]);
  expect(await counted(() => store.redeemCode("k3", tokens("3", "gr"), now))).toEqual([null, 1]);
  expect(await executor.query("SELECT hash FROM oauth_access_tokens WHERE grant_id = 'gr' UNION ALL SELECT hash FROM oauth_refresh_tokens WHERE grant_id = 'gr'", [])).toEqual([]);
  for (const carrier of ["oauth_redeem", "oauth_rotate", "oauth_device_redeem"]) {
    expect(await executor.query(`SELECT count(*) AS n FROM ${carrier}`, [])).toEqual([{ n: 0 }]);
  }
});

test("a rolling upgrade: code that inserts into the carrier and reads back who won stays correct on the newest schema", async () => {
  const executor = openSqlite(":memory:");
  const store = sqlStorage(executor);
  await store.migrate();
  const now = Date.now();
  const expires = now + 60_000;
  await store.saveCode({ hash: "k", grant_id: "g", client_id: "c", user_id: "u", redirect_uri: "https://c.example/cb", scope: "read", expires_at: expires });
  // What the code before one-statement exchanges sent: the carrier row, then whether its access token was stored.
  const redeem = async (access: string) => {
    await executor.query(`INSERT INTO oauth_redeem (code, now, g_expires, a_hash, a_client, a_user, a_scope, a_grant, a_expires,
      r_hash, r_grant, r_client, r_user, r_scope, r_expires) VALUES ('k', ?1, ?2, ?3, 'c', 'u', 'read', 'g', ?2, ?4, 'g', 'c', 'u', 'read', ?2)`,
      [now, expires, access, `r-${access}`]);
    const [row] = await executor.query(`SELECT redeemed_at, EXISTS (SELECT 1 FROM oauth_access_tokens WHERE hash = ?1) AS stored
      FROM oauth_codes WHERE hash = 'k'`, [access]);
    return { redeemed: row!.redeemed_at, stored: Number(row!.stored) };
  };
  expect(await redeem("first")).toEqual({ redeemed: now, stored: 1 });
  expect(await redeem("second")).toEqual({ redeemed: now, stored: 0 });
  expect(await store.findRefreshToken("r-second", now)).toBeNull();
  expect(await store.findRefreshToken("r-first", now)).not.toBeNull();
});
