/**
 * The durable-store rows of `npm run bench` (`npm run bench:durable` runs only these): every token operation over
 * HTTP on Node, 32 connections, on each store, for this project, for the peers, and for the physical limit of
 * each database, in alternating rounds, with what each operation costs the database, read from its own
 * counters.
 *
 * Servers (one process each, alive for the whole section, each on its own database or key prefix):
 * - this project (`serve_store.ts`) on memory, SQLite (a WAL file), PostgreSQL and Redis;
 * - @node-oauth/oauth2-server (`peer_node_oauth.ts`) and oidc-provider (`peer_oidc_provider.ts`) on memory,
 *   PostgreSQL and Redis, each with a minimal adapter written for the bench (`peer_adapters.ts`);
 * - the limit (`serve_limit.ts`) of SQLite, PostgreSQL and Redis: per request, the round trips this project's
 *   operation takes on that store, each the cheapest single statement of its kind, no OAuth work; of memory, a
 *   bare HTTP server.
 *
 * PostgreSQL (with `pg_stat_statements`) and Redis are started for the run on 127.0.0.1, with nothing written for
 * durability (fsync off, no AOF): the rows measure CPU and round trips, not disks. Per row and request:
 * - `trips`: round trips, counted by each server's driver (`drivers.ts`): awaited statements, scripts or
 *   MULTI…EXEC blocks;
 * - `db`: PostgreSQL statements (`pg_stat_statements` calls in the server's database, top level only, so a
 *   statement is one round trip), or Redis commands (`INFO commandstats`, the commands a script runs included);
 * - `db µs`: the database's CPU time (every PostgreSQL process, or redis-server), and `cpu µs` the server's.
 *
 * @module
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Redis } from "ioredis";
import { type Database, started, startPostgres, startRedis } from "../support/databases.ts";
import { DURABLE_TOKEN_PATH } from "./durable_server.ts";
import { CLIENT_CREDENTIALS_BODY, codeExchangeBody, refreshBody } from "./fixture.ts";
import { cpuSeconds, firstLine, type LoadRequest, loadRequests, type LoadResult, stop, untilPoolDry } from "./load.ts";
import { type Measurement, round, Samples } from "./stats.ts";

/** The servers of the section. */
export type DurableServer = "project" | "node-oauth" | "oidc-provider" | "limit";
/** The stores. */
export type DurableStore = "memory" | "sqlite" | "postgres" | "redis";
/** The operations, each over HTTP. */
export type DurableOp = "client_credentials" | "authorization_code" | "refresh_token" | "bearer" | "bearer_many";

/**
 * `bearer`: API calls with 64 tokens, each presented again within milliseconds (one client calling an API, or an
 * MCP session's tool calls): what this project's per-process token cache serves. `bearer_many`: 20,000 tokens in
 * turn, so that none comes back within the cache's bound and every check reads the store.
 */
export const DURABLE_OPS: readonly DurableOp[] = ["client_credentials", "authorization_code", "refresh_token", "bearer", "bearer_many"];
const isBearer = (op: DurableOp): boolean => op === "bearer" || op === "bearer_many";
/** Tokens of a `bearer_many` row: more than the cache keeps (10,000), none back within its bound (1 s). */
const MANY_TOKENS = 20_000;
/**
 * Codes in a pool of the code exchange row: within what this project's `issuedRecords` keeps for sure (the newest
 * three quarters of its 10,000), so that a code is redeemed as on a deployment's instance that issued it a few
 * seconds before. A code issued elsewhere takes a read first (`serve_store.ts --issued-entries 0`).
 */
const CODE_POOL = 7_500;
const FILES: Record<DurableServer, string> = {
  project: "serve_store.ts",
  "node-oauth": "peer_node_oauth.ts",
  "oidc-provider": "peer_oidc_provider.ts",
  limit: "serve_limit.ts",
};
/** Where each server runs: the peers have no SQLite adapter; the limit of memory is a bare HTTP server. */
const STORES: Record<DurableServer, readonly DurableStore[]> = {
  project: ["memory", "sqlite", "postgres", "redis"],
  "node-oauth": ["memory", "postgres", "redis"],
  "oidc-provider": ["memory", "postgres", "redis"],
  limit: ["memory", "sqlite", "postgres", "redis"],
};

/** Options of {@link runDurable}. */
export interface DurableOptions {
  seconds: number;
  rounds: number;
  warmup: number;
  connections: number;
  servers: readonly DurableServer[];
  stores: readonly DurableStore[];
  ops: readonly DurableOp[];
  /** Connections of each server's PostgreSQL pool. */
  pool: number;
}

