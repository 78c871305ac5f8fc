/**
 * The physical limit beside each durable row (`durable.ts`): the same database, driver and pool as the server
 * of that row, doing per request only the round trips that row's operation takes, each the cheapest single
 * statement of its kind, and no OAuth work:
 *
 * - a read: a primary-key SELECT of one small row (PostgreSQL, SQLite), a one-key GET script by EVALSHA (Redis);
 * - a write: a one-row INSERT of a new key (PostgreSQL, SQLite), a one-key SET script with a TTL (Redis).
 *
 * On `memory` it has no database: a bare Node HTTP server answering the same constant, the limit of a row with
 * no round trip (the memory rows, for this project and the peers alike).
 *
 *   node serve_limit.js --store memory|sqlite:PATH|postgres://…|redis://… [--pool 10]
 *
 * The token port answers `POST /token?r=R&w=W` (R reads, then W writes, one after the other as a request's
 * round trips are) with the bare handler's constant JSON; the resource port answers `GET /?r=R` the same way.
 * The control port has only `/trips` (see `durable_server.ts`).
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Buffer } from "node:buffer";
import { arg, kindOf, openPostgres, openRedis, openSqliteFile } from "./drivers.ts";
import { body, listen, serveDurable } from "./durable_server.ts";
import { BARE_BODY, BARE_HEADERS } from "./fixture.ts";

const url = arg("store");
const kind = kindOf(url);
let read: () => Promise<unknown> | unknown;
let write: () => Promise<unknown> | unknown;
const key = () => crypto.randomUUID();

if (kind === "postgres") {
  const { pool, query } = openPostgres(url, Number(arg("pool", "10")));
  await pool.query("CREATE TABLE IF NOT EXISTS bench_limit_r (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
  await pool.query("CREATE TABLE IF NOT EXISTS bench_limit_w (k TEXT PRIMARY KEY, v TEXT NOT NULL, e BIGINT NOT NULL)");
  await pool.query("INSERT INTO bench_limit_r VALUES ('k', 'v') ON CONFLICT DO NOTHING");
  read = () => query("SELECT v FROM bench_limit_r WHERE k = $1", ["k"], "limit_read");
  write = () => query("INSERT INTO bench_limit_w (k, v, e) VALUES ($1, $2, $3)", [key(), "v", Date.now()], "limit_write");
} else if (kind === "redis") {
  const redis = openRedis(url);
  const get = "return redis.call('GET', KEYS[1])";
  const set = "return redis.call('SET', KEYS[1], ARGV[1], 'PX', 3600000)";
  const shaGet = String(await redis.redis.script("LOAD", get));
  const shaSet = String(await redis.redis.script("LOAD", set));
  read = () => redis.evalsha(shaGet, ["bench-limit:k"], []);
  write = () => redis.evalsha(shaSet, [`bench-limit:${key()}`], ["v"]);
} else if (kind === "sqlite") {
  const { executor } = await openSqliteFile(url.slice("sqlite:".length));
  await executor.query("CREATE TABLE IF NOT EXISTS bench_limit_r (k TEXT PRIMARY KEY, v TEXT NOT NULL)", []);
  await executor.query("CREATE TABLE IF NOT EXISTS bench_limit_w (k TEXT PRIMARY KEY, v TEXT NOT NULL, e BIGINT NOT NULL)", []);
  await executor.query("INSERT OR IGNORE INTO bench_limit_r VALUES ('k', 'v')", []);
  read = () => executor.query("SELECT v FROM bench_limit_r WHERE k = ?1", ["k"]);
  write = () => executor.query("INSERT INTO bench_limit_w (k, v, e) VALUES (?1, ?2, ?3)", [key(), "v", Date.now()]);
} else if (kind === "memory") {
  read = write = () => {
    throw new Error("the memory limit makes no round trip");
  };
} else {
  throw new Error("the limit server runs on memory, sqlite:PATH, postgres://… or redis://…");
}

const headers = { ...BARE_HEADERS, "content-length": String(Buffer.byteLength(BARE_BODY)) };
const handler = (req: IncomingMessage, res: ServerResponse): void => {
  const query = new URL(req.url ?? "/", "http://127.0.0.1").searchParams;
  const reads = Number(query.get("r") ?? 0);
  const writes = Number(query.get("w") ?? 0);
  (async () => {
    await body(req);
    for (let i = 0; i < reads; i++) await read();
    for (let i = 0; i < writes; i++) await write();
  })().then(
    () => res.writeHead(200, headers).end(BARE_BODY),
    (error: unknown) => res.writeHead(500).end(String(error)),
  );
};

await serveDurable({
  token: () => listen(handler),
  resource: () => listen(handler),
  issueCodes: () => Promise.reject(new Error("the limit server issues no codes")),
});
