// The README's Bun one-liners on real servers: Bun.sql on PostgreSQL and Bun.redis on Redis, through the
// storage contract. Runs under `bun test` only (the file skips itself elsewhere; vitest covers pg, postgres.js,
// ioredis and node-redis in postgres.test.ts and redis.test.ts).
import { afterAll, describe, test } from "vitest";
import { redisStorage, sqlStorage, storageContract } from "../../mod.ts";
import { type Database, type Skipped, started, startPostgres, startRedis } from "../support/databases.ts";

interface BunSql {
  unsafe(text: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}
interface BunRedis {
  send(command: string, args: string[]): Promise<unknown>;
  close(): void;
}
const Bun = (globalThis as unknown as {
  Bun?: { SQL: new (url: string, options?: { max?: number }) => BunSql; RedisClient: new (url: string) => BunRedis };
}).Bun;

const [postgres, redis]: (Database | Skipped | undefined)[] = Bun ? await Promise.all([startPostgres(), startRedis()]) : [];
afterAll(async () => {
  for (const server of [postgres, redis]) if (started(server)) await server.stop();
}, 30_000);

describe.skipIf(!Bun || !started(postgres))("storage contract: sqlStorage on PostgreSQL through Bun.sql", () => {
  const sql = Bun && started(postgres) ? new Bun.SQL(postgres.url, { max: 20 }) : undefined;
  afterAll(() => sql?.close());
  const store = () => sqlStorage({ dialect: "postgres", query: (t, p) => sql!.unsafe(t, p) });
  for (const check of storageContract(store)) test(check.name, check.run, 20_000);
});

describe.skipIf(!Bun || !started(redis))("storage contract: redisStorage through Bun.redis", () => {
  const client = Bun && started(redis) ? new Bun.RedisClient(redis.url) : undefined;
  afterAll(() => client?.close());
  const store = () =>
    redisStorage({
      eval: (s, k, a) => client!.send("EVAL", [s, String(k.length), ...k, ...a]),
      evalsha: (h, k, a) => client!.send("EVALSHA", [h, String(k.length), ...k, ...a]),
    });
  for (const check of storageContract(store, { expiresByItself: true })) test(check.name, check.run, 20_000);
});
