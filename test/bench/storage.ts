/**
 * Storage rows of `npm run bench`: the in-process token scenarios on the memory store, on SQLite (node:sqlite,
 * a WAL file) and on PostgreSQL (pg, a real server started for the run on 127.0.0.1 with fsync off), in one
 * process, so that each store's rate is divided by the memory store's measured in the same run. Node only;
 * prints one line of JSON, which `run.ts` collects.
 *
 *   node test/bench/storage.ts [--seconds 2] [--rounds 2] [--warmup 1] [--stores memory,sqlite,postgres]
 *                              [--inflight 32] [--pool 8]
 *
 * Rounds alternate the order of the stores, so drift hits all alike. Each store is measured twice:
 * - one call in flight (`results`), as in the other in-process rows: the latency view, where a database row is
 *   bounded by its round trips;
 * - `--inflight N` calls in flight (`inflight.results`, default 32, the connections of the HTTP rows; 0 leaves
 *   them out), as a server under load has them: the throughput view, where round trips overlap over the pool's
 *   `--pool` connections (PostgreSQL; default 8). The storage goals of issue 10 are judged on these rows.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import process from "node:process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { memoryStorage, sqlStorage, type Storage } from "../../mod.ts";
import { started, startPostgres } from "../support/databases.ts";
import { createBenchServer } from "./fixture.ts";
import { flags, runInProcess } from "./inprocess.ts";
import { runInflight } from "./inflight.ts";
import type { Measurement } from "./stats.ts";

const SCENARIOS = ["client_credentials", "authorization_code", "refresh_token", "bearer"] as const;
type Store = "memory" | "sqlite" | "postgres";

const f = flags();
const seconds = Number(f.get("seconds") ?? 2);
const rounds = Number(f.get("rounds") ?? 2);
const warmup = Number(f.get("warmup") ?? 1);
const wanted = (f.get("stores") ?? "memory,sqlite,postgres").split(",") as Store[];
const inflight = Number(f.get("inflight") ?? 32);
const poolSize = Number(f.get("pool") ?? 8);

const dir = mkdtempSync(join(tmpdir(), "oauth-bench-"));
const cleanups: (() => Promise<void> | void)[] = [() => rmSync(dir, { recursive: true, force: true })];
const stores = new Map<Store, Storage>();
const skipped: Record<string, string> = {};
for (const name of wanted) {
  if (name === "memory") stores.set(name, memoryStorage());
  if (name === "sqlite") {
    const db = new DatabaseSync(join(dir, "bench.db"));
    db.exec("PRAGMA busy_timeout = 5000; PRAGMA page_size = 2048; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
    // The README's one-liner, with a statement cache (node:sqlite has none of its own).
    const cache = new Map<string, ReturnType<typeof db.prepare>>();
    const prepare = (t: string) => cache.get(t) ?? cache.set(t, db.prepare(t)).get(t)!;
    stores.set(name, sqlStorage({ dialect: "sqlite", query: (t, p) => prepare(t).all(...(p as never[])) }));
    cleanups.unshift(() => db.close());
  }
  if (name === "postgres") {
    const server = await startPostgres();
    if (!started(server)) {
      skipped[name] = server.skip;
      continue;
    }
    const pool = new pg.Pool({ connectionString: server.url, max: poolSize });
    // The README's pg one-liner with named statements, pg's statement cache (as the SQLite executor above
    // caches its prepared statements): PostgreSQL then parses and plans each distinct statement once per
    // connection instead of on every call, which halves the p50 of the one-statement rotation.
    const names = new Map<string, string>();
    const named = (t: string) => names.get(t) ?? names.set(t, `oauth_${names.size}`).get(t)!;
    stores.set(name, sqlStorage({ dialect: "postgres", query: (t, p) => pool.query({ text: t, values: p, name: named(t) }).then((r) => r.rows) }));
    cleanups.unshift(() => pool.end(), () => server.stop());
  }
}

// Interrupted (run.ts stops a child that lingers): stop the database server too, rather than orphan it.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    for (const cleanup of cleanups) await Promise.resolve(cleanup()).catch(() => {});
    process.exit(130);
  });
}

try {
  const servers = new Map<Store, Awaited<ReturnType<typeof createBenchServer>>>();
  for (const [name, storage] of stores) servers.set(name, await createBenchServer(storage));
  const merged = new Map<string, Measurement[]>();
  const mergedInflight = new Map<string, Measurement[]>();
  const add = (into: Map<string, Measurement[]>, name: Store, results: Record<string, Measurement>) => {
    for (const [scenario, m] of Object.entries(results)) {
      const key = `${name}/${scenario}`;
      into.set(key, [...(into.get(key) ?? []), m]);
    }
  };
  const order = [...servers.keys()];
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 === 0 ? order : [...order].reverse()) {
      const server = servers.get(name)!;
      add(merged, name, await runInProcess({ seconds, warmup: round === 0 ? warmup : 0.2, rounds: 1, only: SCENARIOS, server }));
      if (inflight > 0) {
        add(mergedInflight, name, await runInflight({ server, inflight, seconds, warmup: round === 0 ? warmup : 0.2, only: SCENARIOS }));
      }
    }
  }
  console.log(JSON.stringify({
    results: summarise(merged),
    ...(inflight > 0 ? { inflight: { count: inflight, pool: poolSize, results: summarise(mergedInflight) } } : {}),
    skipped,
  }));
} finally {
  for (const cleanup of cleanups) await cleanup();
}

/** One measurement per store and scenario from the rounds' measurements. */
function summarise(merged: Map<string, Measurement[]>): Record<string, Record<string, Measurement>> {
  const results: Record<string, Record<string, Measurement>> = {};
  for (const [key, ms] of merged) {
    const [store, scenario] = key.split("/") as [string, string];
    const count = ms.reduce((n, m) => n + m.count, 0);
    const secs = ms.reduce((n, m) => n + m.seconds, 0);
    (results[store] ??= {})[scenario] = {
      rate: Math.round(count / secs),
      // Percentiles of the last round (the rounds' samples are not kept apart).
      p50: ms.at(-1)!.p50,
      p99: ms.at(-1)!.p99,
      count,
      errors: ms.reduce((n, m) => n + m.errors, 0),
      seconds: Math.round(secs * 100) / 100,
    };
  }
  return results;
}
