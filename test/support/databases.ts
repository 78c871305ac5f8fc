/**
 * Real database servers for the storage tests: PostgreSQL and Redis started as their own processes in a
 * temporary directory, on a random 127.0.0.1 port, with nothing written for durability (fsync off, no RDB/AOF),
 * and stopped by `stop()` (or, failing that, killed when the test process exits).
 *
 * When the binaries are missing, `startPostgres`/`startRedis` return `{ skip: reason }` so that the tests can
 * skip with a printed reason; when `CI` is set they throw instead, because CI must never skip them.
 *
 * Node only (vitest): it spawns processes and runs `runuser`, since PostgreSQL refuses to run as root.
 *
 * @module
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";

/** A database server started for the tests. */
export interface Database {
  /** A connection URL: `postgres://postgres@127.0.0.1:PORT/postgres` or `redis://127.0.0.1:PORT`. */
  url: string;
  port: number;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
  /** Stops the server, keeping its data (PostgreSQL) so that `start` brings it back: for outage tests. */
  pause(): Promise<void>;
  /** Starts a paused server again on the same port. */
  resume(): Promise<void>;
  /** The server's processes now (PostgreSQL: the postmaster and every backend), for their CPU time (Linux). */
  pids(): number[];
}

/** Options of {@link startPostgres}. */
export interface PostgresOptions {
  /** Extensions to preload (`shared_preload_libraries`), such as `pg_stat_statements` for the bench's counters. */
  preload?: string[];
}

/** Why a database could not be started here, when that is allowed (never under CI). */
export interface Skipped {
  skip: string;
}

const inCI = (): boolean => !["", "0", "false"].includes((process.env.CI ?? "").toLowerCase());

function unavailable(reason: string): Skipped {
  if (inCI()) throw new Error(`CI must run the database tests, but ${reason}`);
  console.warn(`skipping: ${reason}`);
  return { skip: reason };
}

/** A free TCP port on 127.0.0.1, chosen by the kernel. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

function postgresBin(): string | undefined {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).filter((v) => existsSync(join(base, v, "bin/initdb"))).sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(base, versions[0], "bin");
}

const cleanups = new Set<() => void>();
process.once("exit", () => {
  for (const cleanup of cleanups) cleanup();
});

/** Starts PostgreSQL (as the `postgres` user, since we may be root) or says why not. */
export async function startPostgres(settings: PostgresOptions = {}): Promise<Database | Skipped> {
  const bin = postgresBin();
  if (!bin) return unavailable("PostgreSQL is not installed (Debian package postgresql)");
  const asRoot = process.getuid?.() === 0;
  if (asRoot && spawnSync("id", ["postgres"]).status !== 0) return unavailable("there is no postgres user to run PostgreSQL");
  const dir = mkdtempSync(join(tmpdir(), "oauth-pg-"));
  chmodSync(dir, 0o755);
  if (asRoot) {
    const ids = execFileSync("id", ["-u", "postgres"]).toString().trim();
    const gid = execFileSync("id", ["-g", "postgres"]).toString().trim();
    chownSync(dir, Number(ids), Number(gid));
  }
  const run = (tool: string, args: string[]) => {
    const command = asRoot ? "runuser" : join(bin, tool);
    const argv = asRoot ? ["-u", "postgres", "--", join(bin, tool), ...args] : args;
    const result = spawnSync(command, argv, { encoding: "utf8", timeout: 60_000 });
    if (result.status !== 0) throw new Error(`${tool} failed: ${result.stderr || result.stdout}`);
  };
  run("initdb", ["-D", join(dir, "data"), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"]);
  const port = await freePort();
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off ` +
    `-c full_page_writes=off -c max_connections=200 -c shared_buffers=32MB` +
    (settings.preload?.length ? ` -c shared_preload_libraries=${settings.preload.join(",")}` : "");
  const start = () => run("pg_ctl", ["-D", join(dir, "data"), "-l", join(dir, "pg.log"), "-w", "-t", "30", "-o", options, "start"]);
  const stopServer = (mode: "fast" | "immediate") => {
    try {
      run("pg_ctl", ["-D", join(dir, "data"), "-m", mode, "-w", "-t", "30", "stop"]);
    } catch {
      // Already stopped.
    }
  };
  start();
  const cleanup = () => {
    stopServer("immediate");
    rmSync(dir, { recursive: true, force: true });
  };
  cleanups.add(cleanup);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop: async () => {
      cleanups.delete(cleanup);
      cleanup();
    },
    pause: async () => stopServer("fast"),
    resume: async () => start(),
    pids: () => {
      try {
        const postmaster = Number(readFileSync(join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
        return [postmaster, ...childrenOf(postmaster)];
      } catch {
        return [];
      }
    },
  };
}

/** The processes whose parent is `pid`, from /proc (Linux; none elsewhere). */
function childrenOf(pid: number): number[] {
  try {
    return readdirSync("/proc").filter((name) => /^\d+$/.test(name)).flatMap((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid ? [Number(name)] : [];
      } catch {
        return [];
      }
    });
  } catch {
    return [];
  }
}

/** Starts redis-server without persistence, or says why not. */
export async function startRedis(): Promise<Database | Skipped> {
  const which = spawnSync("sh", ["-c", "command -v redis-server"], { encoding: "utf8" });
  const binary = which.stdout.trim();
  if (which.status !== 0 || !binary) return unavailable("redis-server is not installed (Debian package redis-server)");
  const dir = mkdtempSync(join(tmpdir(), "oauth-redis-"));
  const port = await freePort();
  let child: ReturnType<typeof spawn> | undefined;
  const start = async () => {
    child = spawn(binary, [
      "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
      "--protected-mode", "no", "--loglevel", "warning",
    ], { stdio: ["ignore", "ignore", "inherit"] });
    await waitForPort(port, 10_000);
  };
  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((resolve) => c.once("exit", resolve));
    c.kill("SIGKILL");
    await exited;
  };
  await start();
  const cleanup = () => {
    child?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  cleanups.add(cleanup);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: async () => {
      cleanups.delete(cleanup);
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
    pause: kill,
    resume: start,
    pids: () => (child?.pid === undefined || child.exitCode !== null ? [] : [child.pid]),
  };
}

async function waitForPort(port: number, ms: number): Promise<void> {
  const { connect } = await import("node:net");
  const deadline = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => (socket.destroy(), resolve(true)));
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`Nothing listens on 127.0.0.1:${port} after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Whether `value` is a started database rather than a skip reason. */
export const started = (value: Database | Skipped | undefined): value is Database => value !== undefined && "url" in value;
