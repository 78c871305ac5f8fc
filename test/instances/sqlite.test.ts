// The reference server on its default durable store: with a config file and no store named, a SQLite file
// beside the config file. Tokens, clients and signed-in sessions survive a restart; the demo says it keeps
// nothing; a store that cannot be opened ends the start with one line and exit code 1.
import { existsSync } from "node:fs";
import { afterEach, expect, test } from "vitest";
import { sha256 } from "../../lib/sha256.ts";
import { nodeDrivers } from "../../lib/cli/drivers.ts";
import { openStore } from "../../lib/reference/store.ts";
import {
  apiStatus, Browser, killInstances, REDIRECT, SECRETS, signIn, spaCode, startFailure, startInstance, token, writeConfig,
} from "./support.ts";

afterEach(killInstances);

const authorizePath = (): string =>
  `/index.php?${new URLSearchParams({ module: "OAuth2", action: "authorize", response_type: "code", client_id: "web", redirect_uri: REDIRECT, scope: "read", state: "s" })}`;

test("with a config file and no store, tokens, clients and sessions live in a SQLite file beside it and survive a restart", async () => {
  const file = writeConfig();
  const first = await startInstance(file);
  const sqlite = file.replace(/\.json$/, ".sqlite");
  expect(first.output()).toContain(`store: sqlite:${sqlite}`);
  expect(existsSync(sqlite)).toBe(true);

  const backend = await token(first.url, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" });
  expect(backend.status).toBe(200);
  const browser = new Browser(first.url);
  const { code, verifier } = await spaCode(first.url, browser);
  const issued = await token(first.url, { grant_type: "authorization_code", client_id: "spa", code, code_verifier: verifier, redirect_uri: REDIRECT });
  expect(issued.status).toBe(200);
  await first.kill();

  // Between the runs, an operator adds a client to the store and pauses a config client: state the config
  // file does not hold, which the next start must keep.
  const store = await openStore(`sqlite:${sqlite}`, { drivers: nodeDrivers });
  await store.storage.saveClient({
    client_id: "added-later", secret_hash: sha256("added-later-secret-0123"), name: "Added", type: "confidential",
    redirect_uris: [], scopes: ["export"], grant_types: ["client_credentials"], client_credentials_refresh_token: false,
    active: true, created_at: Date.now(), origin: "cli",
  });
  await store.storage.setClientActive("web", false);
  await store.close();

  const second = await startInstance(file);
  expect(await apiStatus(second.url, backend.body.access_token as string)).toBe(200);
  expect(await apiStatus(second.url, issued.body.access_token as string)).toBe(200);
  const refreshed = await token(second.url, { grant_type: "refresh_token", client_id: "spa", refresh_token: issued.body.refresh_token as string });
  expect(refreshed.status).toBe(200);
  const added = await token(second.url, { grant_type: "client_credentials", client_id: "added-later", client_secret: "added-later-secret-0123", scope: "export" });
  expect(added.status).toBe(200);
  // The config file wins for what it says, the store for what happened since: "web" stays paused.
  const paused = await token(second.url, { grant_type: "client_credentials", client_id: "web", client_secret: SECRETS.web, scope: "read" });
  expect(paused.status).toBe(401);

  // Signed in before the restart, still signed in after it: the session secret was kept in the key file beside the config.
  browser.base = second.url;
  const page = await (await browser.request(`/index.php?${new URLSearchParams({ module: "OAuth2", action: "authorize", response_type: "code", client_id: "spa", redirect_uri: REDIRECT, scope: "read", state: "s", code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", code_challenge_method: "S256" })}`)).text();
  expect(page).toContain('name="decision"');
  expect(page).not.toContain('name="password"');
}, 60_000);

test("a client removed from the config file is deleted at the next start, with its tokens", async () => {
  const file = writeConfig();
  const first = await startInstance(file);
  const backend = await token(first.url, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" });
  expect(backend.status).toBe(200);
  await first.kill();
  const { writeFileSync } = await import("node:fs");
  const { config } = await import("../runtimes/reference_process.ts");
  const without = config();
  without.clients = (without.clients as { client_id: string }[]).filter((c) => c.client_id !== "backend");
  writeFileSync(file, JSON.stringify(without));
  const second = await startInstance(file);
  expect(await apiStatus(second.url, backend.body.access_token as string)).toBe(401);
}, 60_000);

test("two servers on one SQLite file share one generated key file: a login at one is a login at the other", async () => {
  const file = writeConfig();
  const a = await startInstance(file);
  const b = await startInstance(file);
  const browser = new Browser(a.url);
  await signIn(browser, authorizePath());
  browser.base = b.url;
  const page = await (await browser.request(authorizePath())).text();
  expect(page).toContain('name="decision"');
}, 60_000);

test("OAUTH2_FETCH_SERVER_SECRET signs sessions: two servers on separate stores with one secret accept each other's", async () => {
  const env = { OAUTH2_FETCH_SERVER_SECRET: "a-shared-secret-of-at-least-32-characters" };
  const a = await startInstance(writeConfig(), [], env);
  const b = await startInstance(writeConfig(), [], env);
  const browser = new Browser(a.url);
  await signIn(browser, authorizePath());
  browser.base = b.url;
  expect(await (await browser.request(authorizePath())).text()).toContain('name="decision"');
  const short = await startFailure(writeConfig(), [], { OAUTH2_FETCH_SERVER_SECRET: "too-short" });
  expect(short.code).toBe(1);
  expect(short.output).toContain("The signing secret must be at least 32 characters");
}, 60_000);

test("the demo keeps everything in memory and says so", async () => {
  const { spawn } = await import("node:child_process");
  const child = spawn(process.execPath, ["--import", "tsx", "lib/cli/serve.ts", "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(output)), 20_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (/^store: /m.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  child.kill("SIGKILL");
  expect(output).toMatch(/^store: memory \(nothing survives a restart/m);
}, 30_000);

test("a store that cannot be opened ends the start with one line and exit code 1", async () => {
  const file = writeConfig();
  const unknown = await startFailure(file, ["--store", "mysql://db.example/oauth"]);
  expect(unknown.code).toBe(1);
  expect(unknown.output.trim().split("\n").filter((l) => !l.startsWith("warning:"))).toEqual([
    'Cannot open store "mysql://db.example/oauth": use memory, sqlite:PATH, postgres://… or redis://…',
  ]);
  // A shared store needs a configured secret (checked first); with one, the unreachable database is named.
  const unreachable = await startFailure(file, ["--store", "postgres://app:hunter2-password@127.0.0.1:1/oauth", "--secret", "s".repeat(32)]);
  expect(unreachable.code).toBe(1);
  expect(unreachable.output).toContain('Cannot open store "postgres://app:***@127.0.0.1:1/oauth"');
  expect(unreachable.output).not.toContain("hunter2");
}, 60_000);

test("a missing driver is named, with the command that installs it", async () => {
  const drivers = { ...nodeDrivers, importPackage: (name: string) => Promise.reject(new Error(`Cannot find package '${name}'`)) };
  await expect(openStore("postgres://127.0.0.1:1/x", { drivers })).rejects.toThrow(
    'Cannot open store "postgres://127.0.0.1:1/x": install its driver with "npm install pg"',
  );
  await expect(openStore("redis://127.0.0.1:1", { drivers })).rejects.toThrow('install its driver with "npm install ioredis"');
});
