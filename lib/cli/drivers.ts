/**
 * Database drivers for `--store`, from the runtime: SQLite built in (node:sqlite on Node 22.5+ and Deno,
 * bun:sqlite on Bun) and the optional npm drivers (pg, ioredis) imported only when a URL needs one.
 *
 * A SQLite file is served from a worker thread (`sqlite_worker.ts`): the database works on the other core, and the
 * request thread never waits on a write, a commit or a checkpoint's fsync; it runs only reads, on a connection
 * of its own.
 *
 * @module
 */
import { closeSync, openSync } from "node:fs";
import process from "node:process";
import type { SqliteDatabase, StoreDrivers } from "../reference/store.ts";
import { isPlainFile, sqliteWorker, type SqliteWorkerExecutor } from "./sqlite_worker.ts";

// Specifiers in variables: a bundler or type checker must not try to resolve a driver that is not installed.
const NODE_SQLITE = "node:sqlite";
const BUN_SQLITE = "bun:sqlite";

/**
 * Creates the database file with mode 0600 before SQLite opens it, unless it exists: SQLite would create it with
 * 0666 less the umask, readable by every local user, and what the store holds (sessions' secrets, clients) must
 * not be. SQLite gives its `-wal` and `-shm` files the mode of the database file. An existing file is left as it is.
 */
function createPrivate(path: string): void {
  if (!isPlainFile(path)) return;
  try {
    closeSync(openSync(path, "wx", 0o600));
  } catch (error) {
    if ((error as { code?: string }).code !== "EEXIST") throw error;
  }
}

/** node:sqlite, on Node and Deno. */
async function openNodeSqlite(path: string): Promise<SqliteDatabase> {
  createPrivate(path);
  let module: { DatabaseSync: new (path: string) => SqliteDatabase };
  // Node 22 flags node:sqlite as experimental on import; an operator would read that as a problem with the
  // server at every start. Only that one warning is held back, only during the import.
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (String(warning instanceof Error ? warning.message : warning).includes("SQLite")) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    module = await import(NODE_SQLITE);
  } catch {
    throw new Error("SQLite needs Node 22.5 or later (node:sqlite)");
  } finally {
    process.emitWarning = emitWarning;
  }
  return new module.DatabaseSync(path);
}

/** bun:sqlite, on Bun. */
async function openBunSqlite(path: string): Promise<SqliteDatabase> {
  createPrivate(path);
  const module = await import(BUN_SQLITE) as { Database: new (path: string) => SqliteDatabase };
  return new module.Database(path);
}

/**
 * A SQLite file on a worker thread. The file is opened (and so created) here first, on this thread; then the
 * thread opens it, and this connection stays to read the file on the request thread. `:memory:` and `file:` URIs
 * name a database this connection would not share, so it is closed.
 */
function onThread(open: (path: string) => Promise<SqliteDatabase>, module: string, name: string) {
  return async (path: string): Promise<SqliteWorkerExecutor> => {
    const db = await open(path);
    if (!isPlainFile(path)) {
      db.close();
      return await sqliteWorker(path, module, name);
    }
    try {
      return await sqliteWorker(path, module, name, db);
    } catch (error) {
      db.close();
      throw error;
    }
  };
}

/** The drivers of Node and Deno (Deno resolves npm packages by name from package.json, or as `npm:`). */
export const nodeDrivers: StoreDrivers = {
  openSqlite: openNodeSqlite,
  openSqliteWorker: onThread(openNodeSqlite, NODE_SQLITE, "DatabaseSync"),
  importPackage: (name) => import(name),
};

/** The drivers of Bun. */
export const bunDrivers: StoreDrivers = {
  openSqlite: openBunSqlite,
  openSqliteWorker: onThread(openBunSqlite, BUN_SQLITE, "Database"),
  importPackage: (name) => import(name),
};
