/**
 * A SQLite executor whose connection lives on a worker thread, so that the database's work (statements, commits,
 * checkpoints and their fsyncs) runs beside the request thread instead of on it. node:sqlite and bun:sqlite are
 * synchronous: on the request thread every statement, and every stall of the disk under it, stops every other
 * request. On its own thread SQLite works as a database server does, on the machine's other core.
 *
 * Statements go over in batches (every statement queued in one turn of the event loop, in one message) and run
 * in order, one at a time, each prepared once; each verb that decides a race is one statement, so atomicity is
 * the same as on the request thread. Rows come back in one message per batch. A batch is sent from `setImmediate`,
 * once the loop has run the callbacks of every socket that was ready: a server handles each request in a callback
 * of its own, so a flush from a microtask (the end of that callback) would send one message per statement, and a
 * message to the thread and its answer cost the two threads some 60 µs of CPU (node:sqlite, 2 cores). Under the
 * bench's load a batch holds about 11 statements, and a Bearer check that reads the file costs 105 µs of server
 * CPU instead of 156 to 180 (lib/storage/README.md, "One message per turn").
 *
 * A batch with two writes or more runs in one transaction (`BEGIN IMMEDIATE` … `COMMIT`), so its writes share one
 * commit: in WAL mode every commit writes each page it changed once more, and the pages that statements next to
 * each other change (the last page of a table, of an expiry index) are then written once per batch. Each statement
 * still answers for itself: one that fails undoes only its own changes, as SQLite does inside a transaction. An
 * error that makes SQLite roll the whole transaction back (I/O, a full disk) fails the batch's earlier writes too,
 * and the rest runs one commit each. A caller gets its rows only after the commit, as before, and two processes
 * still race through the file's write lock, now held for a batch rather than a statement. On the store alone
 * (32 calls in flight, old and new thread in alternating trials) a rotation went from 4,974 to 7,707 per second,
 * a code redemption from 5,207 to 7,148 (lib/storage/README.md, "One message per turn").
 *
 * Reads of a file run on the request thread, through a second connection that only reads (`query_only`). In WAL
 * mode a reader takes no lock that a writer holds and never syncs the disk, so a point read costs the request
 * thread a few µs, where a trip to the thread and back costs the two threads tens of µs of CPU. A read whose
 * snapshot is busy (`busy_timeout = 0`: the file is not in WAL, or another connection is recovering it) or that
 * fails for any reason is sent to the thread, which answers it with the writes' ordering. A caller that awaited
 * a write reads it: the write's answer comes after its commit. A read also no longer waits behind a batch of
 * writes. Over HTTP, a Bearer check that reads the file went from 0.655 to 0.735 of the memory store (medians of
 * 4 alternating pairs of runs; lib/storage/README.md, "Reads on the request thread").
 *
 * A file (not `:memory:`) gets a second thread, the checkpointer (`sqlite_checkpointer.ts`): the serving connection
 * then never checkpoints in normal operation, and so never syncs the disk on a statement's way.
 *
 * @module
 */
import { setImmediate } from "node:timers";
import { Worker } from "node:worker_threads";
import type { SqlExecutor, SqlRow } from "../storage/sql.ts";
import { SQLITE_SETUP, type SqliteConnection, type SqliteStatement } from "../storage/sqlite.ts";
import { type Checkpointer, SAFETY_PAGES, startCheckpointer } from "./sqlite_checkpointer.ts";

/** The executor, and how to stop its threads (after the statements already sent; the checkpointer last). */
export interface SqliteWorkerExecutor extends SqlExecutor {
  close(): Promise<void>;
}

/**
 * Whether `path` names a file on disk that another connection opens as the same database: not `:memory:` and not a
 * `file:` URI. Only such a file is created private, checkpointed by a second thread and read on the request thread.
 */
export function isPlainFile(path: string): boolean {
  return path !== ":memory:" && !path.startsWith("file:");
}

