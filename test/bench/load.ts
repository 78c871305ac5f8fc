/**
 * What every HTTP row of the bench shares: reading a child's ready line, stopping it, one autocannon run of
 * token (or resource) requests timed here, and the CPU time a server and the load generator spent on it.
 *
 * @module
 */
import autocannon from "autocannon";
import { type ChildProcess, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import process from "node:process";
import { FORM_HEADERS, TOKEN_PATH } from "./fixture.ts";
import { Samples } from "./stats.ts";

/** Connections of every load run (`--connections`). */
export const loadOptions: { connections: number } = { connections: 32 };

/**
 * The child's ready line (the first JSON object it prints), parsed as JSON; fails if it exits or stays silent
 * past `ms`. Every other line the child prints on stdout (a runtime's `--trace-gc` output, say) goes on to this
 * process's stderr, marked with the child's pid, before and after the ready line.
 */
export function firstLine<T>(child: ChildProcess, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    let buffered = "";
    let ready = false;
    const timer = setTimeout(() => fail(new Error(`no output within ${ms} ms`)), ms);
    const fail = (error: Error): void => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(error);
    };
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      buffered += chunk;
      for (let newline = buffered.indexOf("\n"); newline !== -1; newline = buffered.indexOf("\n")) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        // A runtime's own output may share the ready line: it is written without a newline before it.
        const json = ready ? -1 : line.indexOf('{"');
        if (json === -1) {
          process.stderr.write(`    [${child.pid}] ${line}\n`);
          continue;
        }
        if (json > 0) process.stderr.write(`    [${child.pid}] ${line.slice(0, json)}\n`);
        ready = true;
        clearTimeout(timer);
        child.removeListener("exit", onExit);
        try {
          resolve(JSON.parse(line.slice(json)) as T);
        } catch (error) {
          reject(error as Error);
        }
      }
    });
    const onExit = (code: number | null): void => fail(new Error(`exited with ${code} before printing`));
    child.once("exit", onExit);
  });
}

/** SIGTERM, then SIGKILL if the child is still there after 5 s. */
export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}

export interface LoadResult {
  samples: Samples;
  /** CPU seconds the server process used during the run (Linux only), and this process (the load generator). */
  serverCpu?: number;
  clientCpu?: number;
  /** Responses by status code. */
  statuses: Record<string, number>;
  count: number;
  errors: number;
  seconds: number;
}

/** One autocannon run of token requests; `next` supplies a body per request (and returning undefined stops the run). */
export function load(
  port: number,
  bounds: { seconds: number } | { amount: number },
  body: string | (() => string | undefined),
): Promise<LoadResult> {
  if (typeof body === "string") return loadRequests(port, bounds, { body });
  return loadRequests(port, bounds, () => {
    const next = body();
    return next === undefined ? undefined : { body: next };
  });
}

/** What one request of a load sends beyond the defaults (POST to the token path, a form body). */
export interface LoadRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}

/**
 * One autocannon run: the same request every time, or `next()` per request (undefined stops the run: a pool ran
 * dry). `onResponse` sees each answer's status and body (a refresh chain reads its next token there).
 */
