// The reference server's SQLite file on a thread of its own (lib/cli/sqlite_worker.ts, through the runtime's
// drivers): the storage contract holds through it, a long statement leaves the request thread free, a failed
// statement is one rejected call, and close() ends the thread. Node and Deno (node:sqlite), Bun (bun:sqlite).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { sqlStorage, storageContract } from "../../mod.ts";
import { bunDrivers, nodeDrivers } from "../../lib/cli/drivers.ts";

const drivers = (globalThis as { Bun?: unknown }).Bun ? bunDrivers : nodeDrivers;
const dir = mkdtempSync(join(tmpdir(), "oauth-sqlite-thread-"));
const opened: { close(): Promise<void> }[] = [];
let files = 0;
const open = async () => {
  const executor = await drivers.openSqliteWorker!(join(dir, `store-${++files}.sqlite`));
  opened.push(executor);
  return executor;
};
afterAll(async () => {
  await Promise.all(opened.map((e) => e.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe("storage contract: sqlStorage on a SQLite file served from its own thread", () => {
  for (const check of storageContract(async () => sqlStorage(await open()))) test(check.name, check.run, 20_000);
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
