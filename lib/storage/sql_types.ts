/**
 * The executor a SQL store runs on: its own module so that the store and its migrations share it without
 * importing each other.
 *
 * @module
 */

/** The SQL dialects the store speaks. */
export type Dialect = "postgres" | "sqlite";

/** A row as drivers return it: column name to value (BIGINT may come back as a string or a bigint). */
export type SqlRow = Record<string, unknown>;

/**
 * Runs one statement with positional parameters and returns its rows (none for a statement without
 * `RETURNING`). Placeholders are `$1, $2, …` for PostgreSQL and `?1, ?2, …` for SQLite. Synchronous drivers
 * (node:sqlite, bun:sqlite) may return the rows directly.
 */
export interface SqlExecutor {
  /** Which SQL the store writes. */
  dialect: Dialect;
  /**
   * Runs one statement and returns its rows. `name` is the same for the same text, and differs between texts
   * (`oauth_` and 16 characters of its hash): a driver with named prepared statements may use it. Migrations
   * pass no name (their text is run once).
   */
  query(text: string, params: unknown[], name?: string): Promise<readonly SqlRow[]> | readonly SqlRow[];
}
