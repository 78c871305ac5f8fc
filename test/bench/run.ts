/**
 * `npm run bench`: every benchmark in one invocation, a table on stdout, JSON in `.artifacts/bench/`.
 *
 *   tsx test/bench/run.ts [--seconds 5] [--rounds 2] [--warmup 2] [--inprocess-seconds 2]
 *                         [--runtimes node,deno,bun] [--connections 32] [--no-http] [--no-inprocess]
 *                         [--only SCENARIOS] [--profile] [--node-tsx] [--smoke] [--no-storage] [--out DIR]
 *                         [--stored 0,100000,1000000] [--duration 3] [--trace-gc] [--against DIR]
 *
 * In-process rows run `test/bench/inprocess.ts` on each runtime as a child process; on Node, the bench's entry
 * points are first compiled with tsc (`test/bench/tsconfig.json`), so Node runs JavaScript as npm users do.
 * HTTP rows start one bench server per row and round (`serve_{node,deno,bun}.ts`) on 127.0.0.1 and load it
 * with autocannon from this process; rounds alternate the order of the rows. Every load run is bounded in time (or in requests, for the
 * code-exchange warm-up, with a time cap), talks only to loopback, and every child is stopped at the end.
 *
 * `--stored N,...` adds the stored-token rows: per runtime and store size, one server whose memory store is
 * pre-filled with N records before it listens (see stored.ts), then every token operation over HTTP on it
 * (client_credentials, authorization_code + PKCE, refresh_token rotation, Bearer verification, introspection),
 * `--duration` seconds each after a 1 s warm-up, with p99 and max latency against the issue's goal (p99 < 10 ms,
 * max < 25 ms at 32 connections). `npm run bench:stored` runs only those rows.
 *
 * `--against DIR` adds, beside each HTTP token row, the same row on the bench servers of another checkout of this
 * repository (a `git worktree` of an earlier commit, say), started and loaded by this same harness in the same
 * rounds, so that before and after are measured in one run.
 *
 * `--smoke` is the CI check: Node only, a few seconds per row, and a non-zero exit when in-process
 * client_credentials falls below 0.45 of the bare in-process handler measured in the same run (a ratio, never
 * an absolute time: the median over 16 rounds of the two taking turns every 16 calls, see verdict.ts), or when
 * any request failed.
 *
 * @module
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import {
  BACKEND_SECRET,
  CLIENT_CREDENTIALS_BODY,
  codeExchangeBody,
  type ReadyLine,
  refreshBody,
} from "./fixture.ts";
import { liveStoredIndex, storedToken } from "./stored.ts";
import { DURABLE_OPS, type DurableOp, type DurableRow, type DurableServer, type DurableStore, durableTable, durableTargets, median, runDurable } from "./durable.ts";
import { firstLine, load, type LoadRequest, loadOptions, loadRequests, type LoadResult, stop, withCpu } from "./load.ts";
import { type Measurement, round, Samples } from "./stats.ts";
import { isGate, targetWord, verdict } from "./verdict.ts";

type Runtime = "node" | "deno" | "bun";
type HttpScenario = "bare" | "bare-fetch" | "client_credentials" | "authorization_code";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const ROOT = resolve(HERE, "../..");
const BIN = { deno: join(ROOT, "node_modules/.bin/deno"), bun: join(ROOT, "node_modules/.bin/bun") };

// ---------------------------------------------------------------------------------------------------------
// Options

function parseFlags(argv: string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--")) throw new Error(`Cannot parse arguments: unexpected "${arg}"`);
    const next = argv[i + 1];
    map.set(arg.slice(2), next !== undefined && !next.startsWith("--") ? (i++, next) : "true");
  }
  return map;
}

const flags = parseFlags(process.argv.slice(2));
const smoke = flags.has("smoke");
const num = (name: string, fallback: number): number => {
  const value = Number(flags.get(name) ?? fallback);
  if (!(value > 0)) throw new Error(`--${name} must be a positive number`);
  return value;
};
const options = {
  seconds: num("seconds", smoke ? 2 : 5),
  rounds: num("rounds", smoke ? 1 : 2),
  warmup: num("warmup", smoke ? 1 : 2),
  inprocessSeconds: num("inprocess-seconds", smoke ? 0.5 : 2),
  inprocessRounds: num("inprocess-rounds", smoke ? 16 : 2),
  connections: num("connections", 32),
  runtimes: (flags.get("runtimes") ?? (smoke ? "node" : "node,deno,bun")).split(",") as Runtime[],
  http: !flags.has("no-http"),
  inprocess: !flags.has("no-inprocess"),
  /** The storage rows (memory, SQLite, PostgreSQL), Node only; not in --smoke. */
  storage: !flags.has("no-storage") && !smoke,
  /**
   * The durable-store rows (durable.ts): this project, the peers and each database's limit over HTTP on memory,
   * SQLite, PostgreSQL and Redis; Node only; not in --smoke. `--durable-servers` and `--durable-stores` narrow them.
   */
  durable: !flags.has("no-durable") && !smoke,
  durableServers: (flags.get("durable-servers") ?? "project,node-oauth,oidc-provider,limit").split(",") as DurableServer[],
  durableStores: (flags.get("durable-stores") ?? "memory,sqlite,postgres,redis").split(",") as DurableStore[],
  durableSeconds: num("durable-seconds", 3),
  profile: flags.has("profile"),
  /** Each server child logs its collections (`--trace-gc` on V8, `BUN_JSC_logGC=1` on Bun), shown on stderr. */
  traceGc: flags.has("trace-gc"),
  /** Run the Node rows through tsx instead of the tsc build. */
  nodeTsx: flags.has("node-tsx"),
  /**
   * The stored-token rows: store sizes to pre-fill (`--stored 0,100000,1000000`), each on a server of its own
   * per runtime, every token operation over HTTP on it. Off by default; `--smoke` runs 10,000 on Node.
   */
  stored: (flags.get("stored") ?? (smoke ? "10000" : "")).split(",").filter((n) => n !== "").map((n) => {
    const count = Number(n);
    if (!Number.isSafeInteger(count) || count < 0 || count > 5_000_000) throw new Error(`--stored takes counts: "${n}"`);
    return count;
  }),
  /** Seconds measured per stored-token row, after a 1 s warm-up. */
  duration: num("duration", smoke ? 1 : 3),
  /** Another checkout whose bench servers run the HTTP token rows too, in the same rounds (before and after). */
  against: flags.has("against") ? resolve(flags.get("against")!) : undefined,
  /** Scenarios to run (in-process and HTTP), default all. */
  only: flags.get("only")?.split(","),
  out: resolve(ROOT, flags.get("out") ?? ".artifacts/bench"),
};
for (const r of options.runtimes) if (!["node", "deno", "bun"].includes(r)) throw new Error(`Unknown runtime "${r}"`);
loadOptions.connections = options.connections;
const PROFILES = join(options.out, "profiles");

