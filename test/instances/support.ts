// Reference-server processes for the multi-instance and restart tests: started as `npm start` starts them
// (`node --import tsx lib/cli/serve.ts --port 0 --config FILE [--store URL]`), on 127.0.0.1, killed by the test.
// Vitest on Node only: it spawns processes.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { config } from "../runtimes/reference_process.ts";

export { Browser, csrfOf, decide, PASSWORD, REDIRECT, SECRETS, signIn, spaCode, token } from "../runtimes/reference_process.ts";

/** A running reference server. */
export interface Instance {
  url: string;
  child: ChildProcess;
  output(): string;
  /** SIGKILL, as a crash would; resolves once the process is gone. */
  kill(): Promise<void>;
}

const running = new Set<Instance>();

/** Kills every instance still running; call from afterEach/afterAll. */
export async function killInstances(): Promise<void> {
  await Promise.all([...running].map((instance) => instance.kill()));
}

/** Writes the tests' usual config (see test/runtimes/reference_process.ts) into a fresh folder; returns its path. */
export function writeConfig(extra: Record<string, unknown> = {}, name = "app.json"): string {
  const file = join(mkdtempSync(join(tmpdir(), "oauth2-instances-")), name);
  writeFileSync(file, JSON.stringify(config(extra)));
  return file;
}

/** Starts one reference server on `configFile`; resolves once it prints its listening line. */
export function startInstance(configFile: string, flags: string[] = [], env: Record<string, string> = {}): Promise<Instance> {
  const child = spawn(process.execPath, ["--import", "tsx", "lib/cli/serve.ts", "--port", "0", "--config", configFile, ...flags], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1", ...env },
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 20 s:\n${output}`)), 20_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/m.exec(output);
      if (!match) return;
      clearTimeout(timer);
      const instance: Instance = {
        url: match[1]!,
        child,
        output: () => output,
        kill: async () => {
          child.kill("SIGKILL");
          await exited;
          running.delete(instance);
        },
      };
      running.add(instance);
      resolve(instance);
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    void exited.then(() => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`exited before listening (code ${child.exitCode}):\n${output}`), { output, code: child.exitCode }));
    });
  });
}

/** Runs the server with `flags` and expects it to fail at start: resolves with its exit code and output. */
export function startFailure(
  configFile: string,
  flags: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  return startInstance(configFile, flags, env).then(
    async (instance) => {
      await instance.kill();
      throw new Error(`the server started:\n${instance.output()}`);
    },
    (error: { code?: number | null; output?: string }) => ({ code: error.code ?? null, output: error.output ?? String(error) }),
  );
}

/** GET /api/me with a Bearer token; the status. */
export async function apiStatus(base: string, accessToken: string): Promise<number> {
  const response = await fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${accessToken}` } });
  await response.arrayBuffer();
  return response.status;
}