/** A statement that only reads: it may run on the reading connection, and inside a batch's transaction. */
const READ = /^\s*SELECT\b/i;

/** The thread: one connection, its statements prepared once by text (or by the number the text was given). */
const THREAD = (module: string, open: string) => `
const { workerData, parentPort } = require("node:worker_threads");
process.emitWarning = () => {};
const texts = [];
const statements = [];
// Statements that may write, and those that only read; a batch with any other statement commits each on its own.
const WRITE = /^\\s*(INSERT|UPDATE|DELETE|REPLACE|WITH)\\b/i;
const READ = ${READ};
function serve(db) {
  const begin = db.prepare("BEGIN IMMEDIATE");
  const commit = db.prepare("COMMIT");
  const active = () => (db.isTransaction ?? db.inTransaction) !== false;
  /** Opens one transaction for a batch of two writes or more, so that they share one commit (see the module). */
  const group = (batch) => {
    let writes = 0;
    for (const [, key] of batch) {
      if (WRITE.test(texts[key])) writes++;
      else if (!READ.test(texts[key])) return false;
    }
    if (writes < 2) return false;
    try {
      begin.run();
      return true;
    } catch {
      return false; // busy past the timeout: each statement then tries on its own, as without a batch
    }
  };
  /** Turns the answers before index to into errors: their statements were rolled back with the batch. */
  const undo = (out, to, error) => {
    const message = "rolled back with its batch: " + String(error && error.message || error);
    for (let i = 0; i < to; i++) if (out[i][2] === undefined) out[i] = [out[i][0], null, message];
  };
  parentPort.on("message", (batch) => {
    if (batch === "close") {
      db.close();
      parentPort.postMessage({ closed: true });
      return;
    }
    for (const [, key, text] of batch) if (text !== null) texts[key] = text;
    let grouped = batch.length > 1 && group(batch);
    const out = [];
    for (const [id, key, , params] of batch) {
      try {
        let statement = statements[key];
        if (statement === undefined) statement = statements[key] = db.prepare(texts[key]);
        out.push([id, statement.all(...params)]);
      } catch (error) {
        out.push([id, null, String(error && error.message || error)]);
        // A failed statement undoes only itself, unless SQLite rolled the whole transaction back (I/O error, full
        // disk): then the batch's earlier statements are undone too, and the rest run one commit each.
        if (grouped && !active()) {
          undo(out, out.length - 1, error);
          grouped = false;
        }
      }
    }
    if (grouped) {
      try {
        commit.run();
      } catch (error) {
        try { db.exec("ROLLBACK"); } catch {}
        undo(out, out.length, error);
      }
    }
    parentPort.postMessage(out);
  });
  parentPort.postMessage({ ready: true });
}
let opened;
try {
  opened = new (require(${JSON.stringify(module)}).${open})(workerData.path);
  opened.exec(workerData.setup);
} catch (error) {
  opened = undefined;
  parentPort.postMessage({ failed: String(error && error.message || error) });
}
if (opened) serve(opened);
`;

type Reply = [id: number, rows: SqlRow[] | null, error?: string];

/**
 * The reads of `db`, a second connection to the thread's file, on the request thread (see the module): the rows
 * of a `SELECT`, or undefined for any other statement and for a read that failed here, which then goes to the
 * thread.
 */
function localReads(db: SqliteConnection): (text: string, params: unknown[]) => SqlRow[] | undefined {
  try {
    db.exec("PRAGMA busy_timeout = 0; PRAGMA query_only = 1");
  } catch {
    return () => undefined; // a connection that cannot be made read-only reads nothing: the thread answers all
  }
  const statements = new Map<string, SqliteStatement | null>();
  return (text, params) => {
    let statement = statements.get(text);
    if (statement === null) return undefined;
    try {
      if (statement === undefined) {
        if (!READ.test(text)) return void statements.set(text, null);
        statements.set(text, statement = db.prepare(text));
      }
      return statement.all(...params) as SqlRow[];
    } catch {
      return undefined; // busy, or a table the thread has not made yet: the thread answers
    }
  };
}