// ---------------------------------------------------------------------------------------------------------
// Child processes

const children = new Set<ChildProcess>();
function stopAll(): void {
  for (const child of children) child.kill("SIGKILL");
}
process.on("exit", stopAll);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    stopAll();
    process.exit(130);
  });
}

/** Where `test/bench/tsconfig.json` compiles the Node entry points. */
const buildOf = (root: string): string => join(root, ".artifacts/bench/build/test/bench");

/**
 * Compiles the Node entry points with tsc, as `npm run build` compiles the package: Node then runs plain
 * JavaScript, as an npm user does, rather than tsx's output (whose keepNames wrapper costs a call per closure).
 */
function buildForNode(root: string): void {
  execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(root, "test/bench/tsconfig.json")], {
    cwd: root,
    stdio: "inherit",
  });
}

/** The command that runs a TypeScript file of this folder (of `root`'s bench folder) on a runtime. */
function command(runtime: Runtime, file: string, args: string[], exposeGc: boolean, root: string): [string, string[]] {
  const path = join(root, "test/bench", file);
  const v8 = [...(exposeGc ? ["--expose-gc"] : []), ...(options.traceGc ? ["--trace-gc"] : [])];
  if (runtime === "node") {
    const profile = options.profile ? ["--cpu-prof", `--cpu-prof-dir=${PROFILES}`] : [];
    if (options.nodeTsx) return [process.execPath, ["--import", "tsx", ...profile, ...v8, path, ...args]];
    return [process.execPath, [...profile, ...v8, join(buildOf(root), file.replace(/\.ts$/, ".js")), ...args]];
  }
  if (runtime === "deno") return [BIN.deno, ["run", "--allow-net", ...(v8.length > 0 ? [`--v8-flags=${v8.join(",")}`] : []), path, ...args]];
  return [BIN.bun, [path, ...args]];
}

/** Starts a bench entry point; `exposeGc` lets it collect garbage on demand (the stored servers, once filled). */
function start(runtime: Runtime, file: string, args: string[], exposeGc = false, root = ROOT): ChildProcess {
  const [cmd, argv] = command(runtime, file, args, exposeGc, root);
  const env = options.traceGc && runtime === "bun" ? { ...process.env, BUN_JSC_logGC: "1" } : process.env;
  const child = spawn(cmd, argv, { cwd: root, env, stdio: ["ignore", "pipe", "inherit"] });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}


