/**
 * `npm run bench:jwt`: the JWT access-token rows (see `jwt_rows.ts`) on Node, Deno and Bun, each in its own
 * process, and on Node once more with the servers on PostgreSQL (a server started for the run on 127.0.0.1,
 * fsync off), the memory store measured in the same process in alternating rounds. Prints one table with the
 * ratios the issue sets as targets, and writes JSON to `.artifacts/bench/jwt-latest.json`.
 *
 *   tsx test/bench/jwt.ts [--seconds 2] [--rounds 2] [--warmup 1] [--inflight 32] [--runtimes node,deno,bun]
 *                         [--no-postgres]
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import pg from "pg";
import { memoryStorage, sqlStorage, type Storage } from "../../mod.ts";
import { started, startPostgres } from "../support/databases.ts";
import { flags } from "./inprocess.ts";
import { JWT_ROWS, type JwtRow, ROW_TITLES, type RowResult, runJwtRows } from "./jwt_rows.ts";

type Results = Record<string, Partial<Record<JwtRow, RowResult>>>;

const ROOT = join(import.meta.dirname, "../..");
const f = flags();
const common = ["--seconds", f.get("seconds") ?? "2", "--rounds", f.get("rounds") ?? "2", "--warmup", f.get("warmup") ?? "1", "--inflight", f.get("inflight") ?? "32"];
const runtimes = (f.get("runtimes") ?? "node,deno,bun").split(",");
const COMMANDS: Record<string, [string, string[]]> = {
  node: [process.execPath, ["--import", "tsx", "test/bench/jwt_rows.ts"]],
  deno: [join(ROOT, "node_modules/.bin/deno"), ["run", "--allow-env", "test/bench/jwt_rows.ts"]],
  bun: [join(ROOT, "node_modules/.bin/bun"), ["test/bench/jwt_rows.ts"]],
};

const all: Record<string, Results> = {};
const load = () => {
  const text = spawnSync("cat", ["/proc/loadavg"], { encoding: "utf8" }).stdout ?? "";
  return text.split(" ").slice(0, 3).join(" ");
};
const loadBefore = load();
for (const runtime of runtimes) {
  const [command, args] = COMMANDS[runtime] ?? [];
  if (command === undefined) throw new Error(`Unknown runtime "${runtime}"`);
  const child = spawnSync(command, [...args!, ...common], { cwd: ROOT, encoding: "utf8", timeout: 600_000 });
  if (child.status !== 0) throw new Error(`${runtime} rows failed:\n${child.stderr}`);
  all[runtime] = (JSON.parse(child.stdout.trim().split("\n").at(-1)!) as { results: Results }).results;
}

if (f.get("no-postgres") === undefined) {
  const database = await startPostgres();
  if (started(database)) {
    const pool = new pg.Pool({ connectionString: database.url, max: 8 });
    const names = new Map<string, string>();
    const named = (t: string) => names.get(t) ?? names.set(t, `oauth_${names.size}`).get(t)!;
    const postgres: Storage = sqlStorage({ dialect: "postgres", query: (t, p) => pool.query({ text: t, values: p, name: named(t) }).then((r) => r.rows) });
    try {
      const merged: Record<string, Results[]> = { memory: [], postgres: [] };
      const rounds = Number(f.get("rounds") ?? 2);
      for (let r = 0; r < rounds; r++) {
        for (const store of r % 2 === 0 ? ["memory", "postgres"] : ["postgres", "memory"]) {
          merged[store]!.push(await runJwtRows({
            seconds: Number(f.get("seconds") ?? 2), rounds: 1, warmup: r === 0 ? Number(f.get("warmup") ?? 1) : 0.2,
            inflight: Number(f.get("inflight") ?? 32), storage: store === "memory" ? memoryStorage() : postgres,
          }));
        }
      }
      all["node, memory (same process as PostgreSQL)"] = combine(merged.memory!);
      all["node, PostgreSQL"] = combine(merged.postgres!);
    } finally {
      await pool.end();
      await database.stop();
    }
  } else {
    console.error(`PostgreSQL rows skipped: ${database.skip}`);
  }
}

/** Sums the rounds of one store: counts and time, store calls per operation. */
function combine(rounds: Results[]): Results {
  const out: Results = {};
  for (const inflight of Object.keys(rounds[0]!)) {
    const rows: Partial<Record<JwtRow, RowResult>> = {};
    for (const row of JWT_ROWS) {
      if (rounds[0]![inflight]![row] === undefined) continue;
      const parts = rounds.map((r) => r[inflight]![row]!);
      const count = parts.reduce((n, p) => n + p.count, 0);
      const seconds = parts.reduce((n, p) => n + p.count / p.rate, 0);
      rows[row] = {
        rate: Math.round(count / seconds),
        ...(parts.at(-1)!.p50 === undefined ? {} : { p50: parts.at(-1)!.p50!, p99: parts.at(-1)!.p99! }),
        count,
        errors: parts.reduce((n, p) => n + p.errors, 0),
        store_calls: Math.round((parts.reduce((n, p) => n + p.store_calls * p.count, 0) / count) * 1000) / 1000,
      };
    }
    out[inflight] = rows;
  }
  return out;
}

