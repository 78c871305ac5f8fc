// `oauth2-fetch-server clients …`, `migrate` and `purge` as operators run them: real processes on the SQLite file
// beside the config file, while a real server serves from the same file. Vitest on Node.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test, vi } from "vitest";

// Each test spawns the command line several times; a loaded CI machine needs far more than the default 5 s.
vi.setConfig({ testTimeout: 60_000 });

const dir = mkdtempSync(join(tmpdir(), "oauth2-clients-"));
const config = join(dir, "app.json");
writeFileSync(config, JSON.stringify({
  scopes: [{ name: "read", description: "Read" }, { name: "write", description: "Write" }],
  clients: [{ client_id: "from-config", client_secret: "from-config-secret-0123", name: "From config", scopes: ["read"], grant_types: ["client_credentials"] }],
}));

const cli = (...args: string[]) => {
  const result = spawnSync(process.execPath, ["--import", "tsx", "lib/cli/serve.ts", ...args], { encoding: "utf8", timeout: 30_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
};
const json = (...args: string[]) => {
  const result = cli(...args, "--json");
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
};

let server: ChildProcess | undefined;
let url = "";
beforeAll(async () => {
  server = spawn(process.execPath, ["--import", "tsx", "lib/cli/serve.ts", "--port", "0", "--config", config], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(output)), 20_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      const match = /listening on (\S+)/.exec(output);
      if (match) (clearTimeout(timer), resolve(match[1]!));
    };
    server!.stdout!.on("data", onData);
    server!.stderr!.on("data", onData);
  });
}, 30_000);
afterAll(() => void server?.kill("SIGKILL"));

const token = (clientId: string, secret: string, scope = "read") =>
  fetch(`${url}/token`, { method: "POST", body: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: secret, scope }) });

test("a client added from the command line works at once on the running server; its secret is printed once", async () => {
  expect(existsSync(join(dir, "app.sqlite"))).toBe(true);
  const added = json("clients", "add", "--config", config, "--client-id", "nightly", "--name", "Nightly export", "--scope", "read", "--scope", "write", "--grant-type", "client_credentials");
  expect(added.client).toMatchObject({ client_id: "nightly", name: "Nightly export", type: "confidential", origin: "cli", scopes: ["read", "write"], grant_types: ["client_credentials"] });
  expect(added.client.secret_hash).toBeUndefined();
  expect(added.client_secret).toMatch(/^[\w-]{43}$/);
  expect((await token("nightly", added.client_secret, "write")).status).toBe(200);
  // Never shown again.
  expect(JSON.stringify(json("clients", "show", "nightly", "--config", config))).not.toContain(added.client_secret);
  expect(cli("clients", "list", "--config", config).stdout).not.toContain(added.client_secret);

  const text = cli("clients", "add", "--config", config, "--name", "Dashboard", "--public", "--redirect-uri", "https://dash.example/cb", "--scope", "read");
  expect(text.code, text.stderr).toBe(0);
  expect(text.stdout).toMatch(/added client "[\w-]+" \(public\)/);
  expect(text.stdout).not.toContain("client_secret");
});

test("list and show, as text and as JSON", () => {
  const listed = json("clients", "list", "--config", config) as { client_id: string; origin: string }[];
  expect(listed.map((c) => c.client_id)).toEqual(expect.arrayContaining(["from-config", "nightly"]));
  expect(listed.find((c) => c.client_id === "from-config")!.origin).toBe("config");
  const table = cli("clients", "list", "--store", `sqlite:${join(dir, "app.sqlite")}`);
  expect(table.stdout.split("\n")[0]).toMatch(/^CLIENT_ID\s+NAME\s+TYPE\s+STATUS\s+ORIGIN\s+LAST_USED$/);
  expect(table.stdout).toMatch(/^nightly\s+Nightly export\s+confidential\s+active\s+cli\s+\d{4}-/m);
  expect(cli("clients", "show", "nightly", "--config", config).stdout).toMatch(/^scopes:\s+read write$/m);
});

