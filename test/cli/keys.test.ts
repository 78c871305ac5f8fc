// `oauth2-fetch-server keys list|rotate` as operators run them: real processes on the SQLite file beside the
// config file, while a real server issues JWT access tokens from it. The keys are sealed under the secret in the
// key file the server made beside the config file, which rotate reads there; list needs none. Vitest on Node.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as jose from "jose";
import { afterAll, beforeAll, expect, test, vi } from "vitest";

vi.setConfig({ testTimeout: 60_000 });

const dir = mkdtempSync(join(tmpdir(), "oauth2-keys-"));
const config = join(dir, "app.json");
const SECRET = "backend-secret-0123456789";
writeFileSync(config, JSON.stringify({
  scopes: [{ name: "read", description: "Read" }],
  clients: [{ client_id: "backend", client_secret: SECRET, name: "Backend", scopes: ["read"], grant_types: ["client_credentials"] }],
  access_token_format: "jwt",
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

const accessToken = async () => {
  const response = await fetch(`${url}/token`, {
    method: "POST",
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: "backend", client_secret: SECRET, scope: "read" }),
  });
  return ((await response.json()) as { access_token: string }).access_token;
};
const published = async () => ((await (await fetch(`${url}/jwks`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);

test("list shows the key the server made at start; rotate publishes a successor that the running server serves, and old tokens keep verifying", async () => {
  const listed = json("keys", "list", "--config", config) as { kid: string; state: string; alg: string }[];
  expect(listed.map((k) => [k.state, k.alg])).toEqual([["current", "ES256"]]);
  const before = await accessToken();
  expect(jose.decodeProtectedHeader(before).kid).toBe(listed[0]!.kid);

  const text = cli("keys", "list", "--store", `sqlite:${join(dir, "app.sqlite")}`);
  expect(text.stdout.split("\n")[0]).toMatch(/^KID\s+ALG\s+STATE\s+SIGNS_FROM\s+RETIRES_AT$/);
  expect(text.stdout).toContain(`${listed[0]!.kid}  ES256  current`);

  const rotated = cli("keys", "rotate", "--config", config);
  expect(rotated.code, rotated.stderr).toBe(0);
  expect(rotated.stdout).toMatch(/^published key [\w-]{43} \(ES256\) at \/jwks: it signs from \d{4}-\d\d-\d\dT/m);
  expect(rotated.stdout).toContain(`key ${listed[0]!.kid} signs until then and stays at /jwks until`);
  const again = json("keys", "rotate", "--config", config);
  expect(again.rotated).toBe(false);
  const next = (again.keys as { kid: string; state: string }[]).find((k) => k.state === "next")!.kid;

  // The running server reads the set again within 10 s and publishes the successor; it still signs with the old key.
  const deadline = Date.now() + 20_000;
  while (!(await published()).includes(next) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
  expect(await published()).toEqual([listed[0]!.kid, next]);
  expect(jose.decodeProtectedHeader(await accessToken()).kid).toBe(listed[0]!.kid);
  const set = jose.createRemoteJWKSet(new URL(`${url}/jwks`));
  expect((await jose.jwtVerify(before, set, { issuer: url, typ: "at+jwt" })).payload.client_id).toBe("backend");
});

test("wrong input: a missing store is a usage error; a memory store is refused", () => {
  expect(cli("keys", "list")).toMatchObject({ code: 2, stderr: expect.stringContaining("keys list needs --config FILE or --store URL") });
  expect(cli("keys", "rotate", "--store", "memory")).toMatchObject({ code: 1, stderr: expect.stringContaining("memory store lives inside one server process") });
});