/**
 * Opens `path` on a worker thread with {@link SQLITE_SETUP}, for `module` (`node:sqlite` or `bun:sqlite`) and its
 * database class (`DatabaseSync` or `Database`). Resolves once the connection is open; rejects if it cannot be.
 * `reader`, a connection to the same file on this thread, then runs the reads, and `close()` closes it too.
 */
export async function sqliteWorker(
  path: string, module: string, open: string, reader?: SqliteConnection & { close(): void },
): Promise<SqliteWorkerExecutor> {
  const setup = `${SQLITE_SETUP}; PRAGMA wal_autocheckpoint = ${SAFETY_PAGES}`;
  const worker = new Worker(THREAD(module, open), { eval: true, workerData: { path, setup } });
  const pending = new Map<number, { resolve(rows: SqlRow[]): void; reject(error: Error): void }>();
  /** Each statement text gets a number: the text crosses the thread once, the number every time after. */
  const keys = new Map<string, number>();
  let batch: [number, number, string | null, unknown[]][] = [];
  let next = 0;
  let stopped: Error | undefined;
  let closing: (() => void) | undefined;

  const fail = (error: Error): void => {
    stopped ??= error;
    for (const { reject } of pending.values()) reject(error);
    pending.clear();
  };
  const ready = new Promise<void>((resolve, reject) => {
    worker.once("message", (first: { ready?: true; failed?: string }) => {
      if (first.ready) return resolve();
      reject(new Error(first.failed ?? "the SQLite thread did not start"));
      void worker.terminate();
    });
    worker.once("error", reject);
  });
  worker.on("error", (error) => fail(error instanceof Error ? error : new Error(String(error))));
  worker.on("exit", () => {
    fail(new Error("The SQLite thread has stopped"));
    closing?.();
  });
  await ready;
  const read = reader && localReads(reader);
  let checkpointer: Checkpointer | undefined;
  if (isPlainFile(path)) {
    try {
      checkpointer = await startCheckpointer(path, module, open);
    } catch (error) {
      void worker.terminate();
      throw error;
    }
  }
  worker.on("message", (out: Reply[] | { closed: true }) => {
    if (!Array.isArray(out)) return void worker.terminate();
    for (const [id, rows, error] of out) {
      const call = pending.get(id);
      pending.delete(id);
      if (error !== undefined) call?.reject(new Error(error));
      else call?.resolve(rows!);
    }
    // An idle thread does not keep the process alive; one with statements in flight does.
    if (pending.size === 0) worker.unref();
  });
  worker.unref();

  const flush = (): void => {
    if (batch.length === 0) return; // close() sent it already
    const sending = batch;
    batch = [];
    worker.postMessage(sending);
  };

  return {
    dialect: "sqlite",
    query(text, params) {
      if (stopped) return Promise.reject(stopped);
      const rows = read?.(text, params);
      if (rows !== undefined) return Promise.resolve(rows);
      return new Promise<SqlRow[]>((resolve, reject) => {
        const id = next++;
        pending.set(id, { resolve, reject });
        let key = keys.get(text);
        const known = key !== undefined;
        if (key === undefined) keys.set(text, key = keys.size);
        if (batch.length === 0) setImmediate(flush);
        batch.push([id, key, known ? null : text, params]);
        if (pending.size === 1) worker.ref();
      });
    },
    async close() {
      if (!stopped) {
        await new Promise<void>((resolve) => {
          closing = resolve;
          worker.ref();
          flush(); // statements queued this turn go before the close
          worker.postMessage("close");
        });
      }
      const local = reader;
      reader = undefined; // close() may be called again
      try {
        local?.close();
      } catch {
        // closed already: nothing of it to stop
      }
      await checkpointer?.stop();
    },
  };
}