/** One measured row. */
export interface DurableRow {
  server: DurableServer;
  store: DurableStore;
  op: DurableOp;
  result: Measurement;
  /** Round trips per request, counted by the server's driver. */
  trips?: number;
  /** PostgreSQL statements per request (pg_stat_statements), or Redis commands (commandstats). */
  db?: number;
  /** The database's CPU time per request, µs. */
  db_cpu_us?: number;
  /** This project's rows: rate ÷ this project's memory row; limit and peer rows: none. */
  ratio_memory?: number;
  /** This project's and the peers' rows: rate ÷ the limit row of the same store and operation. */
  of_limit?: number;
  /** This project's rows: rate ÷ each peer's row of the same store and operation. */
  vs?: Partial<Record<DurableServer, number>>;
  /** The limit rows: the reads and writes per request they run. */
  plan?: { reads: number; writes: number };
}

/** Starts a bench entry point on Node (run.ts compiles them first). */
export type Starter = (file: string, args: string[]) => ChildProcess;

interface Ready {
  port: number;
  resource: number;
  control: number;
}

interface Running {
  server: DurableServer;
  store: DurableStore;
  child: ChildProcess;
  ready: Ready;
  /** The database the server's statements run in (PostgreSQL), for its counters. */
  database?: string;
}

/** What a row adds up over its rounds. */
interface Tally {
  samples: Samples[];
  /** Each measured round's rate, in round order: the ratios are medians of same-round ratios. */
  rates: number[];
  count: number;
  errors: number;
  seconds: number;
  trips: number;
  db: number;
  dbCpu: number;
  serverCpu: number;
}

async function control<T>(ready: Ready, path: string): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${ready.control}${path}`);
  if (!response.ok) throw new Error(`control ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

const DATABASES: Record<DurableServer, string> = {
  project: "bench_project",
  "node-oauth": "bench_node_oauth",
  "oidc-provider": "bench_oidc_provider",
  limit: "bench_limit",
};

