/**
 * Opens a store on a real database through one named driver, with the README's one-line adapter. Used by the
 * race tests, in the test process and in each racer process, so that every racer has its own connection.
 *
 * @module
 */
import { redisStorage, sqlStorage, type Storage } from "../../mod.ts";
import { sqliteExecutor } from "../../lib/storage/sqlite.ts";

/** The drivers the race tests use. */
export type Driver = "pg" | "postgres.js" | "ioredis" | "node-redis" | "node:sqlite";

/** A store and a function that closes its connections. */
export interface OpenedStore {
  store: Storage;
  close(): Promise<void>;
}

/** Opens `target` (a database URL, or a file for SQLite) through `driver`. */
export async function openStore(driver: Driver, target: string, connections = 1): Promise<OpenedStore> {
  switch (driver) {
    case "pg": {
      const { default: pg } = await import("pg");
      const pool = new pg.Pool({ connectionString: target, max: connections });
      return {
        store: sqlStorage({ dialect: "postgres", query: (t, p, n) => pool.query({ text: t, values: p, name: n }).then((r) => r.rows) }),
        close: () => pool.end(),
      };
    }
    case "postgres.js": {
      const { default: postgres } = await import("postgres");
      const sql = postgres(target, { max: connections, onnotice: () => {} });
      return {
        store: sqlStorage({ dialect: "postgres", query: (t, p) => sql.unsafe(t, p as never[], { prepare: true }) }),
        close: () => sql.end({ timeout: 5 }),
      };
    }
    case "ioredis": {
      const { Redis } = await import("ioredis");
      const redis = new Redis(target, { maxRetriesPerRequest: 1 });
      return {
        store: redisStorage({
          eval: (s, k, a) => redis.eval(s, k.length, ...k, ...a) as Promise<unknown>,
          evalsha: (h, k, a) => redis.evalsha(h, k.length, ...k, ...a) as Promise<unknown>,
        }),
        close: async () => void (await redis.quit()),
      };
    }
    case "node-redis": {
      const { createClient } = await import("redis");
      const client = createClient({ url: target });
      await client.connect();
      return {
        store: redisStorage({
          eval: (s, k, a) => client.eval(s, { keys: k, arguments: a }),
          evalsha: (h, k, a) => client.evalSha(h, { keys: k, arguments: a }),
        }),
        close: async () => void (await client.quit()),
      };
    }
    case "node:sqlite": {
      const { DatabaseSync } = await import("node:sqlite");
      const db = new DatabaseSync(target);
      const executor = sqliteExecutor(db);
      // A longer busy timeout than the executor's: eight racers migrate one new file at once.
      db.exec("PRAGMA busy_timeout = 10000");
      return {
        store: sqlStorage(executor),
        close: async () => db.close(),
      };
    }
  }
}
