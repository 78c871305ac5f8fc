// The reference server's command line, over real HTTP on 127.0.0.1: the contract scripts and people rely on.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, test } from "vitest";

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

/** Starts `tsx lib/cli/serve.ts` with args; resolves with the base URL once it prints its listening line. */
function start(args: string[]): Promise<{ url: string; child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "lib/cli/serve.ts", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 15 s:\n${output}`)), 15_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/m.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ url: match[1]!, child, output: () => output });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`exited with ${code}:\n${output}`), { code, output }));
    });
  });
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

const tokenRequest = (url: string, fields: Record<string, string>) =>
  fetch(`${url}/index.php?module=OAuth2&action=token`, { method: "POST", body: new URLSearchParams(fields) });

test("with no config it serves the demo, prints the curl recipes, and stops cleanly on SIGTERM", async () => {
  const { url, child, output } = await start(["--port", "0"]);
  expect(output()).toContain("curl -s -X POST");
  const response = await tokenRequest(url, { grant_type: "client_credentials", client_id: "demo-backend", client_secret: "demo-backend-secret-change-me", scope: "exports" });
  expect(response.status).toBe(200);
  const { access_token } = await response.json();
  const api = await fetch(`${url}/api/me`, { headers: { authorization: `Bearer ${access_token}` } });
  expect((await api.json()).token.client_id).toBe("demo-backend");
  const exited = exitOf(child);
  child.kill("SIGTERM");
  expect(await exited).toBe(0);
}, 30_000);

test("--config FILE replaces the demo with its users, scopes and clients", async () => {
  const dir = mkdtempSync(join(tmpdir(), "oauth2-cli-"));
  const file = join(dir, "config.json");
  writeFileSync(file, JSON.stringify({
    users: [{ username: "ann", password: "ann-password" }],
    scopes: [{ name: "metrics", description: "Read metrics" }],
    clients: [{ client_id: "job", client_secret: "job-secret-0123456789", name: "Job", redirect_uris: [], scopes: ["metrics"], grant_types: ["client_credentials"] }],
  }));
  const { url, output } = await start(["--port", "0", "--config", file]);
  expect(output()).not.toContain("Demo mode");
  expect((await tokenRequest(url, { grant_type: "client_credentials", client_id: "job", client_secret: "job-secret-0123456789", scope: "metrics" })).status).toBe(200);
  expect((await tokenRequest(url, { grant_type: "client_credentials", client_id: "demo-backend", client_secret: "demo-backend-secret-change-me", scope: "exports" })).status).toBe(401);
}, 30_000);

test.each([
  [["--port", "99999"], /--port must be 0-65535/, 2],
  [["--colour"], /unknown flag "--colour"\nusage: oauth2-fetch-server serve/, 2],
  [["--config", "/no/such/file.json"], /^config file not found: \/no\/such\/file.json$/m, 1],
])("bad command line %j: a clear message and the right exit code", async (args, message, code) => {
  const error = await start(args).catch((e: { code: number; output: string }) => e);
  expect((error as { code: number }).code).toBe(code);
  expect((error as { output: string }).output).toMatch(message);
}, 30_000);

test("a config with an unknown scope in a client is refused with the client named", async () => {
  const dir = mkdtempSync(join(tmpdir(), "oauth2-cli-"));
  const file = join(dir, "config.json");
  writeFileSync(file, JSON.stringify({ scopes: [{ name: "a", description: "A" }], clients: [{ client_id: "x", name: "X", redirect_uris: ["https://x/cb"], scopes: ["b"], grant_types: ["authorization_code"] }] }));
  const error = await start(["--port", "0", "--config", file]).catch((e: { code: number; output: string }) => e);
  expect((error as { output: string }).output).toMatch(/client "x" names unknown scope "b"/);
}, 30_000);
