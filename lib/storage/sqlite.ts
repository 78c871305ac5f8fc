/**
 * A SQLite executor for {@link sqlStorage} on a synchronous driver (node:sqlite, bun:sqlite): each statement is
 * prepared once per connection and kept, and the connection is set up the way the store is measured.
 *
 * The setup, run once: a busy timeout first (switching a new file to WAL takes a lock that another starting
 * process may hold), then 2,048-byte pages for a new file (an existing one keeps its own: SQLite ignores the
 * setting once a page is written), then WAL, so that readers run beside the one writer, and `synchronous =
 * NORMAL`: in WAL mode a commit then waits for no fsync; a power cut may lose the last commits, never corrupt the
 * file. Why smaller pages: the store's writes land on random B-tree pages (its keys are hashes), and a commit
 * writes each changed page whole to the WAL, which a checkpoint copies again; half the page is half those bytes
 * and less to shift inside a page on insert. A redemption through the reference server's thread cost 123-135 µs
 * of CPU instead of 156-164 (`lib/storage/README.md`); the point reads did not get slower.
 *
 * @module
 */
import type { SqlExecutor, SqlRow } from "./sql.ts";

/** A prepared statement, as node:sqlite's `StatementSync` and bun:sqlite's `Statement` both have it. */
export interface SqliteStatement {
  all(...params: unknown[]): unknown[];
}

/** A SQLite connection, as node:sqlite's `DatabaseSync` and bun:sqlite's `Database` both have it. */
export interface SqliteConnection {
  prepare(text: string): SqliteStatement;
  exec(text: string): void;
}

/** What {@link sqliteExecutor} runs on a connection before its first statement. */
export const SQLITE_SETUP =
  "PRAGMA busy_timeout = 5000; PRAGMA page_size = 2048; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL";

/**
 * The executor of a SQLite connection: {@link SQLITE_SETUP} once (unless `setup` is false), then each statement
 * prepared on first use and reused.
 *
 * @example
 * ```ts
 * import { DatabaseSync } from "node:sqlite";
 * const storage = sqlStorage(sqliteExecutor(new DatabaseSync("oauth.sqlite")));
 * ```
 */
export function sqliteExecutor(db: SqliteConnection, options: { setup?: boolean } = {}): SqlExecutor {
  if (options.setup !== false) db.exec(SQLITE_SETUP);
  const statements = new Map<string, SqliteStatement>();
  return {
    dialect: "sqlite",
    query(text, params) {
      let statement = statements.get(text);
      if (statement === undefined) statements.set(text, statement = db.prepare(text));
      return statement.all(...params) as SqlRow[];
    },
  };
}
