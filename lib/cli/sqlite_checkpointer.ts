/**
 * The WAL checkpointer of a SQLite file served from a thread (`sqlite_worker.ts`): a second thread with its own
 * connection that copies the WAL back into the database file every {@link CHECKPOINT_INTERVAL_MS}, so that the
 * serving connection does not. A checkpoint syncs the WAL and the database file (`synchronous = NORMAL` in WAL mode
 * syncs nowhere else), and a sync costs in proportion to what was written since the last one; done by the serving
 * connection, it stalls every statement queued behind the commit that crossed `wal_autocheckpoint`.
 *
 * Each tick: a PASSIVE checkpoint, which takes no lock a writer waits on, does the bulk. SQLite starts the WAL
 * over only once every frame in it is copied, which a PASSIVE pass never sees while commits keep coming; so past
 * {@link RESTART_FRAMES} a RESTART checkpoint follows, which waits up to {@link RESTART_WAIT_MS} for the writer lock
 * (between two statements) and copies only what was written during the pass; if it cannot get the lock in time
 * it is one more PASSIVE pass. The serving connection keeps a large `wal_autocheckpoint` ({@link SAFETY_PAGES}) as
 * a bound: if this thread stalls, dies or cannot keep up, the WAL still cannot grow without limit. An idle file
 * costs one `PRAGMA data_version` per tick (it changes only when another connection commits), and no checkpoint.
 *
 * @module
 */
import { Worker } from "node:worker_threads";

/**
 * Between checkpoints. Short, so that each sync has little to write and the WAL stays a few thousand frames at a
 * few thousand commits a second (a token exchange writes a dozen pages or so); long enough that an idle or lightly
 * used file costs next to nothing.
 */
export const CHECKPOINT_INTERVAL_MS = 100;

/** From this many frames in the WAL, a tick also restarts it (twice SQLite's default `wal_autocheckpoint`). */
export const RESTART_FRAMES = 2_000;

/** How long the restart waits for the writer lock: a few of the serving connection's statements. */
export const RESTART_WAIT_MS = 10;

/** The serving connection's `wal_autocheckpoint`: a bound well past what the checkpointer lets the WAL reach. */
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
  db.exec("PRAGMA busy_timeout = 0; PRAGMA synchronous = NORMAL");
} catch (error) {
  db = undefined;
  parentPort.postMessage({ failed: String(error && error.message || error) });
}
if (db) {
  const version = db.prepare("PRAGMA data_version");
  const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  const restart = db.prepare("PRAGMA wal_checkpoint(RESTART)");
  let seen;
  const timer = setInterval(() => {
    try {
      // Read before the checkpoint: a commit during it changes the next reading, so the next tick runs again.
      const now = version.all()[0].data_version;
      if (now === seen) return;
      seen = now;
      const [row] = checkpoint.all();
      // Past RESTART_FRAMES, restart the WAL too: the pass above did the bulk without a lock; what was written
      // since is copied under the writer lock, taken between two of the serving connection's statements.
      if (Number(row.log) >= workerData.restart) {
        db.exec("PRAGMA busy_timeout = " + workerData.wait);
        try { restart.all(); } finally { db.exec("PRAGMA busy_timeout = 0"); }
      }
    } catch {}
  }, workerData.interval);
  parentPort.on("message", (message) => {
    if (message !== "close") return;
    clearInterval(timer);
    db.exec("PRAGMA busy_timeout = 5000");
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
  const worker = new Worker(THREAD(module, open), { eval: true, workerData: { path, interval, restart: RESTART_FRAMES, wait: RESTART_WAIT_MS } });
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
