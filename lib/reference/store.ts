/**
 * The reference server's store, from a URL: `memory`, `sqlite:PATH`, `postgres://…` or `redis://…`.
 *
 * The library names no driver: the PostgreSQL and Redis drivers (optional peer dependencies) are loaded with a
 * dynamic `import()` only when such a URL is given, and SQLite comes from the runtime (node:sqlite on Node and
 * Deno, bun:sqlite on Bun), which the entry point in `lib/cli/` passes in as {@link StoreDrivers.openSqlite}.
 *
 * @module
 */
import { cachedClients } from "../storage/cached_clients.ts";
import { cachedTokens } from "../storage/cached_tokens.ts";
import { issuedRecords } from "../storage/issued_records.ts";
import { memoryStorage } from "../storage/memory.ts";
import { redisStorage } from "../storage/redis.ts";
import { sqliteExecutor, type SqliteConnection } from "../storage/sqlite.ts";
import { type SqlExecutor, sqlStorage } from "../storage/sql.ts";
import type { Storage } from "../storage/types.ts";

export type { SqliteStatement } from "../storage/sqlite.ts";

/** A SQLite database, as node:sqlite's `DatabaseSync` and bun:sqlite's `Database` both have it. */
export interface SqliteDatabase extends SqliteConnection {
  close(): void;
}

/**
 * How long a durable store's client records are served from this process's cache (`cachedClients`): a client
 * paused, deleted or given a new secret by another instance or by the command line is seen within this bound.
 */
export const CLIENT_CACHE_MS = 1000;

/**
 * How long, by default, a durable store's access-token records are served from this process's cache
 * (`cachedTokens`; the config's `token_cache_ms`): a token revoked by another instance is refused here within
 * this bound; one revoked through this process at once.
 */
export const TOKEN_CACHE_MS = 1000;

/** What an entry point supplies from its runtime so that durable stores can be opened. */
export interface StoreDrivers {
  /** Opens (creating it if needed) a SQLite database file. */
  openSqlite(path: string): SqliteDatabase | Promise<SqliteDatabase>;
  /**
   * Opens a SQLite database file on a thread of its own, set up as `sqliteExecutor` sets a connection up; a file
   * store then uses it instead of {@link StoreDrivers.openSqlite}, so that no statement runs on the request thread.
   */
  openSqliteWorker?(path: string): Promise<SqlExecutor & { close(): Promise<void> }>;
  /** Imports an npm package by name (a driver); rejects when it is not installed. */
  importPackage(name: string): Promise<unknown>;
}

/** An open store and how to describe and close it. */
export interface OpenedStore {
  storage: Storage;
  /** The kind and location, without any password: `sqlite:/srv/oauth.sqlite`, `postgres://app:***@db/oauth`. */
  description: string;
  /** Whether the data outlives the process. */
  durable: boolean;
  /** Closes the connections; the store must not be used afterwards. */
  close(): Promise<void>;
}

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  drivers?: StoreDrivers;
  clock?: () => number;
  /** Reports connection errors that no request is waiting for (a database restarting, say). */
  onError?: (error: unknown) => void;
  /** The staleness bound of a durable store's access-token cache in ms; 0 turns it off. Default {@link TOKEN_CACHE_MS}. */
  tokenCacheMs?: number;
}

/**
 * The store URL the reference server uses when none is named: a SQLite file beside the config file
 * (`app.json` → `app.sqlite`), or memory for the demo, which has no config file.
 */
export function defaultStoreUrl(configPath: string | undefined): string {
  if (configPath === undefined) return "memory";
  return `sqlite:${/\.json$/i.test(configPath) ? configPath.slice(0, -5) : configPath}.sqlite`;
}

/** Hides the password of a URL, for banners and logs. */
export function redactStoreUrl(url: string): string {
  if (!URL.canParse(url)) return url;
  const parsed = new URL(url);
  if (parsed.password === "") return url;
  parsed.password = "***";
  return parsed.href;
}

/**
 * Opens the store a URL names; the SQL schema is created or upgraded before it resolves. Throws a one-line
 * error for an unknown URL, a driver that is not installed, or a database that cannot be reached.
 */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<OpenedStore> {
  const scheme = url === "memory" ? "memory" : /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0].slice(0, -1).toLowerCase();
  const opener = scheme === undefined ? undefined : OPENERS[scheme];
  if (!opener) {
    throw new Error(`Cannot open store "${redactStoreUrl(url)}": use memory, sqlite:PATH, postgres://… or redis://…`);
  }
  try {
    return await opener(url, options);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (message.startsWith("Cannot open store")) throw error;
    throw new Error(`Cannot open store "${redactStoreUrl(url)}": ${oneLine(message)}`, { cause: error });
  }
}

type Opener = (url: string, options: OpenStoreOptions) => Promise<OpenedStore>;

/** One opener per URL scheme. */
const OPENERS: Record<string, Opener> = {
  memory: (_, options) =>
    Promise.resolve({
      storage: memoryStorage(options.clock ? { clock: options.clock } : {}),
      description: "memory",
      durable: false,
      close: () => Promise.resolve(),
    }),
  sqlite: openSqliteStore,
  postgres: openPostgresStore,
  postgresql: openPostgresStore,
  redis: openRedisStore,
  rediss: openRedisStore,
};

