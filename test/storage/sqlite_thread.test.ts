// The reference server's SQLite file on a thread of its own (lib/cli/sqlite_worker.ts, through the runtime's
// drivers): the storage contract holds through it, a long statement leaves the request thread free, a SELECT runs on
// the request thread beside it (or on the thread when it cannot run here), a failed statement
// is one rejected call, the statements of one turn of the event loop cross in one message, close() answers what was
// sent before it and ends the thread, and the checkpointer thread brings the WAL into the file and keeps it bounded.
// Node and Deno (node:sqlite), Bun (bun:sqlite).
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setImmediate } from "node:timers";
import { afterAll, describe, expect, test } from "vitest";
import { sqlStorage, storageContract } from "../../mod.ts";
import { bunDrivers, nodeDrivers } from "../../lib/cli/drivers.ts";
import { CHECKPOINT_INTERVAL_MS, SAFETY_PAGES } from "../../lib/cli/sqlite_checkpointer.ts";
import { sqliteWorker } from "../../lib/cli/sqlite_worker.ts";

const drivers = (globalThis as { Bun?: unknown }).Bun ? bunDrivers : nodeDrivers;
const dir = mkdtempSync(join(tmpdir(), "oauth-sqlite-thread-"));
const opened: { close(): Promise<void> }[] = [];
let files = 0;
const open = async (path = join(dir, `store-${++files}.sqlite`)) => {
  const executor = await drivers.openSqliteWorker!(path);
  opened.push(executor);
  return executor;
};
const size = (path: string) => (existsSync(path) ? statSync(path).size : 0);
const until = async (done: () => boolean, ms: number) => {
  for (const end = Date.now() + ms; !done() && Date.now() < end;) await new Promise((resolve) => setTimeout(resolve, 10));
};
/** `commits` single-row INSERTs of `bytes` each, 32 in flight, as requests send them; calls `sample` meanwhile. */
const write = async (executor: { query(t: string, p: unknown[]): unknown }, commits: number, bytes: number, sample = () => {}) => {
  await executor.query("CREATE TABLE IF NOT EXISTS filler (id INTEGER PRIMARY KEY, body BLOB)", []);
  let next = 0;
  const timer = setInterval(sample, 5);
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < commits) {
      next++;
      await executor.query("INSERT INTO filler (body) VALUES (randomblob(?1))", [bytes]);
    }
  }));
  clearInterval(timer);
};
afterAll(async () => {
  await Promise.all(opened.map((e) => e.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe("storage contract: sqlStorage on a SQLite file served from its own thread", () => {
  for (const check of storageContract(async () => sqlStorage(await open()))) test(check.name, check.run, 20_000);
});

test("the reference server's new file has 2,048-byte pages, and its reader on the request thread reads them", async () => {
  const path = join(dir, `store-${++files}.sqlite`);
  const executor = await open(path);
  await sqlStorage(executor).migrate();
  expect(await executor.query("PRAGMA page_size", [])).toEqual([{ page_size: 2048 }]);
  await executor.query("INSERT INTO oauth_settings (name, value) VALUES (?1, ?2)", ["k", "v"]);
  expect(await executor.query("SELECT value FROM oauth_settings WHERE name = ?1", ["k"])).toEqual([{ value: "v" }]);
});

test("a long statement runs beside the request thread, which keeps answering meanwhile", async () => {
  const executor = await open();
  let ticks = 0;
  const timer = setInterval(() => ticks++, 5);
  const started = performance.now();
  // A recursive count that keeps SQLite busy for a while.
  const [row] = await executor.query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) AS n FROM c", []);
  const took = performance.now() - started;
  clearInterval(timer);
  expect(Number(row!.n)).toBe(3_000_000);
  // On the request thread no timer could have fired until the statement ended.
  expect(took).toBeGreaterThan(50);
  expect(ticks).toBeGreaterThanOrEqual(Math.floor(took / 5 / 4));
});

test("a SELECT runs on the request thread: it answers while the thread is busy with a long statement", async () => {
  const executor = await open();
  await executor.query("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT)", []);
  await executor.query("INSERT INTO rows (id, body) VALUES (1, 'one')", []);
  const order: string[] = [];
  const long = Promise.resolve(executor.query(
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) AS n FROM c", [],
  )).then(() => order.push("long"));
  // Sent after the long statement, in the same turn: sent to the thread, it would wait behind it.
  const read = Promise.resolve(executor.query("SELECT body FROM rows WHERE id = ?1", [1])).then((rows) => order.push(`read ${rows[0]!.body}`));
  await Promise.all([long, read]);
  expect(order).toEqual(["read one", "long"]);
});

test("a read the request thread cannot answer goes to the thread, after the statements sent before it", async () => {
  const executor = await open();
  // In one turn, unawaited: the table does not exist yet when the SELECT is tried here, so the thread answers it.
  const [, , rows] = await Promise.all([
    executor.query("CREATE TABLE later (x INTEGER)", []),
    executor.query("INSERT INTO later (x) VALUES (7)", []),
    executor.query("SELECT x FROM later", []),
  ]);
  expect(rows).toEqual([{ x: 7 }]);
  // A write's answer comes after its commit, so an awaited write is read at once.
  await executor.query("INSERT INTO later (x) VALUES (8)", []);
  expect(await executor.query("SELECT x FROM later ORDER BY x", [])).toEqual([{ x: 7 }, { x: 8 }]);
});

test("a reading connection that cannot be set up leaves every statement to the thread", async () => {
  const path = join(dir, `store-${++files}.sqlite`);
  const reader = await drivers.openSqlite(path);
  reader.close(); // its PRAGMAs then fail
  const bun = (globalThis as { Bun?: unknown }).Bun !== undefined;
  const executor = await sqliteWorker(path, bun ? "bun:sqlite" : "node:sqlite", bun ? "Database" : "DatabaseSync", reader);
  opened.push(executor);
  await executor.query("CREATE TABLE rows (id INTEGER PRIMARY KEY)", []);
  await executor.query("INSERT INTO rows (id) VALUES (1)", []);
  expect(await executor.query("SELECT id FROM rows", [])).toEqual([{ id: 1 }]);
  await executor.close();
});

test("a failing statement rejects that call only; the thread goes on; after close() calls reject", async () => {
  const executor = await open();
  // Settled by hand: Bun's expect(...).rejects waits forever on a promise a worker thread settles.
  const outcome = (promise: unknown) => Promise.resolve(promise).then(() => "resolved", (error: Error) => error.message);
  expect(await outcome(executor.query("SELECT * FROM no_such_table", []))).toMatch(/no such table/);
  expect(await executor.query("SELECT 1 + 1 AS two", [])).toEqual([{ two: 2 }]);
  // The same failing text again, and a statement sent before it in the same batch, each get their own answer.
  const [ok, failed] = await Promise.allSettled([executor.query("SELECT 3 AS three", []), executor.query("SELECT * FROM no_such_table", [])]);
  expect(ok).toMatchObject({ status: "fulfilled", value: [{ three: 3 }] });
  expect(failed).toMatchObject({ status: "rejected" });
  await executor.close();
  expect(await outcome(executor.query("SELECT 1", []))).toMatch(/stopped/);
});

test("statements sent from separate callbacks of one turn of the event loop cross to the thread in one message", async () => {
  const executor = await open();
  await executor.query("SELECT 1", []);
  // Counted at the runtime's Worker: a server handles each request in a callback of its own, as these run (the
  // callbacks of one phase of the loop; timers of one delay may straddle a millisecond, and so two turns).
  const { Worker } = await import("node:worker_threads");
  const post = Worker.prototype.postMessage;
  let batches = 0;
  Worker.prototype.postMessage = function (this: InstanceType<typeof Worker>, message: unknown, ...rest: unknown[]) {
    if (Array.isArray(message)) batches++;
    return (post as (...args: unknown[]) => void).call(this, message, ...rest);
  };
  try {
    const sent = await new Promise<Promise<readonly Record<string, unknown>[]>[]>((resolve) => {
      const calls: Promise<readonly Record<string, unknown>[]>[] = [];
      // Not a plain SELECT, which the request thread reads itself.
      for (let i = 0; i < 20; i++) setImmediate(() => void calls.push(Promise.resolve(executor.query("WITH v(n) AS (VALUES (?1)) SELECT n FROM v", [i]))));
      setImmediate(() => resolve(calls));
    });
    const rows = await Promise.all(sent);
    expect(rows.map((r) => Number(r[0]!.n))).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(batches).toBe(1);
  } finally {
    Worker.prototype.postMessage = post;
  }
});

test("the writes of one batch share one commit; a write that fails undoes only itself", async () => {
  const path = join(dir, `store-${++files}.sqlite`);
  const executor = await open(path);
  await executor.query("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT)", []);
  // 20 INSERTs from callbacks of one turn, the 11th a duplicate key. One commit per statement writes the table's
  // page to the WAL 20 times (a frame of 24 + 4096 bytes each); one commit per batch, once.
  const sent = await new Promise<Promise<PromiseSettledResult<unknown>>[]>((resolve) => {
    const calls: Promise<PromiseSettledResult<unknown>>[] = [];
    for (let i = 0; i < 20; i++) {
      setImmediate(() => {
        const call = Promise.resolve(executor.query("INSERT INTO rows (id, body) VALUES (?1, ?2)", [i === 10 ? 1 : i, `row ${i}`]));
        calls.push(call.then((value) => ({ status: "fulfilled", value }), (reason) => ({ status: "rejected", reason })));
      });
    }
    setImmediate(() => resolve(calls));
  });
  const outcomes = await Promise.all(sent);
  expect(outcomes.map((o) => o.status)).toEqual(Array.from({ length: 20 }, (_, i) => (i === 10 ? "rejected" : "fulfilled")));
  expect(String((outcomes[10] as PromiseRejectedResult).reason)).toMatch(/UNIQUE constraint failed/);
  // What the others wrote was committed, and the failed statement left nothing behind.
  const [row] = await executor.query("SELECT count(*) AS n, max(body) AS last FROM rows", []);
  expect(row).toEqual({ n: 19, last: "row 9" });
  expect(size(`${path}-wal`)).toBeLessThan(10 * 4120);
});

test("when SQLite rolls a batch's transaction back (a full disk), the writes it undid fail too: every answer matches the file", async () => {
  const executor = await open();
  await executor.query("CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB)", []);
  const [{ page_count: pages }] = await executor.query("PRAGMA page_count", []) as [{ page_count: number }];
  // A full disk after a few pages: SQLite then rolls back the whole transaction, not only the failing statement.
  await executor.query(`PRAGMA max_page_count = ${Number(pages) + 6}`, []);
  const sent = await new Promise<Promise<PromiseSettledResult<unknown>>[]>((resolve) => {
    const calls: Promise<PromiseSettledResult<unknown>>[] = [];
    for (let i = 0; i < 10; i++) {
      setImmediate(() => {
        const call = Promise.resolve(executor.query("INSERT INTO rows (id, body) VALUES (?1, randomblob(3000))", [i]));
        calls.push(call.then((value) => ({ status: "fulfilled", value }), (reason) => ({ status: "rejected", reason })));
      });
    }
    setImmediate(() => resolve(calls));
  });
  const outcomes = await Promise.all(sent);
  const stored = (await executor.query("SELECT id FROM rows ORDER BY id", [])).map((row) => Number(row.id));
  const answered = outcomes.flatMap((o, i) => (o.status === "fulfilled" ? [i] : []));
  expect(stored).toEqual(answered);
  expect(outcomes.some((o) => o.status === "rejected" && /rolled back with its batch/.test(String(o.reason)))).toBe(true);
  expect(outcomes.some((o) => o.status === "rejected" && /full/.test(String(o.reason)))).toBe(true);
});

test("two connections that redeem the same codes, each in one batch of writes: every code has one winner", async () => {
  const path = join(dir, `store-${++files}.sqlite`);
  const [a, b] = [sqlStorage(await open(path)), sqlStorage(await open(path))];
  const now = Date.now();
  const codes = Array.from({ length: 24 }, (_, i) => `code-${i}`);
  for (const hash of codes) {
    await a.saveCode({ hash, grant_id: `grant-${hash}`, client_id: "c", user_id: "u", redirect_uri: "https://a.example/cb", scope: "read", expires_at: now + 60_000 });
  }
  const tokens = (side: string, hash: string) => ({ access: { hash: `${side}-${hash}`, client_id: "c", user_id: "u", scope: "read", expires_at: now + 60_000, grant_id: `grant-${hash}` } });
  // Every call of a side is made in one callback, so each side's 24 redemptions cross as one batch, one transaction.
  const [wonA, wonB] = await Promise.all(["a", "b"].map((side) => {
    const store = side === "a" ? a : b;
    return Promise.all(codes.map((hash) => store.redeemCode(hash, tokens(side, hash), now)));
  }));
  for (let i = 0; i < codes.length; i++) expect([wonA![i], wonB![i]].filter((won) => won !== null)).toHaveLength(1);
  // The loser stored nothing: exactly one access token per code, the winner's.
  for (let i = 0; i < codes.length; i++) {
    const winner = wonA![i] !== null ? "a" : "b";
    expect(await a.findAccessToken(`${winner}-${codes[i]}`, now)).not.toBeNull();
    expect(await a.findAccessToken(`${winner === "a" ? "b" : "a"}-${codes[i]}`, now)).toBeNull();
  }
});

test("close() answers the statements sent in the same turn before it stops the thread", async () => {
  const executor = await open();
  await executor.query("SELECT 1", []);
  const last = Promise.resolve(executor.query("WITH v(five) AS (VALUES (5)) SELECT five FROM v", []));
  await executor.close();
  expect(await last).toEqual([{ five: 5 }]);
});

test("the checkpointer thread copies the WAL into the database file, which the serving connection alone would not yet do", async () => {
  const path = join(dir, "checkpointed.sqlite");
  const executor = await open(path);
  // About 2,000 pages: well below the serving connection's own checkpoint (SAFETY_PAGES), so only the checkpointer
  // can bring them into the database file.
  await write(executor, 2000, 3000);
  await until(() => size(path) > 2000 * 3000, 20 * CHECKPOINT_INTERVAL_MS);
  expect(size(path)).toBeGreaterThan(2000 * 3000);
  const [row] = await executor.query("SELECT count(*) AS n FROM filler", []);
  expect(Number(row!.n)).toBe(2000);
  // close() ends both threads with a last checkpoint: the WAL is empty, and the data is in the file.
  await executor.close();
  expect(size(`${path}-wal`)).toBe(0);
  const again = await open(path);
  expect(await again.query("SELECT count(*) AS n FROM filler", [])).toEqual([{ n: 2000 }]);
}, 60_000);

test("under sustained writes (some 80,000 WAL frames' worth) the WAL stays bounded", async () => {
  const path = join(dir, "sustained.sqlite");
  const executor = await open(path);
  let wal = 0;
  // About 40,000 commits of two pages or more each: without a checkpoint, a WAL of 80,000 frames and more. With
  // one, it grows past the serving connection's bound only while a checkpointer pass holds the checkpoint lock.
  await write(executor, 40_000, 1500, () => (wal = Math.max(wal, size(`${path}-wal`))));
  const [{ page_size: page }] = await executor.query("PRAGMA page_size", []) as [{ page_size: number }];
  const frames = wal / (page + 24);
  expect(frames).toBeGreaterThan(0);
  expect(frames).toBeLessThan(3 * SAFETY_PAGES);
}, 120_000);