/** Runs the section; `log` gets progress lines. */
export async function runDurable(options: DurableOptions, start: Starter, log: (line: string) => void): Promise<DurableRow[]> {
  const dir = mkdtempSync(join(tmpdir(), "oauth-durable-"));
  const databases: Database[] = [];
  const running: Running[] = [];
  let admin: pg.Client | undefined;
  let redisAdmin: Redis | undefined;
  try {
    const wants = (store: DurableStore) => options.stores.includes(store);
    let postgresUrl: ((db: string) => string) | undefined;
    if (wants("postgres")) {
      const server = await startPostgres({ preload: ["pg_stat_statements"] });
      if (!started(server)) throw new Error(`PostgreSQL: ${server.skip}`);
      databases.push(server);
      admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      for (const name of Object.values(DATABASES)) await admin.query(`CREATE DATABASE ${name}`);
      postgresUrl = (db) => server.url.replace(/\/postgres$/, `/${db}`);
    }
    let redisUrl: string | undefined;
    if (wants("redis")) {
      const server = await startRedis();
      if (!started(server)) throw new Error(`Redis: ${server.skip}`);
      databases.push(server);
      redisUrl = server.url;
      redisAdmin = new Redis(server.url);
    }
    const dbPids = (store: DurableStore): number[] =>
      store === "postgres" ? databases[0]!.pids() : store === "redis" ? databases.at(-1)!.pids() : [];

    // One server per (server, store), alive for the whole section.
    for (const server of options.servers) {
      for (const store of STORES[server].filter(wants)) {
        const url = store === "memory"
          ? "memory"
          : store === "sqlite"
          ? `sqlite:${join(dir, `${server}.sqlite`)}`
          : store === "postgres"
          ? postgresUrl!(DATABASES[server])
          : `${redisUrl}/${Object.keys(DATABASES).indexOf(server)}`;
        log(`  starting ${server} on ${store}...`);
        const child = start(FILES[server], ["--store", url, "--pool", String(options.pool)]);
        const ready = await firstLine<Ready>(child, 60_000);
        running.push({ server, store, child, ready, ...(store === "postgres" ? { database: DATABASES[server] } : {}) });
      }
    }

    /** The database's counter of statements (PostgreSQL, in the server's database) or commands (Redis). */
    const dbCount = async (run: Running): Promise<number> => {
      if (run.store === "postgres") {
        const { rows } = await admin!.query(
          "SELECT coalesce(sum(calls), 0)::bigint AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)",
          [run.database],
        );
        return Number(rows[0].n);
      }
      if (run.store === "redis") {
        let total = 0;
        for (const match of (await redisAdmin!.info("commandstats")).matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) {
          // The commands that carry data, inside scripts and transactions included; not the envelopes.
          if (!/^(eval|evalsha|multi|exec|info|config|script|ping|select|client|hello|auth|command)/.test(match[1]!)) total += Number(match[2]);
        }
        return total;
      }
      return 0;
    };

    const project = (store: DurableStore) => running.find((r) => r.server === "project" && r.store === store);
    /** Reads and writes per request of each limit row: this project's round trips on that store. */
    const plans = new Map<string, { reads: number; writes: number }>();
    /**
     * A limit row's plan. Without this project's row to copy (not in `--durable-servers`): a read, and a write for
     * a token operation; none on memory.
     */
    const planOf = (store: DurableStore, op: DurableOp) =>
      plans.get(`${store}/${op}`) ?? (store === "memory" ? { reads: 0, writes: 0 } : { reads: 1, writes: isBearer(op) ? 0 : 1 });
    const tallies = new Map<string, Tally>();
    const manyTokens = new Map<Running, string[]>();
    const keyOf = (run: Running, op: DurableOp) => `${run.server}/${run.store}/${op}`;

    /** One load of one row: `seconds` of requests after `warmup` seconds of the same. */
    const measureRow = async (run: Running, op: DurableOp, seconds: number, warmup: number): Promise<void> => {
      const limit = run.server === "limit";
      const plan = limit ? planOf(run.store, op) : undefined;
      const query = plan ? `?r=${plan.reads}&w=${plan.writes}` : "";
      const tokenPath = DURABLE_TOKEN_PATH + query;
      let spec: LoadRequest | (() => LoadRequest | undefined);
      let port = run.ready.port;
      let onResponse: ((status: number, body: string) => void) | undefined;
      let fill: ((seconds: number) => Promise<void>) | undefined;
      if (op === "client_credentials" || (limit && !isBearer(op))) {
        spec = { path: tokenPath, body: op === "refresh_token" ? refreshBody("x") : op === "authorization_code" ? codeExchangeBody("x") : CLIENT_CREDENTIALS_BODY };
      } else if (isBearer(op)) {
        port = run.ready.resource;
        if (limit) spec = { method: "GET", path: `/${query}`, headers: { authorization: `Bearer ${"x".repeat(43)}` } };
        else if (op === "bearer_many") {
          // Issued once per server (the pool outlives the rounds: a token is good for an hour), sent in turn.
          let tokens = manyTokens.get(run);
          if (!tokens) manyTokens.set(run, tokens = await control<string[]>(run.ready, `/access?n=${MANY_TOKENS}`));
          const pool = tokens;
          let next = 0;
          spec = () => ({ method: "GET", path: "/", headers: { authorization: `Bearer ${pool[next++ % pool.length]}` } });
        } else {
          const tokens = await control<string[]>(run.ready, "/access?n=64");
          spec = () => ({ method: "GET", path: "/", headers: { authorization: `Bearer ${tokens[Math.floor(Math.random() * tokens.length)]}` } });
        }
      } else if (op === "authorization_code") {
        // Each code is sent once, from a pool filled before the clock starts (the warm-up has its own). A pool is
        // sized from the last rate seen, and holds at most CODE_POOL codes: a deployment has outstanding only its
        // code rate times the seconds from redirect to exchange. A dry pool ends the run early; its rate stays exact.
        const last = tallies.get(keyOf(run, op));
        const rate = last && last.seconds > 0 ? last.count / last.seconds : 3000;
        let codes: string[] = [];
        fill = async (s) => {
          codes = await control<string[]>(run.ready, `/codes?n=${Math.min(Math.ceil(rate * s * 1.6) + options.connections * 4, CODE_POOL)}`);
        };
        spec = () => {
          const code = codes.pop();
          return code === undefined ? undefined : { path: tokenPath, body: codeExchangeBody(code) };
        };
      } else {
        // Chains of rotations: each answer's refresh token is sent next; twice as many chains as connections.
        const queue = await control<string[]>(run.ready, `/refresh?n=${options.connections * 2}`);
        spec = () => {
          const token = queue.shift();
          return token === undefined ? undefined : { path: tokenPath, body: refreshBody(token) };
        };
        onResponse = (status, body) => {
          if (status === 200) queue.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
        };
      }
      if (warmup > 0) {
        await fill?.(warmup);
        await loadRequests(port, { seconds: warmup }, spec, onResponse);
      }
      await fill?.(seconds);
      const trips0 = (await control<{ trips: number }>(run.ready, "/trips")).trips;
      const db0 = await dbCount(run);
      // The server's and the database's CPU seconds so far. Backends that ended during the run are lost to the
      // database's sum; the pools keep theirs open.
      const cpuNow = () => ({
        server: cpuSeconds(run.child.pid) ?? 0,
        db: dbPids(run.store).reduce((n, pid) => n + (cpuSeconds(pid) ?? 0), 0),
      });
      const cpu0 = cpuNow();
      // A run whose pool of codes runs dry ends there, CPU included: the filler sent until autocannon stops is
      // refused before any store read (load.ts), so the counters of round trips and statements need no such cut.
      const [result, cpu1]: [LoadResult, ReturnType<typeof cpuNow>] = await untilPoolDry(cpuNow, () => loadRequests(port, { seconds }, spec, onResponse));
      const db1 = await dbCount(run);
      const trips1 = (await control<{ trips: number }>(run.ready, "/trips")).trips;
      if (result.errors > 0) log(`    ${keyOf(run, op)}: failures ${JSON.stringify(result.statuses)}`);
      const tally = tallies.get(keyOf(run, op)) ?? { samples: [], rates: [], count: 0, errors: 0, seconds: 0, trips: 0, db: 0, dbCpu: 0, serverCpu: 0 };
      tally.samples.push(result.samples);
      tally.rates.push(result.count / result.seconds);
      tally.count += result.count;
      tally.errors += result.errors;
      tally.seconds += result.seconds;
      tally.trips += trips1 - trips0;
      tally.db += db1 - db0;
      tally.dbCpu += Math.max(0, cpu1.db - cpu0.db);
      tally.serverCpu += cpu1.server - cpu0.server;
      tallies.set(keyOf(run, op), tally);
    };

    // Calibration: a short run of every row (which also warms every server up); this project's round trips
    // on each store then give the limit rows their plan.
    const order = running.filter((r) => r.server !== "limit");
    for (const run of order) {
      for (const op of options.ops) {
        log(`  warm-up: ${run.server} ${op} on ${run.store}...`);
        await measureRow(run, op, options.warmup, 0);
      }
    }
    for (const store of options.stores) {
      const own = project(store);
      if (!own) continue;
      for (const op of options.ops) {
        const t = tallies.get(keyOf(own, op));
        const perRequest = t && t.count > 0 ? Math.round(t.trips / t.count) : 1;
        // A row with no round trip (the memory store's) gets none: its limit is a bare HTTP server.
        const writes = isBearer(op) ? 0 : Math.min(1, perRequest);
        plans.set(`${store}/${op}`, { reads: Math.max(0, perRequest - writes), writes });
      }
    }
    for (const run of running.filter((r) => r.server === "limit")) {
      for (const op of options.ops) await measureRow(run, op, options.warmup, 0);
    }
    tallies.clear();

    // Measured rounds, the order reversed every other round so that drift hits every row alike.
    // Operation by operation, every server of one operation back to back: rows compared with each other run
    // seconds apart, so that what else the machine does hits them alike.
    const plan: [Running, DurableOp][] = options.ops.flatMap((op) => running.map((run) => [run, op] as [Running, DurableOp]));
    for (let r = 0; r < options.rounds; r++) {
      for (const [run, op] of r % 2 === 0 ? plan : [...plan].reverse()) {
        log(`  round ${r + 1}: ${run.server} ${op} on ${run.store}...`);
        await measureRow(run, op, options.seconds, 0.5);
      }
    }

    const rows: DurableRow[] = plan.map(([run, op]) => {
      const t = tallies.get(keyOf(run, op))!;
      const all = new Samples();
      for (const s of t.samples) s.forEach((v) => all.add(v));
      const result: Measurement = {
        rate: Math.round(t.count / t.seconds),
        p50: round(all.percentile(50)),
        p99: round(all.percentile(99)),
        max: round(all.percentile(100)),
        count: t.count,
        errors: t.errors,
        seconds: round(t.seconds, 2),
        server_cpu_us: round((t.serverCpu * 1e6) / t.count, 1),
      };
      const row: DurableRow = { server: run.server, store: run.store, op, result };
      if (run.store !== "memory" && run.store !== "sqlite") {
        row.trips = round(t.trips / t.count, 2);
        row.db = round(t.db / t.count, 2);
        row.db_cpu_us = round((t.dbCpu * 1e6) / t.count, 1);
      } else if (run.store === "sqlite") row.trips = round(t.trips / t.count, 2);
      if (run.server === "limit") row.plan = planOf(run.store, op);
      return row;
    });
    const rates = (server: DurableServer, store: DurableStore, op: DurableOp) => {
      const run = running.find((r) => r.server === server && r.store === store);
      return run ? tallies.get(keyOf(run, op))?.rates : undefined;
    };
    // The median over rounds of the ratio within each round: a round disturbed by other work on the machine
    // moves one sample, not the verdict.
    const ratio = (mine: number[], other: number[] | undefined) => other && round(median(mine.map((rate, r) => rate / other[r]!)), 2);
    for (const row of rows) {
      if (row.server === "limit") continue;
      const mine = rates(row.server, row.store, row.op)!;
      // The peers' fraction of the same limit: how near each server comes to what one driver call costs.
      const limit = ratio(mine, rates("limit", row.store, row.op));
      if (limit !== undefined) row.of_limit = limit;
      if (row.server !== "project") continue;
      const memory = ratio(mine, rates("project", "memory", row.op));
      if (memory !== undefined) row.ratio_memory = memory;
      for (const peer of ["node-oauth", "oidc-provider"] as const) {
        const vs = ratio(mine, rates(peer, row.store, row.op));
        if (vs !== undefined) (row.vs ??= {})[peer] = vs;
      }
    }
    return rows;
  } finally {
    await Promise.all(running.map((r) => stop(r.child)));
    await admin?.end().catch(() => {});
    redisAdmin?.disconnect();
    for (const database of databases) await database.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The median of a non-empty list (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const STORE_NAMES: Record<DurableStore, string> = { memory: "memory", sqlite: "SQLite", postgres: "PostgreSQL", redis: "Redis" };
const OP_NAMES: Record<DurableOp, string> = {
  client_credentials: "client_credentials",
  authorization_code: "code exchange",
  refresh_token: "refresh rotation",
  bearer: "Bearer check",
  bearer_many: "Bearer check, 20k tokens",
};

/** The section's table: one line per row, the project's ratios beside its rows. */
export function durableTable(rows: readonly DurableRow[]): string {
  const head = ["server", "store", "operation", "rate/s", "p50 ms", "p99 ms", "trips", "db", "db µs", "cpu µs", "× memory", "× limit", "× NO", "× OP"];
  const cell = (n: number | undefined, digits = 2) => (n === undefined ? "" : n.toFixed(digits));
  const body = rows.map((row) => [
    row.server === "limit" ? `limit (${row.plan!.reads}R+${row.plan!.writes}W)` : row.server,
    STORE_NAMES[row.store],
    OP_NAMES[row.op],
    Math.round(row.result.rate).toLocaleString("en-US"),
    row.result.p50.toFixed(3),
    row.result.p99.toFixed(3),
    cell(row.trips),
    cell(row.db),
    cell(row.db_cpu_us, 0),
    cell(row.result.server_cpu_us, 0),
    cell(row.ratio_memory),
    cell(row.of_limit),
    cell(row.vs?.["node-oauth"]),
    cell(row.vs?.["oidc-provider"]) + (row.result.errors > 0 ? `  ${row.result.errors} FAILED` : ""),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i >= 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd();
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

/** The issue's targets on these rows: each with whether it was met. */
export function durableTargets(rows: readonly DurableRow[]): { target: string; value: number; met: boolean }[] {
  const out: { target: string; value: number; met: boolean }[] = [];
  for (const row of rows) {
    if (row.server !== "project") continue;
    const name = `${OP_NAMES[row.op]} on ${STORE_NAMES[row.store]}`;
    if (row.store === "sqlite" && row.ratio_memory !== undefined) {
      const floor = row.op === "client_credentials" || isBearer(row.op) ? 0.7 : 0.4;
      out.push({ target: `${name} ≥ ${floor} × memory`, value: row.ratio_memory, met: row.ratio_memory >= floor });
    }
    if ((row.store === "postgres" || row.store === "redis") && row.of_limit !== undefined) {
      out.push({ target: `${name} ≥ 0.5 × the database's limit`, value: row.of_limit, met: row.of_limit >= 0.5 });
    }
    for (const [peer, ratio] of Object.entries(row.vs ?? {})) {
      out.push({ target: `${name} ahead of ${peer}`, value: ratio, met: ratio > 1 });
    }
  }
  return out;
}