// ---------------------------------------------------------------------------------------------------------
// In-process rows

interface InProcessOutput {
  runtime: { name: Runtime; version: string };
  results: Record<string, Measurement>;
}

async function inProcess(runtime: Runtime, only: string[]): Promise<InProcessOutput> {
  const child = start(runtime, "inprocess.ts", [
    "--seconds", String(options.inprocessSeconds),
    "--warmup", String(Math.min(options.warmup, 1)),
    "--rounds", String(options.inprocessRounds),
    "--only", only.join(","),
  ]);
  const timeout = (only.length * (options.inprocessSeconds * options.inprocessRounds + 2) + 120) * 1000;
  const output = await firstLine<InProcessOutput>(child, timeout);
  // It exits by itself once done (which lets `--cpu-prof` write its profile); stop it if it lingers.
  await Promise.race([new Promise((resolve) => child.once("exit", resolve)), new Promise((resolve) => setTimeout(resolve, 5000))]);
  await stop(child);
  return output;
}

// ---------------------------------------------------------------------------------------------------------
// HTTP rows

const SERVE_FILE: Record<Runtime, string> = { node: "serve_node.ts", deno: "serve_deno.ts", bun: "serve_bun.ts" };


async function codes(control: number, n: number): Promise<string[]> {
  // In batches: one request for 180k codes outlasts Bun.serve's 10 s idle timeout once the server is fast.
  const all: string[] = [];
  while (all.length < n) {
    const response = await fetch(`http://127.0.0.1:${control}/codes?n=${Math.min(20_000, n - all.length)}`);
    if (!response.ok) throw new Error(`Cannot get codes: ${response.status}`);
    all.push(...((await response.json()) as string[]));
  }
  return all;
}

