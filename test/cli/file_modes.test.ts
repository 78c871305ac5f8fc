// Store files are private to their owner: the SQLite database and its -wal and -shm files, created by the server at
// start and by `clients add`, get mode 0600 on Node, Deno and Bun, under the usual umask 022 (which alone would
// leave them readable by every local user, and the store holds what forges sessions). Vitest on Node; it spawns
// each runtime itself.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, describe, expect, test } from "vitest";

const RUNTIMES: [string, string, string[]][] = [
  ["Node", process.execPath, ["--import", "tsx", "lib/cli/serve.ts"]],
  ["Deno", "node_modules/.bin/deno", ["run", "--allow-net", "--allow-read", "--allow-write", "--allow-env", "--allow-ffi", "lib/cli/serve_deno.ts"]],
  ["Bun", "node_modules/.bin/bun", ["lib/cli/serve_bun.ts"]],
];

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh folder with a config file and no store yet. */
function fresh(): { dir: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), "oauth2-modes-"));
  dirs.push(dir);
  const config = join(dir, "app.json");
  writeFileSync(config, JSON.stringify({ scopes: [{ name: "read", description: "Read" }] }));
  return { dir, config };
}

/** The command under umask 022, as a shell would run it. */
const shell = (command: string, args: string[]): [string, string[]] =>
  ["sh", ["-c", 'umask 022 && exec "$@"', "sh", command, ...args]];

/** Mode bits of the store files in `dir`, by name. */
const modes = (dir: string): Record<string, string> =>
  Object.fromEntries(readdirSync(dir).filter((f) => f.startsWith("app.sqlite")).map((f) => [f, (statSync(join(dir, f)).mode & 0o777).toString(8)]));

describe.skipIf(process.platform === "win32")("store files are created with mode 0600", () => {
  for (const [name, command, args] of RUNTIMES) {
    test(`${name}: by clients add`, () => {
      const { dir, config } = fresh();
      const result = spawnSync(...shell(command, [...args, "clients", "add", "--config", config, "--name", "Nightly", "--scope", "read",
        "--grant-type", "client_credentials"]), { encoding: "utf8", timeout: 60_000 });
      expect(result.status, result.stderr).toBe(0);
      expect(modes(dir)).toMatchObject({ "app.sqlite": "600" });
      expect(Object.values(modes(dir)).every((mode) => mode === "600"), JSON.stringify(modes(dir))).toBe(true);
    }, 90_000);

    test(`${name}: by the server, with its -wal and -shm files`, async () => {
      const { dir, config } = fresh();
      const server: ChildProcess = spawn(...shell(command, [...args, "--port", "0", "--host", "127.0.0.1", "--config", config]), { stdio: ["ignore", "pipe", "pipe"] });
      try {
        let output = "";
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no "listening on": ${output}`)), 60_000);
          const onData = (chunk: Buffer) => {
            output += chunk;
            if (/listening on /.test(output)) (clearTimeout(timer), resolve());
          };
          server.stdout!.on("data", onData);
          server.stderr!.on("data", onData);
        });
        expect(modes(dir)).toEqual({ "app.sqlite": "600", "app.sqlite-wal": "600", "app.sqlite-shm": "600" });
      } finally {
        server.kill("SIGKILL");
      }
    }, 90_000);
  }
});