async function openSqliteStore(url: string, options: OpenStoreOptions): Promise<OpenedStore> {
  const path = url.slice("sqlite:".length);
  if (path === "") throw new Error(`Cannot open store "${url}": name a file, as in sqlite:./oauth.sqlite`);
  const drivers = needDrivers(options, url);
  const durable = path !== ":memory:";
  // A file on a thread of its own where the runtime has one (the database then works beside the requests);
  // WAL, synchronous = NORMAL, a busy timeout, and every statement prepared once, either way (sqliteExecutor).
  let executor: SqlExecutor;
  let close: () => Promise<void>;
  if (durable && drivers.openSqliteWorker) {
    const worker = await drivers.openSqliteWorker(path);
    executor = worker;
    close = () => worker.close();
  } else {
    const db = await drivers.openSqlite(path);
    try {
      executor = sqliteExecutor(db);
    } catch (error) {
      db.close();
      throw error;
    }
    close = () => Promise.resolve(db.close());
  }
  const storage = sqlStorage({ ...executor, ...(options.clock ? { clock: options.clock } : {}) });
  try {
    await storage.migrate();
  } catch (error) {
    await close();
    throw error;
  }
  return { storage: cached(storage, options), description: `sqlite:${path}`, durable, close };
}

/**
 * A durable store behind the per-process caches of client records ({@link CLIENT_CACHE_MS}) and access-token
 * records (`tokenCacheMs`), on the same clock, and the copies of the codes and refresh tokens this process
 * issued (`issuedRecords`, which has no staleness bound to set: only the store's atomic verbs decide).
 */
function cached(storage: Storage, options: OpenStoreOptions): Storage {
  const clock = options.clock ? { clock: options.clock } : {};
  const clients = cachedClients(issuedRecords(storage), { maxAgeMs: CLIENT_CACHE_MS, ...clock });
  return cachedTokens(clients, { maxAgeMs: options.tokenCacheMs ?? TOKEN_CACHE_MS, ...clock });
}

/** The slice of pg's `Pool` used here, typed structurally: the library has no dependency on pg. */
interface PgPool {
  query(config: { text: string; values: unknown[]; name?: string }): Promise<{ rows: Record<string, unknown>[] }>;
  on(event: "error", listener: (error: unknown) => void): unknown;
  end(): Promise<void>;
}

async function openPostgresStore(url: string, options: OpenStoreOptions): Promise<OpenedStore> {
  const pg = await loadDriver<{ Pool: new (config: Record<string, unknown>) => PgPool }>(options, url, "pg");
  // A short connect timeout: with the database down, a request fails over to 503 instead of queueing.
  const pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 2000 });
  // An idle connection that breaks (the database restarting) is reported here; unhandled, it would end the process.
  pool.on("error", (error) => options.onError?.(error));
  const storage = sqlStorage({
    dialect: "postgres",
    // Named statements: each connection parses and plans a statement once, not on every call.
    query: (text, values, name) => pool.query(name === undefined ? { text, values } : { text, values, name }).then((result) => result.rows),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  try {
    await storage.migrate();
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
  return { storage: cached(storage, options), description: redactStoreUrl(url), durable: true, close: () => pool.end() };
}

/** The slice of ioredis's client used here, typed structurally. */
interface IoRedis {
  connect(): Promise<void>;
  eval(script: string, keyCount: number, ...keysAndArgs: string[]): Promise<unknown>;
  evalsha(sha1: string, keyCount: number, ...keysAndArgs: string[]): Promise<unknown>;
  on(event: "error", listener: (error: unknown) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}

async function openRedisStore(url: string, options: OpenStoreOptions): Promise<OpenedStore> {
  const Redis = await loadDriver<new (url: string, options: Record<string, unknown>) => IoRedis>(options, url, "ioredis");
  const redis = new Redis(url, {
    lazyConnect: true,
    // Fail a command at once while disconnected (503), and never resend a script after a reconnect: a resent
    // code redemption or rotation would lose to its own first run and revoke the grant.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 2000,
  });
  redis.on("error", (error) => options.onError?.(error));
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    throw error;
  }
  const storage = redisStorage({
    eval: (script, keys, args) => redis.eval(script, keys.length, ...keys, ...args),
    evalsha: (sha1, keys, args) => redis.evalsha(sha1, keys.length, ...keys, ...args),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  return {
    storage: cached(storage, options),
    description: redactStoreUrl(url),
    durable: true,
    close: async () => {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

function needDrivers(options: OpenStoreOptions, url: string): StoreDrivers {
  if (!options.drivers) throw new Error(`Cannot open store "${redactStoreUrl(url)}": no database drivers on this runtime`);
  return options.drivers;
}

/** Imports a driver package; the export a CommonJS package puts on `default` is unwrapped. */
async function loadDriver<T>(options: OpenStoreOptions, url: string, name: string): Promise<T> {
  const drivers = needDrivers(options, url);
  let module: unknown;
  try {
    module = await drivers.importPackage(name);
  } catch {
    throw new Error(`Cannot open store "${redactStoreUrl(url)}": install its driver with "npm install ${name}"`);
  }
  const namespace = module as { default?: unknown };
  return (namespace.default ?? namespace) as T;
}

function oneLine(message: string): string {
  return message.split("\n")[0]!.trim() || "unknown error";
}
