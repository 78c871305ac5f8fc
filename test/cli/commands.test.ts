// The `oauth2-fetch-server` command as operators type it: help and version, wrong flags, hash-password, and a
// config file with hashes, environment secrets and plaintext warnings, over real processes.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test, vi } from "vitest";

// Each test spawns the command line several times; a loaded CI machine needs far more than the default 5 s.
vi.setConfig({ testTimeout: 60_000 });
import { COMMANDS } from "../../lib/cli/args.ts";

const cli = (args: string[], options: { input?: string; env?: Record<string, string> } = {}) => {
  const result = spawnSync(process.execPath, ["--import", "tsx", "lib/cli/serve.ts", ...args], {
    encoding: "utf8",
    timeout: 30_000,
    input: options.input ?? "",
    env: { ...process.env, ...options.env },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
};

const version = JSON.parse(readFileSync("package.json", "utf8")).version as string;

test("--version prints the package version, and --help lists every command, exit 0", () => {
  expect(cli(["--version"])).toMatchObject({ code: 0, stdout: `${version}\n` });
  const help = cli(["--help"]);
  expect(help.code).toBe(0);
  for (const name of Object.keys(COMMANDS)) expect(help.stdout).toContain(name);
});

test.each(Object.keys(COMMANDS))("%s --help shows its flags and exits 0", (name) => {
  const result = cli([...name.split(" "), "--help"]);
  expect(result.code).toBe(0);
  expect(result.stdout).toContain(`usage: oauth2-fetch-server ${name}`);
  for (const flag of Object.keys(COMMANDS[name]!.flags)) expect(result.stdout).toContain(flag);
});

test.each([
  [["serve", "--colour"], 'unknown flag "--colour"'],
  [["hash-password", "--salt", "x"], 'unknown flag "--salt"'],
  [["frobnicate"], 'unknown command "frobnicate"'],
  [["serve", "--port"], "--port needs a value"],
  [["serve", "--issuer", "auth.example"], '--issuer must be an http(s) URL: "auth.example"'],
])("%j prints the problem and the usage and exits 2", (args, message) => {
  const result = cli(args);
  expect(result.code).toBe(2);
  expect(result.stderr).toContain(message);
  expect(result.stderr).toContain("usage: oauth2-fetch-server");
});

test("hash-password reads standard input and prints a hash; a config with it, an env secret and a plaintext user starts and warns", async () => {
  const hashed = cli(["hash-password"], { input: "correct horse battery\n" });
  expect(hashed.code).toBe(0);
  const hash = hashed.stdout.trim();
  expect(hash).toMatch(/^pbkdf2-sha256\$600000\$[\w-]+\$[\w-]{43}$/);
  expect(hashed.stdout + hashed.stderr).not.toContain("correct horse");
  expect(JSON.parse(cli(["hash-password", "--json"], { input: "another password" }).stdout).password_hash).toMatch(/^pbkdf2-sha256\$/);
  expect(cli(["hash-password"], { input: "short" })).toMatchObject({ code: 1 });

  const dir = mkdtempSync(join(tmpdir(), "oauth2-cli-"));
  const file = join(dir, "config.json");
  writeFileSync(file, JSON.stringify({
    users: [{ username: "ann", password_hash: hash }, { username: "bob", password: "bob-password" }],
    scopes: [{ name: "metrics", description: "Read metrics" }],
    clients: [{ client_id: "job", client_secret: { env: "JOB_SECRET" }, name: "Job", scopes: ["metrics"], grant_types: ["client_credentials"] }],
  }));
  const child = spawn(process.execPath, ["--import", "tsx", "lib/cli/serve.ts", "--port", "0", "--config", file], {
    env: { ...process.env, JOB_SECRET: "job-secret-from-env-0123" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  try {
    let output = "";
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(output)), 15_000);
      const onData = (chunk: Buffer) => {
        output += chunk;
        const match = /listening on (\S+)/.exec(output);
        if (match) (clearTimeout(timer), resolve(match[1]!));
      };
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
    });
    // The plaintext user is named; the hashed one is not.
    expect(output).toContain('user "bob" has a plaintext "password"');
    expect(output).not.toContain('user "ann"');
    const token = await fetch(`${url}/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: "job", client_secret: "job-secret-from-env-0123", scope: "metrics" }),
    });
    expect(token.status).toBe(200);
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    // The request log: one JSON line per request on stdout, without the secret.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const logged = output.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line));
    expect(logged).toEqual([
      expect.objectContaining({ method: "POST", path: "/token", status: 200, client_id: "job" }),
      expect.objectContaining({ method: "GET", path: "/healthz", status: 200 }),
    ]);
    expect(output).not.toContain("job-secret-from-env-0123");
  } finally {
    child.kill("SIGKILL");
  }
}, 60_000);

test("a config typo stops the server with the file, the path and a suggestion", () => {
  const dir = mkdtempSync(join(tmpdir(), "oauth2-cli-"));
  const file = join(dir, "config.json");
  writeFileSync(file, JSON.stringify({
    scopes: [{ name: "a", description: "A" }],
    clients: [{ client_id: "x", clientSecret: "s".repeat(20), name: "X", scopes: ["a"], grant_types: ["client_credentials"] }],
  }));
  const result = cli(["serve", "--port", "0", "--config", file]);
  expect(result.code).toBe(1);
  expect(result.stderr.trim()).toBe(`Cannot load config "${file}": clients[0].clientSecret: unknown key (did you mean "client_secret"?)`);
});

test("--issuer sets the issuer the metadata announces, behind a proxy", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", "lib/cli/serve.ts", "--port", "0", "--issuer", "https://auth.example.com/"], { stdio: ["ignore", "pipe", "pipe"] });
  try {
    let output = "";
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(output)), 15_000);
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk;
        const match = /listening on (\S+)/.exec(output);
        if (match) (clearTimeout(timer), resolve(match[1]!));
      });
    });
    const metadata = await (await fetch(`${url}/.well-known/oauth-authorization-server`)).json();
    expect(metadata.issuer).toBe("https://auth.example.com");
    expect(metadata.token_endpoint).toMatch(/^https:\/\/auth\.example\.com\//);
  } finally {
    child.kill("SIGKILL");
  }
}, 30_000);