test("rotate-secret: the new secret works and the old one stops; a config client is refused", async () => {
  const before = json("clients", "add", "--config", config, "--client-id", "rotating", "--name", "Rotating", "--scope", "read");
  const rotated = json("clients", "rotate-secret", "rotating", "--config", config);
  expect(rotated.client_secret).not.toBe(before.client_secret);
  expect((await token("rotating", before.client_secret)).status).toBe(401);
  expect((await token("rotating", rotated.client_secret)).status).toBe(200);
  const refused = cli("clients", "rotate-secret", "from-config", "--config", config);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("comes from the config file");
});

test("pause stops the client and its tokens, resume brings it back; revoke-grants and delete kill its tokens", async () => {
  const { client_secret } = json("clients", "add", "--config", config, "--client-id", "pausable", "--name", "Pausable", "--scope", "read");
  const { access_token } = await (await token("pausable", client_secret)).json();
  const me = () => fetch(`${url}/api/me`, { headers: { authorization: `Bearer ${access_token}` } });
  expect((await me()).status).toBe(200);
  // The running server caches client records and access-token records for at most 1 s each
  // (lib/reference/store.ts): a change made by this other process reaches it within that bound.
  const within = async (status: number, request: () => Promise<Response>) => {
    let last = 0;
    for (const started = Date.now(); Date.now() - started < 3000; await new Promise((r) => setTimeout(r, 100))) {
      if ((last = (await request()).status) === status) break;
    }
    expect(last).toBe(status);
  };
  expect(json("clients", "pause", "pausable", "--config", config).active).toBe(false);
  await within(401, () => token("pausable", client_secret));
  await within(401, me);
  expect(json("clients", "resume", "pausable", "--config", config).active).toBe(true);
  await within(200, me);
  expect(json("clients", "revoke-grants", "pausable", "--config", config)).toMatchObject({ client_id: "pausable" });
  await within(401, me);
  const { access_token: second } = await (await token("pausable", client_secret)).json();
  expect(cli("clients", "delete", "pausable", "--config", config).stdout).toContain('deleted client "pausable"');
  await within(401, () => fetch(`${url}/api/me`, { headers: { authorization: `Bearer ${second}` } }));
  await within(401, () => token("pausable", client_secret));
  const gone = cli("clients", "show", "pausable", "--config", config);
  expect([gone.code, gone.stderr.trim()]).toEqual([1, 'no client "pausable" in the store']);
});

test("wrong input: clear messages, exit 2 for the command line and 1 for what the store or the rules refuse", () => {
  expect(cli("clients", "add", "--config", config, "--scope", "read")).toMatchObject({ code: 2, stderr: expect.stringContaining("clients add needs --name") });
  expect(cli("clients", "list")).toMatchObject({ code: 2, stderr: expect.stringContaining("clients list needs --config FILE or --store URL") });
  expect(cli("clients", "show", "--config", config)).toMatchObject({ code: 2, stderr: expect.stringContaining("clients show needs CLIENT_ID") });
  expect(cli("clients", "frobnicate")).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown command "clients frobnicate"') });
  const unknownScope = cli("clients", "add", "--config", config, "--name", "X", "--scope", "admin");
  expect([unknownScope.code, unknownScope.stderr]).toEqual([1, expect.stringContaining('names unknown scope "admin"')]);
  const httpRedirect = cli("clients", "add", "--config", config, "--name", "X", "--scope", "read", "--redirect-uri", "http://evil.example/cb");
  expect([httpRedirect.code, httpRedirect.stderr]).toEqual([1, expect.stringContaining("uses http on a host that is not loopback")]);
  // The one door's redirect URI rules hold on the command line as on every other path.
  for (const uri of ["file:///etc/passwd", "vbscript:msgbox(1)", "javascript:alert(1)", "data:text/html,hi"]) {
    const refused = cli("clients", "add", "--config", config, "--name", "X", "--scope", "read", "--public", "--redirect-uri", uri);
    expect([uri, refused.code, refused.stderr]).toEqual([uri, 1, expect.stringContaining("uses a forbidden scheme")]);
  }
  const duplicate = cli("clients", "add", "--config", config, "--client-id", "nightly", "--name", "X", "--scope", "read");
  expect([duplicate.code, duplicate.stderr]).toEqual([1, expect.stringContaining('client "nightly" already exists')]);
  expect(cli("clients", "list", "--store", "memory")).toMatchObject({ code: 1, stderr: expect.stringContaining("memory store lives inside one server process") });
});

