// The reference server on each runtime, over real HTTP on 127.0.0.1: it starts on a free port, prints its
// listening line, completes client_credentials and a Bearer call, and exits 0 on SIGTERM and SIGINT, promptly,
// even with the client's keep-alive connection still open. Vitest on Node only: it spawns the other runtimes.
import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { afterAll, describe, expect, test } from "vitest";

const bin = (name: string): string => resolve("node_modules/.bin", name);

/** The three entry points, as the README starts them, minus the npm/deno-task wrappers (see the second block). */
const RUNTIMES: [string, string, string[]][] = [
  ["node", process.execPath, ["--import", "tsx", "lib/cli/serve.ts"]],
  ["deno", bin("deno"), ["run", "--allow-net", "--allow-read", "lib/cli/serve_deno.ts"]],
  ["bun", bin("bun"), ["lib/cli/serve_bun.ts"]],
];

/** The wrappers people type: each must forward its arguments and the signal. */
const SCRIPTS: [string, string, string[]][] = [
  ["npm start", "npm", ["start", "--", "--port", "0"]],
  ["npm run start:deno", "npm", ["run", "start:deno", "--", "--port", "0"]],
  ["npm run start:bun", "npm", ["run", "start:bun", "--", "--port", "0"]],
  ["deno task start", bin("deno"), ["task", "start", "--", "--port", "0"]],
];

// Every child leads its own process group, so that a wrapper's children (npm → sh → runtime) die with it.
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
});

interface Started {
  url: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Spawns the command; resolves with the base URL once the listening line is out. */
function start(command: string, args: string[]): Promise<Started> {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" }, detached: true });
  children.add(child);
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 20 s from ${command} ${args.join(" ")}:\n${output}`)), 20_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/m.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ url: match[1]!, child, output: () => output, exited });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${command} ${args.join(" ")} exited with ${code} before listening:\n${output}`));
    });
  });
}

/** client_credentials, then the token on the sample API; the connection stays in Node's keep-alive pool. */
async function roundTrip(url: string): Promise<void> {
  const response = await fetch(`${url}/index.php?module=OAuth2&action=token`, {
    method: "POST",
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: "demo-backend",
      client_secret: "demo-backend-secret-change-me",
      scope: "reports.read",
    }),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get("cache-control")).toBe("no-store");
  const body = await response.json() as { access_token: string; token_type: string; expires_in: number };
  expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
  const api = await fetch(`${url}/api/reports`, { headers: { authorization: `Bearer ${body.access_token}` } });
  expect(api.status).toBe(200);
  expect(await api.json()).toMatchObject({ token: { client_id: "demo-backend", scope: "reports.read" } });
  const denied = await fetch(`${url}/api/reports`, { headers: { authorization: "Bearer not-a-token" } });
  expect(denied.status).toBe(401);
  expect(denied.headers.get("www-authenticate")).toMatch(/^Bearer .*error="invalid_token"/);
  await denied.arrayBuffer();
}

/** Sends the signal and waits, at most 8 s (the shutdown deadline is 10 s, so idle connections must not hold it). */
async function stop(started: Started, signal: NodeJS.Signals, options: { group?: boolean } = {}): Promise<{ code: number | null; ms: number }> {
  const begun = Date.now();
  if (options.group) process.kill(-started.child.pid!, signal);
  else started.child.kill(signal);
  const code = await Promise.race([started.exited, new Promise<"timeout">((done) => setTimeout(() => done("timeout"), 8_000))]);
  if (code === "timeout") throw new Error(`still running 8 s after ${signal}:\n${started.output()}`);
  return { code, ms: Date.now() - begun };
}

/** Whether the address refuses connections now (the server is gone), within 2 s. */
async function refused(url: string): Promise<boolean> {
  for (let i = 0; i < 20; i++) {
    const error = await fetch(url, { signal: AbortSignal.timeout(1_000) }).then(() => undefined, (e: Error) => e);
    if (error !== undefined && /ECONNREFUSED/.test(String((error.cause as Error | undefined)?.message))) return true;
    await new Promise((done) => setTimeout(done, 100));
  }
  return false;
}

describe.each(RUNTIMES)("the reference server on %s", (_name, command, args) => {
  test("starts on port 0, answers client_credentials and a Bearer call over HTTP, exits 0 on SIGTERM", async () => {
    const started = await start(command, [...args, "--port", "0"]);
    expect(started.output()).toContain("curl -s -X POST");
    await roundTrip(started.url);
    const { code, ms } = await stop(started, "SIGTERM");
    expect(code).toBe(0);
    expect(ms).toBeLessThan(5_000);
  }, 40_000);

  test("exits 0 on SIGINT", async () => {
    const started = await start(command, [...args, "--port", "0"]);
    await roundTrip(started.url);
    expect((await stop(started, "SIGINT")).code).toBe(0);
  }, 40_000);

  test("a bad flag is exit 2 with the usage", async () => {
    const failed = await start(command, [...args, "--colour"]).then(
      () => undefined,
      (error: Error) => error.message,
    );
    expect(failed).toMatch(/exited with 2 before listening:[\s\S]*unknown flag "--colour"[\s\S]*usage:/);
  }, 40_000);
});

describe.each(SCRIPTS)("%s", (name, command, args) => {
  test("forwards --port 0, serves, and stops with its server on SIGTERM to the process group", async () => {
    // As a terminal's Ctrl-C, `docker stop` or systemd reach it: every process of the group gets the signal.
    const started = await start(command, args);
    await roundTrip(started.url);
    await stop(started, "SIGTERM", { group: true });
    expect(await refused(started.url)).toBe(true);
  }, 40_000);

  // npm runs scripts as `sh -c "…"` and dash does not pass a signal on, so every start script `exec`s its
  // runtime (tsx forwards the signal to its node child); deno task forwards signals itself.
  test("passes a SIGTERM sent to the wrapper alone on to the server", async () => {
    const started = await start(command, args);
    await roundTrip(started.url);
    const { code } = await stop(started, "SIGTERM");
    // deno task exits with the server's status; npm passes the signal on, then ends itself by it (code null).
    if (name === "deno task start") expect(code).toBe(0);
    expect(await refused(started.url)).toBe(true);
  }, 40_000);
});
