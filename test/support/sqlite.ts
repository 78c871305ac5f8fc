/**
 * The SQLite driver of the runtime running the tests: bun:sqlite on Bun, node:sqlite on Node (22.5 and later)
 * and Deno, through `sqliteExecutor` (each statement prepared once and kept, WAL, `synchronous = NORMAL`).
 *
 * @module
 */
import type { SqlExecutor } from "../../mod.ts";
import { sqliteExecutor } from "../../lib/storage/sqlite.ts";

interface Statement {
  all(...params: unknown[]): Record<string, unknown>[];
}
interface Database {
  prepare(text: string): Statement;
  exec(text: string): void;
  close(): void;
}

const g = globalThis as { Bun?: unknown };
const driver = g.Bun ? "bun:sqlite" : "node:sqlite";
// Top-level await of the runtime's driver; a specifier the bundler cannot see, so vitest does not resolve bun:sqlite.
const module = (await import(driver)) as {
  DatabaseSync?: new (path: string) => Database;
  Database?: new (path: string, options?: { strict?: boolean }) => Database;
};

/** Opens `path` (":memory:" or a file) through `sqliteExecutor` (WAL, a busy timeout, statements kept). */
function open(path: string): SqlExecutor & { db: Database } {
  const db = raw(path);
  return { ...sqliteExecutor(db), db };
}

/** A connection of the runtime's driver with no setup at all, as another program would open the file. */
function raw(path: string): Database {
  return module.DatabaseSync ? new module.DatabaseSync(path) : new module.Database!(path);
}

/** {@link open}, the driver's name, and {@link raw}. */
export const openSqlite: typeof open & { driver: string; raw: typeof raw } = Object.assign(open, { driver, raw });
