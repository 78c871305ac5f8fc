/**
 * The WAL checkpointer of a SQLite file served from a thread (`sqlite_worker.ts`): a second thread with its own
 * connection that copies the WAL back into the database file every {@link CHECKPOINT_INTERVAL_MS}, so that the
 * serving connection has next to nothing left to copy. A checkpoint syncs the WAL and the database file
 * (`synchronous = NORMAL` in WAL mode syncs nowhere else), and a sync costs in proportion to what was written since
 * the last one; done by the serving connection, it stalls every statement queued behind the commit that crossed
 * `wal_autocheckpoint`.
 *
 * Each tick runs a PASSIVE checkpoint, which takes no lock that a writer or reader waits on. SQLite starts the WAL
 * over at the first write after a checkpoint has copied all of it; under a steady stream of commits a pass never
 * sees that, so the serving connection keeps a `wal_autocheckpoint` of {@link SAFETY_PAGES}: its own checkpoint,
 * at that bound, finds nearly everything copied and synced already, and lets the WAL start over. The same bound
 * holds if this thread stalls or dies. An idle file costs one `PRAGMA data_version` per tick (it changes only when
 * another connection commits), and no checkpoint.
 *
 * @module
 */
import { Worker } from "node:worker_threads";

/**
 * Between checkpoints. Short, so that each sync has little to write (a sync costs in proportion to what was written
 * since the last one, and a token exchange writes a dozen pages or so); long enough that an idle or lightly used
 * file costs next to nothing.
 */
export const CHECKPOINT_INTERVAL_MS = 100;

/**
 * The serving connection's `wal_autocheckpoint`: ten times SQLite's default, so that it checkpoints (and syncs)
 * a tenth as often, and then only the little the checkpointer has not copied yet.
 */
export const SAFETY_PAGES = 10_000;

/** A running checkpointer. */
export interface Checkpointer {
  /** Stops the thread after a last checkpoint (call it after the serving connection is closed). */
  stop(): Promise<void>;
}

const THREAD = (module: string, open: string) => `
const { workerData, parentPort } = require("node:worker_threads");
process.emitWarning = () => {};
let db;
try {
  db = new (require(${JSON.stringify(module)}).${open})(workerData.path);
  db.exec("PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL");
} catch (error) {
  db = undefined;
  parentPort.postMessage({ failed: String(error && error.message || error) });
}
if (db) {
  const version = db.prepare("PRAGMA data_version");
  const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  let seen;
  const timer = setInterval(() => {
    try {
      // Read before the checkpoint: a commit during it changes the next reading, so the next tick runs again.
      const now = version.all()[0].data_version;
      if (now === seen) return;
      seen = now;
      checkpoint.all();
    } catch {}
  }, workerData.interval);
  parentPort.on("message", (message) => {
    if (message !== "close") return;
    clearInterval(timer);
    try { db.exec("PRAGMA wal_checkpoint(TRUNCATE)"); } catch {}
    db.close();
    parentPort.postMessage({ closed: true });
  });
  parentPort.postMessage({ ready: true });
}
`;

/**
 * Starts the checkpointer of the WAL-mode file `path` (`module` and `open` as in `sqliteWorker`). It never keeps
 * the process alive. Rejects if its connection cannot be opened.
 */
export async function startCheckpointer(
  path: string, module: string, open: string, interval: number = CHECKPOINT_INTERVAL_MS,
): Promise<Checkpointer> {
  const worker = new Worker(THREAD(module, open), { eval: true, workerData: { path, interval } });
  let exited = false;
  const exit = new Promise<void>((resolve) => worker.once("exit", () => {
    exited = true;
    resolve();
  }));
  await new Promise<void>((resolve, reject) => {
    worker.once("message", (first: { ready?: true; failed?: string }) => {
      if (first.ready) return resolve();
      reject(new Error(first.failed ?? "the SQLite checkpointer did not start"));
      void worker.terminate();
    });
    worker.once("error", reject);
  });
  worker.on("error", () => {}); // the serving connection's bound takes over
  worker.on("message", () => void worker.terminate());
  worker.unref();
  return {
    async stop() {
      if (exited) return;
      worker.ref();
      worker.postMessage("close");
      await exit;
    },
  };
}