/** One round of one HTTP row, on a fresh server process of this checkout or of `root`'s. */
async function httpRound(runtime: Runtime, scenario: HttpScenario, root: string): Promise<LoadResult> {
  const mode = scenario === "bare" ? "bare" : scenario === "bare-fetch" ? "bare-fetch" : "oauth";
  const child = start(runtime, SERVE_FILE[runtime], ["--mode", mode], false, root);
  try {
    const ready = await firstLine<ReadyLine>(child, 60_000);
    if (scenario !== "authorization_code") {
      // The bare servers read the same form body as the token endpoint, and ignore it.
      await load(ready.port, { seconds: options.warmup }, CLIENT_CREDENTIALS_BODY);
      return await withCpu(child, () => load(ready.port, { seconds: options.seconds }, CLIENT_CREDENTIALS_BODY));
    }
    // Code exchange: each code is sent once. A warm-up on a fixed pool gives the rate, which sizes the
    // measured pool; should the server outrun it, the run stops early and its rate stays exact.
    const control = ready.control!;
    let pool = await codes(control, smoke ? 2000 : 10_000);
    const next = (): string | undefined => {
      const code = pool.pop();
      return code === undefined ? undefined : codeExchangeBody(code);
    };
    const warm = await load(ready.port, { amount: pool.length }, next);
    const rate = warm.count / warm.seconds;
    // Twice the warm-up rate: a warmed-up server runs faster than its warm-up.
    pool = await codes(control, Math.ceil(rate * options.seconds * 2) + options.connections * 4);
    return await withCpu(child, () => load(ready.port, { seconds: options.seconds }, next));
  } finally {
    await stop(child);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Stored-token rows

type StoredScenario = "client_credentials" | "authorization_code" | "refresh_token" | "bearer" | "introspection";
const STORED_SCENARIOS: StoredScenario[] = ["client_credentials", "authorization_code", "refresh_token", "bearer", "introspection"];

/** A stored-token server as measured: its rows, and what pre-filling it took. */
interface StoredServer {
  results: Map<StoredScenario, LoadResult>;
  prefill: ReadyLine["prefill"];
  /** Resident memory of the server once filled, and after the last row (MB, Linux). */
  rss_mb: [number | undefined, number | undefined];
}

/** Resident set size of a process in MB, from /proc; undefined where there is none. */
function rssMB(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? undefined : Math.round(Number(kb) / 1024);
  } catch {
    return undefined;
  }
}

async function controlList(control: number, what: "codes" | "refresh" | "access", n: number): Promise<string[]> {
  const response = await fetch(`http://127.0.0.1:${control}/${what}?n=${n}`);
  if (!response.ok) throw new Error(`Cannot get ${what}: ${response.status}`);
  return (await response.json()) as string[];
}

const INTROSPECTION_AUTH = `client_id=bench-backend&client_secret=${encodeURIComponent(BACKEND_SECRET)}`;

/**
 * One server pre-filled with `stored` records, and every wanted token operation on it in turn: a 1 s warm-up,
 * then `--duration` seconds measured. Codes are issued and refresh chains started through the control port
 * between runs, so the port under load serves the token endpoint (and the resource port the Bearer check) only.
 */
async function storedServer(runtime: Runtime, stored: number, scenarios: StoredScenario[]): Promise<StoredServer> {
  const child = start(runtime, SERVE_FILE[runtime], ["--mode", "stored", "--stored", String(stored)], true);
  try {
    // Pre-filling 1M records takes seconds; 30 s per million more than the usual start-up allows.
    const ready = await firstLine<ReadyLine>(child, 60_000 + stored * 0.03);
    const control = ready.control!;
    const filledRss = rssMB(child.pid);
    process.stderr.write(`  ${runtime}, ${stored.toLocaleString("en-US")} stored: filled in ${ready.prefill?.ms} ms` +
      (filledRss === undefined ? "" : `, ${filledRss} MB resident`) + "\n");
    // Live tokens to present: random ones across the pre-filled store, or a few issued now when it holds none.
    const issued = liveStoredIndex(0, stored) === undefined ? await controlList(control, "access", 64) : [];
    const liveToken = (): string => {
      const i = liveStoredIndex(Math.random(), stored);
      return i === undefined ? issued[Math.floor(Math.random() * issued.length)]! : storedToken("a", i);
    };
    const results = new Map<StoredScenario, LoadResult>();
    for (const scenario of scenarios) {
      process.stderr.write(`  ${runtime}, ${stored.toLocaleString("en-US")} stored: ${scenario}...\n`);
      const warm = { seconds: 1 };
      const measured = { seconds: options.duration };
      let result: LoadResult;
      if (scenario === "client_credentials") {
        await loadRequests(ready.port, warm, { body: CLIENT_CREDENTIALS_BODY });
        result = await withCpu(child, () => loadRequests(ready.port, measured, { body: CLIENT_CREDENTIALS_BODY }));
      } else if (scenario === "authorization_code") {
        // Each code is sent once: the warm-up's rate sizes the measured pool (capped; a pool that runs dry ends
        // the run early, and its rate stays exact). As in the HTTP rows, a warm-up of 10,000 codes and twice its
        // rate: with 2,000 codes and 1.5 times, the warm-up ran cold, and every measured pool ran dry after about
        // 1 s, measuring the server while it still collected the garbage of issuing those codes.
        let pool = await controlList(control, "codes", smoke ? 2000 : 10_000);
        const next = (): LoadRequest | undefined => {
          const code = pool.pop();
          return code === undefined ? undefined : { body: codeExchangeBody(code) };
        };
        const w = await loadRequests(ready.port, { amount: pool.length }, next);
        const want = Math.ceil((w.count / w.seconds) * options.duration * 2) + options.connections * 4;
        pool = await controlList(control, "codes", Math.min(want, 100_000));
        result = await withCpu(child, () => loadRequests(ready.port, measured, next));
      } else if (scenario === "refresh_token") {
        // Chains of rotations: each answer's refresh token goes back into the queue for the next request. Twice
        // as many chains as connections, started afresh for each run (a run's last answers are not read).
        const run = async (bounds: { seconds: number }): Promise<LoadResult> => {
          const queue = await controlList(control, "refresh", options.connections * 2);
          return loadRequests(ready.port, bounds, () => {
            const token = queue.shift();
            return token === undefined ? undefined : { body: refreshBody(token) };
          }, (status, body) => {
            if (status === 200) queue.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
          });
        };
        await run(warm);
        result = await withCpu(child, () => run(measured));
      } else if (scenario === "bearer") {
        const port = ready.resource!;
        const next = (): LoadRequest => ({ method: "GET", path: "/", headers: { authorization: `Bearer ${liveToken()}` } });
        await loadRequests(port, warm, next);
        result = await withCpu(child, () => loadRequests(port, measured, next));
      } else {
        const next = (): LoadRequest => ({ path: "/introspect", body: `token=${liveToken()}&${INTROSPECTION_AUTH}` });
        await loadRequests(ready.port, warm, next);
        result = await withCpu(child, () => loadRequests(ready.port, measured, next));
      }
      if (result.errors > 0) process.stderr.write(`  failures: ${JSON.stringify(result.statuses)}\n`);
      results.set(scenario, result);
    }
    return { results, prefill: ready.prefill, rss_mb: [filledRss, rssMB(child.pid)] };
  } finally {
    await stop(child);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Table

interface Row {
  section: "in-process" | "http" | "storage" | "stored";
  runtime: Runtime;
  scenario: string;
  label: string;
  result: Measurement;
  /**
   * Rate divided by the bare baseline of the same runtime and section (storage rows: by the memory store); for
   * in-process rows the median of the per-round ratios.
   */
  ratio?: number;
  /** In-process rows: each round's ratio to the bare handler, in round order. */
  round_ratios?: number[];
  /** `latency`: p99 under `value` ms and max under `max` ms (the stored-token rows). */
  target?: { kind: "ratio" | "rate" | "latency"; value: number; max?: number; met: boolean };
  /** Stored-token rows: records pre-filled in the server's store. */
  stored?: number;
  /** HTTP rows of `--against`: the other checkout's path (no target: only this checkout's rows are judged). */
  against?: string;
}

const LABELS: Record<string, string> = {
  bare: "bare handler (baseline)",
  "bare-fetch": "plain fetch adapter, constant JSON",
  client_credentials: "client_credentials",
  authorization_code: "authorization_code + PKCE",
  refresh_token: "refresh_token rotation",
  bearer: "Bearer verification",
  introspection: "introspection",
};
const HTTP_LABELS: Record<string, string> = {
  node: "node:http",
  deno: "Deno.serve",
  bun: "Bun.serve",
};

/** The targets of the issue, by section, runtime and scenario. */
function targetOf(row: Row): Row["target"] {
  if (row.against !== undefined) return undefined;
  const ratio = (value: number) => ({ kind: "ratio" as const, value, met: (row.ratio ?? 0) >= value });
  const rate = (value: number) => ({ kind: "rate" as const, value, met: row.result.rate >= value });
  if (row.section === "stored") {
    // Issue 14 item 7: at 32 connections, every token operation at every store size.
    return { kind: "latency", value: 10, max: 25, met: row.result.p99 < 10 && (row.result.max ?? Infinity) < 25 };
  }
  if (row.section === "storage") {
    // Issue 10: ratios to the memory store measured in the same run, judged on the rows with many calls in
    // flight (a server's throughput); the one-in-flight rows are the latency view.
    const store = / on (SQLite|PostgreSQL), \d+ in flight$/.exec(row.label)?.[1];
    if (store === "SQLite" && row.scenario === "client_credentials") return ratio(0.5);
    if (store === "SQLite" && row.scenario === "refresh_token") return ratio(0.4);
    if (store === "PostgreSQL" && row.scenario === "client_credentials") return ratio(0.25);
    return undefined;
  }
  if (row.section === "http") {
    // Issue 14 item 1: client_credentials over HTTP at 0.6 of the runtime's bare server, Node included.
    if (row.scenario === "client_credentials") return ratio(0.6);
    if (row.scenario === "authorization_code" && row.runtime === "node") return ratio(0.35);
    return undefined;
  }
  if (row.scenario === "client_credentials") {
    if (row.runtime === "node") return ratio(0.5);
    if (row.runtime === "bun") return rate(50_000);
  }
  if (row.scenario === "bearer") {
    if (row.runtime === "node") return rate(100_000);
    if (row.runtime === "bun") return rate(200_000);
  }
  return undefined;
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

function table(rows: Row[]): string {
  const lines: string[] = [];
  const head = ["section", "runtime", "scenario", "rate/s", "p50 ms", "p99 ms", "max ms", "× bare", "cpu µs/req", "target"];
  const body = rows.map((row) => [
    row.section,
    row.runtime,
    row.label,
    fmt(row.result.rate),
    row.result.p50.toFixed(3),
    row.result.p99.toFixed(3),
    row.result.max === undefined ? "" : row.result.max.toFixed(1),
    row.ratio === undefined ? "" : row.ratio.toFixed(2),
    (row.result.server_cpu_us === undefined ? "" : `${row.result.server_cpu_us.toFixed(0)} + ${row.result.client_cpu_us!.toFixed(0)}`) +
    (row.result.server_busy === undefined ? "" : `, server ${Math.round(row.result.server_busy * 100)} % busy`),
    row.target === undefined
      ? (row.result.errors > 0 ? `${row.result.errors} FAILED` : "")
      : `${
        row.target.kind === "ratio"
          ? "≥ " + row.target.value.toFixed(2)
          : row.target.kind === "latency"
          ? `p99 < ${row.target.value}, max < ${row.target.max}`
          : "≥ " + fmt(row.target.value)
      } ${
        targetWord(row.target.met, smoke, isGate(row))
      }${row.result.errors > 0 ? `, ${row.result.errors} FAILED` : ""}`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i >= 3 && i <= 7 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd();
  lines.push(line(head), widths.map((w) => "-".repeat(w)).join("  "));
  for (const b of body) lines.push(line(b));
  return lines.join("\n");
}

function version(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: "utf8" }).split("\n")[0]!.trim();
  } catch {
    return "unavailable";
  }
}

// ---------------------------------------------------------------------------------------------------------
// Main

async function main(): Promise<number> {
  const began = new Date();
  const machine = {
    date: began.toISOString(),
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    memory_gb: round(totalmem() / 2 ** 30, 1),
    /** 1-minute load average at the start and the end: other work on the machine skews every figure. */
    load: [round(loadavg()[0]!, 2)],
    node: process.version,
    deno: options.runtimes.includes("deno") ? version(BIN.deno, ["--version"]) : undefined,
    bun: options.runtimes.includes("bun") ? version(BIN.bun, ["--version"]) : undefined,
  };
  console.log(`oauth2-fetch-server bench, ${machine.date}: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}` +
    (machine.deno ? `, ${machine.deno}` : "") + (machine.bun ? `, Bun ${machine.bun}` : ""));
  console.log(`in-process: ${options.inprocessRounds} × ${options.inprocessSeconds} s per row; ` +
    `HTTP: ${options.rounds} × ${options.seconds} s per row after ${options.warmup} s warm-up, ` +
    `autocannon, ${options.connections} connections on 127.0.0.1\n`);
  if (options.profile) mkdirSync(PROFILES, { recursive: true });
  if (options.runtimes.includes("node") && !options.nodeTsx) {
    buildForNode(ROOT);
    if (options.against !== undefined && options.http) buildForNode(options.against);
  }

  const rows: Row[] = [];
  if (options.inprocess) {
    const only = (smoke ? ["bare", "client_credentials"] : ["bare", "client_credentials", "authorization_code", "refresh_token", "bearer"])
      .filter((name) => name === "bare" || options.only === undefined || options.only.includes(name));
    for (const runtime of options.runtimes) {
      process.stderr.write(`in-process on ${runtime}...\n`);
      const { results } = await inProcess(runtime, only);
      const bare = results.bare!;
      for (const scenario of only) {
        const result = results[scenario]!;
        // The median over rounds of the ratio within each round (the two took turns every few ms): what the
        // smoke gate judges, since other work on the machine moves a round's two rates together.
        const rounds = (result.round_rates ?? []).map((rate, r) => rate / bare.round_rates![r]!);
        const ratio = rounds.length > 0 ? median(rounds) : result.rate / bare.rate;
        rows.push({
          section: "in-process", runtime, scenario, label: LABELS[scenario]!, result, ratio,
          ...(rounds.length > 0 ? { round_ratios: rounds.map((x) => round(x, 3)) } : {}),
        });
      }
    }
  }

  if (options.storage) {
    process.stderr.write("storage rows (memory, SQLite, PostgreSQL) on node...\n");
    const child = start("node", "storage.ts", [
      "--seconds", String(options.inprocessSeconds), "--rounds", String(options.inprocessRounds), "--warmup", "1",
      // As many calls in flight as the HTTP rows have connections.
      "--inflight", String(options.connections),
    ]);
    type StoreResults = Record<string, Record<string, Measurement>>;
    const output = await firstLine<{ results: StoreResults; inflight?: { count: number; results: StoreResults }; skipped: Record<string, string> }>(
      child,
      // Per store and scenario: one call in flight, then 32 in flight, each with its warm-up.
      (3 * 4 * 2 * (options.inprocessSeconds * options.inprocessRounds + 2) + 120) * 1000,
    );
    // It stops its database server and exits by itself once done; stop it only if it lingers.
    await Promise.race([new Promise((resolve) => child.once("exit", resolve)), new Promise((resolve) => setTimeout(resolve, 30_000))]);
    await stop(child);
    for (const [store, reason] of Object.entries(output.skipped)) process.stderr.write(`  ${store} skipped: ${reason}\n`);
    const names: Record<string, string> = { memory: "memory store", sqlite: "SQLite", postgres: "PostgreSQL" };
    const sets: [StoreResults, string][] = [[output.results, ""]];
    if (output.inflight) sets.push([output.inflight.results, `, ${output.inflight.count} in flight`]);
    for (const [set, suffix] of sets) {
      for (const [store, results] of Object.entries(set)) {
        for (const [scenario, result] of Object.entries(results)) {
          const memory = set.memory?.[scenario]?.rate;
          rows.push({
            section: "storage", runtime: "node", scenario, label: `${LABELS[scenario]} on ${names[store] ?? store}${suffix}`, result,
            ...(memory ? { ratio: result.rate / memory } : {}),
          });
        }
      }
    }
  }

  if (options.http) {
    // [runtime, scenario, checkout]: the token rows once more on the --against checkout's servers.
    const plan: [Runtime, HttpScenario, string][] = [];
    for (const runtime of options.runtimes) {
      const wanted = (s: HttpScenario) => options.only === undefined || options.only.includes(s);
      plan.push([runtime, "bare", ROOT]);
      if (runtime === "node" && !smoke && wanted("bare-fetch")) plan.push([runtime, "bare-fetch", ROOT]);
      for (const scenario of ["client_credentials", "authorization_code"] as const) {
        if (!wanted(scenario) || (smoke && scenario === "authorization_code")) continue;
        plan.push([runtime, scenario, ROOT]);
        if (options.against !== undefined) plan.push([runtime, scenario, options.against]);
      }
    }
    const keyOf = (runtime: Runtime, scenario: HttpScenario, root: string): string => `${runtime}/${scenario}/${root}`;
    interface Merged {
      samples: Samples[];
      count: number;
      errors: number;
      seconds: number;
      serverCpu: number | undefined;
      clientCpu: number;
    }
    const merged = new Map<string, Merged>();
    for (let r = 0; r < options.rounds; r++) {
      for (const [runtime, scenario, root] of r % 2 === 0 ? plan : [...plan].reverse()) {
        process.stderr.write(`HTTP round ${r + 1}: ${runtime} ${scenario}${root === ROOT ? "" : ` (${root})`}...\n`);
        const result = await httpRound(runtime, scenario, root);
        const key = keyOf(runtime, scenario, root);
        if (result.errors > 0) process.stderr.write(`  failures: ${JSON.stringify(result.statuses)}\n`);
        const entry: Merged = merged.get(key) ?? { samples: [], count: 0, errors: 0, seconds: 0, serverCpu: 0, clientCpu: 0 };
        entry.samples.push(result.samples);
        entry.serverCpu = entry.serverCpu === undefined || result.serverCpu === undefined
          ? undefined
          : entry.serverCpu + result.serverCpu;
        entry.clientCpu += result.clientCpu ?? 0;
        entry.count += result.count;
        entry.errors += result.errors;
        entry.seconds += result.seconds;
        merged.set(key, entry);
      }
    }
    for (const [runtime, scenario, root] of plan) {
      const entry = merged.get(keyOf(runtime, scenario, root))!;
      const all = new Samples();
      for (const s of entry.samples) s.forEach((v) => all.add(v));
      const result: Measurement = {
        rate: Math.round(entry.count / entry.seconds),
        p50: round(all.percentile(50)),
        p99: round(all.percentile(99)),
        max: round(all.percentile(100)),
        count: entry.count,
        errors: entry.errors,
        seconds: round(entry.seconds, 2),
      };
      // CPU per request: which side bounds the rate, whatever else runs on the machine.
      if (entry.serverCpu !== undefined) result.server_cpu_us = round((entry.serverCpu * 1e6) / entry.count, 1);
      result.client_cpu_us = round((entry.clientCpu * 1e6) / entry.count, 1);
      const label = scenario === "bare"
        ? `bare ${HTTP_LABELS[runtime]} (baseline)`
        : scenario === "bare-fetch"
        ? LABELS[scenario]!
        : `${LABELS[scenario]} via ${runtime === "node" ? "serveNode" : HTTP_LABELS[runtime]}`;
      const against = root === ROOT ? {} : { against: root };
      rows.push({ section: "http", runtime, scenario, label: root === ROOT ? label : `${label}, --against`, result, ...against });
    }
    for (const row of rows) {
      if (row.section !== "http") continue;
      const bare = rows.find((b) => b.section === "http" && b.runtime === row.runtime && b.scenario === "bare");
      if (bare) row.ratio = row.result.rate / bare.result.rate;
    }
  }
  let durableRows: DurableRow[] = [];
  if (options.durable) {
    process.stderr.write("durable stores (project, peers, limits) over HTTP on node...\n");
    durableRows = await runDurable({
      seconds: options.durableSeconds,
      rounds: options.rounds,
      warmup: 1,
      connections: options.connections,
      servers: options.durableServers,
      stores: options.durableStores,
      ops: (options.only ?? DURABLE_OPS).filter((op): op is DurableOp => (DURABLE_OPS as readonly string[]).includes(op)),
      pool: 10,
    }, (file, args) => start("node", file, args), (line) => process.stderr.write(`${line}\n`));
  }
  const storedServers: Record<string, Omit<StoredServer, "results">> = {};
  if (options.stored.length > 0) {
    const scenarios = STORED_SCENARIOS.filter((s) => options.only === undefined || options.only.includes(s));
    for (const runtime of options.runtimes) {
      for (const stored of options.stored) {
        process.stderr.write(`stored tokens: ${runtime}, ${stored.toLocaleString("en-US")} records...\n`);
        const { results, ...server } = await storedServer(runtime, stored, scenarios);
        storedServers[`${runtime}/${stored}`] = server;
        for (const [scenario, entry] of results) {
          const result: Measurement = {
            rate: Math.round(entry.count / entry.seconds),
            p50: round(entry.samples.percentile(50)),
            p99: round(entry.samples.percentile(99)),
            max: round(entry.samples.percentile(100)),
            count: entry.count,
            errors: entry.errors,
            seconds: round(entry.seconds, 2),
          };
          if (entry.serverCpu !== undefined) {
            result.server_cpu_us = round((entry.serverCpu * 1e6) / entry.count, 1);
            // Share of the wall-clock time the server was on a CPU: well below 1 with a generator to spare
            // means the server sat idle (the Bun slowdown of issue 14).
            result.server_busy = round(entry.serverCpu / entry.seconds, 2);
          }
          if (entry.clientCpu !== undefined) result.client_cpu_us = round((entry.clientCpu * 1e6) / entry.count, 1);
          rows.push({
            section: "stored", runtime, scenario, stored, result,
            label: `${LABELS[scenario]}, ${stored.toLocaleString("en-US")} stored`,
          });
        }
      }
    }
  }
  for (const row of rows) {
    const target = targetOf(row);
    if (target) row.target = target;
  }

  machine.load.push(round(loadavg()[0]!, 2));
  console.log(table(rows));
  console.log("\ncpu µs/req: CPU time per request of the server process + of the load generator (autocannon, this process).");
  if (options.stored.length > 0) {
    console.log("stored rows: each server pre-filled before it listens (1 in 10 records already expired, 1 in 10 " +
      "expiring during the run, 1 in 10 a refresh grant); `% busy`: the server's CPU time over the row's wall time.");
    for (const [key, server] of Object.entries(storedServers)) {
      console.log(`  ${key}: filled in ${server.prefill?.ms} ms, ${server.rss_mb[0] ?? "?"} MB resident after filling, ` +
        `${server.rss_mb[1] ?? "?"} MB at the end`);
    }
  }
  console.log(`load average (1 min) at start and end: ${machine.load.join(", ")} on ${machine.cores} cores ` +
    "(the bench keeps about 2 busy; a start figure well above 0 means other work was running and skews every row)");
  const durableGoals = durableTargets(durableRows);
  if (durableRows.length > 0) {
    console.log(`\ndurable stores over HTTP, ${options.connections} connections, ${options.rounds} × ${options.durableSeconds} s per row:`);
    console.log(durableTable(durableRows));
    console.log("trips: round trips per request (the server's driver); db: PostgreSQL statements (pg_stat_statements) or " +
      "Redis commands (commandstats) per request; db µs / cpu µs: CPU time per request of the database / the server.");
    for (const goal of durableGoals) console.log(`  ${goal.met ? "met   " : "MISSED"} ${goal.target}: ${goal.value.toFixed(2)}`);
  }
  const failures = [...rows, ...durableRows].filter((row) => row.result.errors > 0);
  const missed = rows.filter((row) => row.target && !row.target.met);
  const goalsMissed = durableGoals.filter((goal) => !goal.met).length;
  console.log(`\ntargets: ${rows.filter((row) => row.target?.met).length + durableGoals.length - goalsMissed} met, ` +
    `${missed.length + goalsMissed} missed` + (failures.length > 0 ? `; ${failures.length} rows had failed requests` : ""));

  mkdirSync(options.out, { recursive: true });
  const file = join(options.out, `bench-${smoke ? "smoke-" : ""}${began.toISOString().replace(/[:.]/g, "-")}.json`);
  const json = JSON.stringify({ machine, options: { ...options, smoke }, rows, durable: durableRows, stored_servers: storedServers }, null, 2);
  writeFileSync(file, json);
  writeFileSync(join(options.out, smoke ? "latest-smoke.json" : "latest.json"), json);
  console.log(`results: ${file}`);

  // The last line says PASS or FAIL, and the exit code says the same.
  const { code, line } = verdict([...rows, ...durableRows.map((row) => ({ section: "durable", runtime: "node", scenario: row.op, result: row.result }))], smoke);
  (code === 0 ? console.log : console.error)(line);
  return code;
}

main().then(
  (code) => {
    stopAll();
    process.exit(code);
  },
  (error: unknown) => {
    console.error(error);
    console.error(`${smoke ? "bench smoke" : "bench"}: FAIL: the run stopped with an error`);
    stopAll();
    process.exit(1);
  },
);
