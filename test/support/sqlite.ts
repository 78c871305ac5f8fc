/**
 * The SQLite driver of the runtime running the tests, through the README's one-line adapter: bun:sqlite on
 * Bun, node:sqlite on Node (22.5 and later) and Deno. Statements are prepared once per text (a cache the
 * one-liner leaves out), as a production adapter would.
 *
 * @module
 */
import type { SqlExecutor } from "../../mod.ts";

interface Statement {
  all(...params: unknown[]): Record<string, unknown>[];
}
interface Database {
  prepare(text: string): Statement;
  exec(text: string): void;
}

const g = globalThis as { Bun?: unknown };
const driver = g.Bun ? "bun:sqlite" : "node:sqlite";
// Top-level await of the runtime's driver; a specifier the bundler cannot see, so vitest does not resolve bun:sqlite.
const module = (await import(driver)) as {
  DatabaseSync?: new (path: string) => Database;
  Database?: new (path: string, options?: { strict?: boolean }) => Database;
};

/** Opens `path` (":memory:" or a file) with WAL and a busy timeout, and returns its executor. */
function open(path: string): SqlExecutor & { db: Database } {
  const db = module.DatabaseSync ? new module.DatabaseSync(path) : new module.Database!(path);
  db.exec("PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
  const cache = new Map<string, Statement>();
  const prepare = (text: string): Statement => {
    let statement = cache.get(text);
    if (!statement) cache.set(text, statement = db.prepare(text));
    return statement;
  };
  return { dialect: "sqlite", db, query: (t, p) => prepare(t).all(...p) };
}

/** {@link open}, and the driver's name. */
export const openSqlite: typeof open & { driver: string } = Object.assign(open, { driver });
