/**
 * The database drivers of the durable-store rows (`durable.ts`), opened the same way for every server that
 * runs on them (this project, the peers, the limit server), each counting its round trips: one per awaited
 * statement or command, as the server sends them.
 *
 * - PostgreSQL: a pg `Pool` of `--pool` connections (default 10, the reference server's); statements may be
 *   named (prepared once per connection).
 * - Redis: one ioredis connection (ioredis pipelines the commands of concurrent requests on it).
 * - SQLite: node:sqlite on a WAL file, as the reference server opens it, through `sqliteExecutor`.
 *
 * @module
 */
import process from "node:process";
import { Redis } from "ioredis";
import pg from "pg";
import { type SqlExecutor, type SqlRow } from "../../mod.ts";
import { nodeDrivers } from "../../lib/cli/drivers.ts";
import { sqliteExecutor } from "../../lib/storage/sqlite.ts";

/** Round trips so far, read by a server's control port (`/trips`). */
export const trips: { count: number } = { count: 0 };

/** The store a server runs on: `memory`, `sqlite:PATH`, `postgres://…` or `redis://…`. */
export type StoreKind = "memory" | "sqlite" | "postgres" | "redis";

/** The kind of a store URL. */
export function kindOf(url: string): StoreKind {
  if (url === "memory") return "memory";
  if (url.startsWith("sqlite:")) return "sqlite";
  if (url.startsWith("postgres")) return "postgres";
  if (url.startsWith("redis")) return "redis";
  throw new Error(`Unknown store "${url}"`);
}

/** A pg pool whose every query counts as a round trip. */
export function openPostgres(url: string, size: number): { pool: pg.Pool; query: SqlExecutor["query"]; close(): Promise<void> } {
  const pool = new pg.Pool({ connectionString: url, max: size });
  pool.on("error", () => {});
  return {
    pool,
    // The README's pg one-liner, with the statement's name: each connection prepares it once.
    query: (text, values, name) => {
      trips.count++;
      return pool.query(name === undefined ? { text, values } : { text, values, name }).then((r) => r.rows as SqlRow[]);
    },
    close: () => pool.end(),
  };
}

/** One ioredis connection whose every command (a script, or a MULTI…EXEC block) counts as a round trip. */
export function openRedis(url: string): {
  redis: Redis;
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  evalsha(sha1: string, keys: string[], args: string[]): Promise<unknown>;
  close(): Promise<void>;
} {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on("error", () => {});
  return {
    redis,
    eval: (s, k, a) => (trips.count++, redis.eval(s, k.length, ...k, ...a) as Promise<unknown>),
    evalsha: (h, k, a) => (trips.count++, redis.evalsha(h, k.length, ...k, ...a) as Promise<unknown>),
    close: async () => void (await redis.quit()),
  };
}

/**
 * A SQLite file as the reference server opens it (`nodeDrivers.openSqliteWorker`: node:sqlite on a worker
 * thread, its reads on a second connection on the request thread, WAL, synchronous = NORMAL, statements kept;
 * `BENCH_SQLITE_THREAD=0` runs it all on the request thread instead). Each statement counts as a round trip.
 */
export async function openSqliteFile(path: string): Promise<{ executor: SqlExecutor; close(): Promise<void> }> {
  const executor = process.env.BENCH_SQLITE_THREAD === "0"
    ? sqliteExecutor(await nodeDrivers.openSqlite(path))
    : await nodeDrivers.openSqliteWorker!(path);
  return {
    executor: { dialect: "sqlite", query: (text, params, name) => (trips.count++, executor.query(text, params, name)) },
    close: async () => {},
  };
}

/** `--name value` from the command line. */
export function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const value = i === -1 ? fallback : process.argv[i + 1];
  if (value === undefined) throw new Error(`--${name} is required`);
  return value;
}