test("migrate and purge run on the store the config names", () => {
  expect(cli("migrate", "--config", config)).toMatchObject({ code: 0, stdout: expect.stringContaining("the schema is up to date") });
  expect(json("purge", "--config", config)).toMatchObject({ purged: expect.any(Number) });
});

test("the same commands on Deno and Bun, on one SQLite file: Deno adds, Bun lists, Node shows", () => {
  const run = (command: string, args: string[]) => {
    const result = spawnSync(command, args, { encoding: "utf8", timeout: 60_000, env: { ...process.env, NO_COLOR: "1" } });
    expect(result.status, result.stderr).toBe(0);
    return result.stdout;
  };
  const denoArgs = ["run", "--allow-net", "--allow-read", "--allow-write", "--allow-env", "--allow-ffi", "lib/cli/serve_deno.ts"];
  expect(run("node_modules/.bin/deno", [...denoArgs, "--version"]).trim()).toBe(run("node_modules/.bin/bun", ["lib/cli/serve_bun.ts", "--version"]).trim());
  const added = JSON.parse(run("node_modules/.bin/deno", [...denoArgs, "clients", "add", "--config", config, "--client-id", "from-deno", "--name", "From Deno", "--scope", "read", "--json"]));
  expect(added.client.origin).toBe("cli");
  expect(run("node_modules/.bin/bun", ["lib/cli/serve_bun.ts", "clients", "list", "--config", config])).toMatch(/^from-deno\s+From Deno\s+confidential\s+active\s+cli/m);
  expect(json("clients", "show", "from-deno", "--config", config).name).toBe("From Deno");
}, 90_000);

test("names with terminal escapes: refused by clients add; escaped by list and show on Node, Deno and Bun, JSON still valid", async () => {
  const hostile = "Evil\u001b[2K\u001b[1A\u001b]0;owned\u0007 \u009b31m \u202egnp.exe\u2028";
  const refused = cli("clients", "add", "--config", config, "--name", hostile, "--scope", "read");
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("U+001B");
  // As a registration before this rule, or another tool writing the store, would have left it.
  const { openStore } = await import("../../lib/reference/store.ts");
  const { nodeDrivers } = await import("../../lib/cli/drivers.ts");
  const store = await openStore(`sqlite:${join(dir, "app.sqlite")}`, { drivers: nodeDrivers });
  await store.storage.saveClient({
    client_id: "evil\u001b[2K", name: hostile, type: "public", redirect_uris: ["http://127.0.0.1/\u202ecb"], scopes: ["read"],
    grant_types: ["authorization_code"], client_credentials_refresh_token: false, active: true, created_at: Date.now(), origin: "registration",
  });
  await store.close();
  const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
  const runtimes: [string, string[]][] = [
    [process.execPath, ["--import", "tsx", "lib/cli/serve.ts"]],
    ["node_modules/.bin/deno", ["run", "--allow-net", "--allow-read", "--allow-write", "--allow-env", "--allow-ffi", "lib/cli/serve_deno.ts"]],
    ["node_modules/.bin/bun", ["lib/cli/serve_bun.ts"]],
  ];
  for (const [command, args] of runtimes) {
    const run = (...rest: string[]) => {
      const result = spawnSync(command, [...args, ...rest, "--config", config], { encoding: "utf8", timeout: 60_000, env: { ...process.env, NO_COLOR: "1" } });
      expect(result.status, result.stderr).toBe(0);
      return result.stdout;
    };
    for (const output of [run("clients", "list"), run("clients", "show", "evil\u001b[2K"), run("clients", "list", "--json"), run("clients", "show", "evil\u001b[2K", "--json")]) {
      expect(output, `${command}: ${JSON.stringify(output)}`).not.toMatch(RAW);
    }
    expect(run("clients", "list")).toContain("Evil\\x1b[2K\\x1b[1A\\x1b]0;owned\\x07 \\x9b31m \\u202egnp.exe\\u2028");
    expect(run("clients", "show", "evil\u001b[2K")).toContain("http://127.0.0.1/\\u202ecb");
    const shown = JSON.parse(run("clients", "show", "evil\u001b[2K", "--json"));
    expect([shown.client_id, shown.name]).toEqual(["evil\u001b[2K", hostile]);
  }
}, 120_000);