const fmt = (n: number) => n.toLocaleString("en-US");
const lines: string[] = [];
for (const [where, results] of Object.entries(all)) {
  const modes = Object.keys(results);
  lines.push("", `### ${where}`, "", `| row | ${modes.map((m) => `${m} in flight /s`).join(" | ")} | p50 ms | store calls/op |`, `|---|${modes.map(() => "---:").join("|")}|---:|---:|`);
  for (const row of JWT_ROWS) {
    const one = results[modes[0]!]![row];
    if (one === undefined) continue;
    lines.push(`| ${ROW_TITLES[row]} | ${modes.map((m) => fmt(results[m]![row]!.rate)).join(" | ")} | ${one.p50 ?? ""} | ${one.store_calls} |`);
  }
  for (const m of modes) {
    const r = results[m]!;
    const ratio = (a: JwtRow, b: JwtRow) => (r[a] === undefined ? "-" : (r[a].rate / r[b]!.rate).toFixed(2));
    lines.push(
      "",
      `${m} in flight: JWT/opaque issuance ${ratio("cc_jwt", "cc_opaque")} (EdDSA ${ratio("cc_jwt_eddsa", "cc_opaque")}; target ≥ 0.5), ` +
        `local verification/Bearer ${ratio("local_jwt", "bearer_opaque")} (every signature checked: ${ratio("local_jwt_uncached", "bearer_opaque")}; target ≥ 0.5)`,
    );
  }
}
const memory = all["node, memory (same process as PostgreSQL)"];
const postgres = all["node, PostgreSQL"];
if (memory && postgres) {
  const ratio = (m: string) => (postgres[m]!.local_jwt!.rate / memory[m]!.bearer_opaque!.rate).toFixed(2);
  const bearer = (m: string) => (postgres[m]!.bearer_opaque!.rate / memory[m]!.bearer_opaque!.rate).toFixed(3);
  lines.push(
    "",
    `PostgreSQL deployment: local verification ${Object.keys(postgres).map((m) => `${ratio(m)} (${m} in flight)`).join(", ")} of the in-memory Bearer rate, ` +
      `${postgres["1"]!.local_jwt!.store_calls} store calls per verification; the Bearer check there: ${Object.keys(postgres).map((m) => `${bearer(m)} (${m})`).join(", ")}, ` +
      `${postgres["1"]!.bearer_opaque!.store_calls} store calls each.`,
  );
}
lines.push("", `1-minute load before ${loadBefore}, after ${load()}.`);
console.log(lines.join("\n"));
const out = join(ROOT, ".artifacts/bench");
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "jwt-latest.json"), JSON.stringify({ date: new Date().toISOString(), load: [loadBefore, load()], results: all }, null, 2));
