// The npm package as users get it: `npm pack` (which builds dist/ through prepack), installed offline into a
// fresh project, imported entry point by entry point in plain Node (no tsx), serving a client_credentials
// request over HTTP; and its declarations type-checked from a consumer's TypeScript, skipLibCheck off.
// Vitest on Node only.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
  name: string;
  version: string;
  exports: Record<string, { types: string; default: string }>;
};
const entries = Object.keys(pkg.exports).map((key) => (key === "." ? pkg.name : `${pkg.name}/${key.slice(2)}`));

const work = mkdtempSync(join(tmpdir(), "oauth2-pack-"));
const consumer = join(work, "consumer");
let files: string[] = [];

const run = (command: string, args: string[], cwd: string): string =>
  execFileSync(command, args, {
    cwd,
    encoding: "utf8",
    timeout: 120_000,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, npm_config_update_notifier: "false", npm_config_fund: "false", npm_config_audit: "false" },
  });

beforeAll(() => {
  // --json lists the packed files; prepack runs `npm run build` first.
  const packed = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", work], process.cwd())) as [
    { filename: string; files: { path: string }[] },
  ];
  files = packed[0].files.map((f) => f.path);
  mkdirSync(consumer);
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  // No dependencies, so no network: --offline makes any attempt fail instead of hanging.
  run("npm", ["install", "--offline", "--ignore-scripts", "--no-package-lock", join(work, packed[0].filename)], consumer);
}, 180_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("the packed tarball", () => {
  test("holds dist/ (JS and declarations for every entry point), the README and the manifest, and nothing else", () => {
    for (const target of Object.values(pkg.exports)) {
      expect(files).toContain(target.default.slice(2));
      expect(files).toContain(target.types.slice(2));
    }
    for (const file of ["README.md", "package.json", "LICENSE", "CHANGELOG.md", "lib/reference/config.schema.json"]) expect(files).toContain(file);
    // npm packs every README it finds: the docs beside the code ship with it (lib/README.md, lib/reference/README.md).
    const stray = files.filter((f) => !/^dist\/.*\.(js|d\.ts)$/.test(f) && !/(^|\/)README\.md$/.test(f) && !["package.json", "LICENSE", "CHANGELOG.md", "lib/reference/config.schema.json"].includes(f));
    expect(stray).toEqual([]);
    // No TypeScript sources or tests; of the command line, only the Node build (the Deno and Bun entry points run from source).
    expect(files.filter((f) => /(^|\/)test\/|\.test\.|(?<!\.d)\.ts$|serve_(deno|bun)/.test(f))).toEqual([]);
    expect(files).toContain("dist/lib/cli/serve.js");
  });

  test("installed, every entry point imports in plain Node and a client_credentials request succeeds over HTTP", () => {
    writeFileSync(join(consumer, "main.mjs"), `
      const entries = ${JSON.stringify(entries)};
      const loaded = {};
      for (const entry of entries) loaded[entry] = Object.keys(await import(entry)).sort();
      const { createAuthorizationServer, storageContract } = await import("oauth2-fetch-server");
      const { serveNode } = await import("oauth2-fetch-server/adapters/node");
      const { serveDeno } = await import("oauth2-fetch-server/adapters/deno");
      const { serveBun } = await import("oauth2-fetch-server/adapters/bun");
      const { ALL_CASES } = await import("oauth2-fetch-server/conformance");

      const server = createAuthorizationServer({ issuer: "http://127.0.0.1", scopes: { read: "Read" } });
      const { client_secret } = await server.clients.register({
        client_id: "job", name: "Job", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"],
      });
      const running = await serveNode(server, { port: 0 });
      try {
        const response = await fetch(running.url + "/index.php?module=OAuth2&action=token", {
          method: "POST",
          headers: { authorization: "Basic " + btoa("job:" + client_secret) },
          body: new URLSearchParams({ grant_type: "client_credentials", scope: "read" }),
        });
        const body = await response.json();
        const token = await server.verifyAuthorization("Bearer " + body.access_token, "read");
        const wrongRuntime = await Promise.all([serveDeno(server, { port: 0 }), serveBun(server, { port: 0 })].map(
          (p) => p.then(() => "served", (e) => e.message),
        ));
        console.log(JSON.stringify({
          loaded, status: response.status, body, token, wrongRuntime,
          contractChecks: storageContract(() => undefined).length, cases: ALL_CASES.length,
        }));
      } finally {
        await running.close();
      }
    `);
    const out = JSON.parse(run(process.execPath, ["main.mjs"], consumer)) as {
      loaded: Record<string, string[]>;
      status: number;
      body: Record<string, unknown>;
      token: Record<string, unknown>;
      wrongRuntime: string[];
      contractChecks: number;
      cases: number;
    };
    expect(Object.keys(out.loaded).sort()).toEqual([...entries].sort());
    expect(out.loaded["oauth2-fetch-server"]).toContain("createAuthorizationServer");
    expect(out.loaded["oauth2-fetch-server/adapters/node"]).toEqual(expect.arrayContaining(["serveNode", "toNodeListener"]));
    expect(out.loaded["oauth2-fetch-server/adapters/deno"]).toContain("serveDeno");
    expect(out.loaded["oauth2-fetch-server/adapters/bun"]).toContain("serveBun");
    expect(out.loaded["oauth2-fetch-server/conformance"]).toContain("runConformance");
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "read" });
    expect(out.token).toMatchObject({ client_id: "job", scope: "read" });
    expect(out.wrongRuntime).toEqual(["Cannot serve: serveDeno needs the Deno runtime", "Cannot serve: serveBun needs the Bun runtime"]);
    expect(out.contractChecks).toBeGreaterThan(0);
    expect(out.cases).toBeGreaterThan(0);
  }, 60_000);

  test("its bin runs with npx: --help, --version, hash-password, clients add and list, serve with a config file, its request log and health checks", async () => {
    const npx = (args: string[], input = "") =>
      execFileSync("npx", ["--no-install", "oauth2-fetch-server", ...args], {
        cwd: consumer, encoding: "utf8", timeout: 60_000, input,
        env: { ...process.env, npm_config_update_notifier: "false", npm_config_offline: "true" },
      });
    expect(npx(["--help"])).toContain("usage: oauth2-fetch-server");
    expect(npx(["--version"]).trim()).toBe(pkg.version);
    const hash = npx(["hash-password"], "consumer password").trim();
    expect(hash).toMatch(/^pbkdf2-sha256\$/);
    writeFileSync(join(consumer, "config.json"), JSON.stringify({
      $schema: "./node_modules/oauth2-fetch-server/lib/reference/config.schema.json",
      users: [{ username: "ann", password_hash: hash }],
      scopes: [{ name: "read", description: "Read" }],
      clients: [],
    }));
    // A client added from the command line, into the SQLite file beside the config, before the server starts.
    const added = JSON.parse(npx(["clients", "add", "--config", "config.json", "--client-id", "job", "--name", "Job", "--scope", "read", "--json"]));
    expect(added.client).toMatchObject({ client_id: "job", origin: "cli" });
    expect(npx(["clients", "list", "--config", "config.json"])).toMatch(/^job\s+Job\s+confidential\s+active\s+cli/m);
    const child = spawn("npx", ["--no-install", "oauth2-fetch-server", "serve", "--port", "0", "--config", "config.json"], {
      cwd: consumer, stdio: ["ignore", "pipe", "pipe"], detached: true,
    });
    try {
      let output = "";
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(output)), 30_000);
        const onData = (chunk: Buffer) => {
          output += chunk;
          const match = /listening on (\S+)/.exec(output);
          if (match) (clearTimeout(timer), resolve(match[1]!));
        };
        child.stdout!.on("data", onData);
        child.stderr!.on("data", onData);
      });
      const response = await fetch(`${url}/token`, {
        method: "POST",
        body: new URLSearchParams({ grant_type: "client_credentials", client_id: "job", client_secret: added.client_secret, scope: "read" }),
      });
      expect(response.status).toBe(200);
      // The health check, and the request log on stdout.
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const logged = output.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line));
      expect(logged.map((l) => [l.path, l.status])).toEqual([["/token", 200], ["/healthz", 200], ["/readyz", 200]]);
      expect(logged[0]).toMatchObject({ method: "POST", client_id: "job" });
      expect(output).not.toContain(added.client_secret);
    } finally {
      process.kill(-child.pid!, "SIGKILL");
    }
  }, 90_000);

  test("its declarations type-check from a strict consumer (nodenext, skipLibCheck off, no @types/node)", () => {
    writeFileSync(join(consumer, "main.ts"), `
      import { createAuthorizationServer, type AuthorizationServer, type TokenResponse } from "oauth2-fetch-server";
      import { serveNode, toNodeListener, type NodeServer } from "oauth2-fetch-server/adapters/node";
      import { serveDeno, type DenoServer } from "oauth2-fetch-server/adapters/deno";
      import { serveBun, type BunServer } from "oauth2-fetch-server/adapters/bun";
      import { runConformance, type Report } from "oauth2-fetch-server/conformance";

      const server: AuthorizationServer = createAuthorizationServer({ issuer: "https://a.example", scopes: { read: "Read" } });
      const handler: (request: Request) => Promise<Response> = server.fetch;
      const node: Promise<NodeServer> = serveNode(server, { port: 0 });
      const deno: Promise<DenoServer> = serveDeno(server, { port: 0, hostname: "0.0.0.0" });
      const bun: Promise<BunServer> = serveBun({ fetch: (request) => server.fetch(request) }, { port: 0 });
      const report: Promise<Report> = runConformance({});
      export { bun, deno, handler, node, report, toNodeListener };
      export type { TokenResponse };
    `);
    writeFileSync(join(consumer, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2023", "DOM", "DOM.Iterable"],
        types: [], strict: true, exactOptionalPropertyTypes: true, noEmit: true, skipLibCheck: false,
      },
      files: ["main.ts"],
    }));
    const tsc = resolve("node_modules/typescript/bin/tsc");
    let output = "";
    try {
      output = run(process.execPath, [tsc, "-p", "tsconfig.json"], consumer);
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error);
    }
    expect(output).toBe("");
  }, 60_000);
});