export function loadRequests(
  port: number,
  bounds: { seconds: number } | { amount: number },
  spec: LoadRequest | (() => LoadRequest | undefined),
  onResponse?: (status: number, body: string) => void,
): Promise<LoadResult> {
  const samples = new Samples();
  const statuses: Record<string, number> = {};
  let failed = 0;
  let ended = false;
  const fixed = typeof spec === "function" ? {} : spec;
  // Timed here, not by autocannon, whose duration is counted in whole seconds once a run is stopped early (a
  // pool of codes that ran dry after 2.4 s gave 3 s) and in amount mode.
  const started = performance.now();
  let lastAt = started;
  return new Promise((resolve, reject) => {
    let instance: ReturnType<typeof autocannon> | undefined;
    const dynamic = typeof spec === "function" || onResponse !== undefined;
    instance = autocannon({
      url: `http://127.0.0.1:${port}${fixed.path ?? TOKEN_PATH}`,
      connections: loadOptions.connections,
      method: fixed.method ?? "POST",
      headers: fixed.headers ?? FORM_HEADERS,
      timeout: 10,
      ...("seconds" in bounds ? { duration: bounds.seconds } : { amount: bounds.amount }),
      ...(dynamic
        ? {
          requests: [{
            setupRequest: (request) => {
              const next = typeof spec === "function" ? spec() : spec;
              if (next === undefined) {
                // Out of codes or tokens: stop now rather than send a spent one.
                if (!ended) {
                  onPoolDry?.();
                  setImmediate(() => instance?.stop());
                }
                ended = true;
                // A filler the token endpoint refuses before any store read, so the store counts only the run.
                return { ...request, body: POOL_DRY_BODY };
              }
              return { ...request, ...next, headers: { ...request.headers, ...next.headers } };
            },
            ...(onResponse ? { onResponse: (status: number, body: string) => onResponse(status, body) } : {}),
          }],
        }
        : { body: fixed.body ?? "" }),
    }, (error, result) => {
      clearTimeout(cap);
      if (error) return reject(error);
      // A run stopped by a dry pool ends at its last counted answer; a timed one when autocannon says it is done.
      const seconds = ((ended ? lastAt : performance.now()) - started) / 1000;
      resolve({ samples, statuses, count: samples.length, errors: failed + result.errors + result.timeouts, seconds });
    });
    instance.on("response", (_client, status, _bytes, ms) => {
      if (ended && dynamic) return; // answers to the "spent" filler after the pool ran dry are not counted
      lastAt = performance.now();
      samples.add(ms);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status < 200 || status > 299) failed++;
    });
    // A hard cap on every run, whatever its bounds say.
    const cap = setTimeout(() => instance?.stop(), ("seconds" in bounds ? bounds.seconds : 60) * 1000 + 30_000);
  });
}

/** CPU seconds (user + system) of a process so far, from /proc; undefined where there is no /proc. */
export function cpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" })) || 100;
  } catch {
    return 100;
  }
})();

/**
 * Set by {@link untilPoolDry} while a load runs (for {@link withCpu} and durable.ts): the moment a load's pool
 * runs dry, the CPU time so far is the run's, not what the server spends afterwards refusing the filler requests
 * sent until autocannon stops.
 */
let onPoolDry: (() => void) | undefined;

/** The body sent after a pool ran dry, until autocannon stops (at its next sample, up to a second later). */
const POOL_DRY_BODY = "grant_type=urn%3Abench%3Apool-dry";

/**
 * Runs `run`, and takes `snapshot` the moment a load's pool runs dry, or when `run` ends if it never does: what
 * the run cost, up to its last counted answer (durable.ts reads the server's and the database's CPU so).
 */
export async function untilPoolDry<T, S>(snapshot: () => S, run: () => Promise<T>): Promise<[T, S]> {
  let atDry: S | undefined;
  onPoolDry = () => void (atDry = snapshot());
  try {
    const result = await run();
    return [result, atDry ?? snapshot()];
  } finally {
    onPoolDry = undefined;
  }
}

/** Runs a load and adds the CPU time that the server and this process spent on it (up to a dry pool). */
export async function withCpu(child: ChildProcess, run: () => Promise<LoadResult>): Promise<LoadResult> {
  const server = cpuSeconds(child.pid);
  const client = process.cpuUsage();
  const [result, { server: serverAfter, used }] = await untilPoolDry(
    () => ({ server: cpuSeconds(child.pid), used: process.cpuUsage(client) }),
    run,
  );
  if (server !== undefined && serverAfter !== undefined) result.serverCpu = serverAfter - server;
  result.clientCpu = (used.user + used.system) / 1e6;
  return result;
}
