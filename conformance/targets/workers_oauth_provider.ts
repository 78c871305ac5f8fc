/**
 * @cloudflare/workers-oauth-provider 1.2 (a devDependency) as a conformance target, on real workerd (the
 * `workerd` devDependency's binary): a server nobody here wrote, in the runtime it is written for. Bundles
 * `workers_oauth_provider/worker.ts` with esbuild, writes a workerd config (the Worker, a KV namespace kept by
 * workerd's own KV service on a temporary disk, a socket on 127.0.0.1 with a free port), starts workerd and
 * prints `listening on http://127.0.0.1:PORT` once it answers. Stops with SIGTERM, or by itself after ten
 * minutes, and removes its files.
 *
 *   npx tsx conformance/cli.ts --target conformance/targets/workers-oauth-provider.json \
 *     --serve "tsx conformance/targets/workers_oauth_provider.ts" \
 *     --expect conformance/targets/workers-oauth-provider.expect.jsonc
 *
 * @module
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = fileURLToPath(new URL(".", import.meta.url));
const workerd = fileURLToPath(new URL("../../node_modules/.bin/workerd", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "workers-oauth-provider-"));
for (const sub of ["do", "blobs"]) mkdirSync(join(dir, sub));

await build({
  entryPoints: [join(here, "workers_oauth_provider/worker.ts")],
  outfile: join(dir, "worker.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  mainFields: ["module", "main"],
  target: "es2022",
  conditions: ["workerd", "worker", "browser"],
  external: ["cloudflare:*", "node:*"],
  logLevel: "warning",
});

/** Writes the config once the port is known: the Worker's ORIGIN binding names it. */
function config(origin: string): string {
  const json = (value: unknown) => JSON.stringify(JSON.stringify(value));
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .oauthWorker),
    (name = "kv", worker = .kvWorker),
    (name = "kv-do", disk = (path = ${JSON.stringify(join(dir, "do"))}, writable = true)),
    (name = "kv-blobs", disk = (path = ${JSON.stringify(join(dir, "blobs"))}, writable = true)),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:0", http = (), service = "main") ],
);

const oauthWorker :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  compatibilityDate = "2026-07-01",
  compatibilityFlags = ["nodejs_compat", "global_fetch_strictly_public"],
  bindings = [
    (name = "OAUTH_KV", kvNamespace = (name = "kv", props = (json = ${json({ namespace: "oauth" })}))),
    (name = "ORIGIN", text = ${JSON.stringify(origin)}),
  ],
);

const kvWorker :Workerd.Worker = (
  modules = [ (name = "kv.js", bundled = "/workerd/kv.js") ],
  compatibilityDate = "2026-07-01",
  durableObjectNamespaces = [ (className = "KVNamespace", uniqueKey = "conformance-kv", enableSql = true) ],
  durableObjectStorage = (localDisk = "kv-do"),
  bindings = [
    (name = "SHARD", durableObjectNamespace = "KVNamespace"),
    (name = "BLOBS", service = "kv-blobs"),
  ],
);
`;
}

/** A free loopback port: workerd then listens on it (the control pipe would say so, but ORIGIN must be known first). */
async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

const port = await freePort();
const origin = `http://127.0.0.1:${port}`;
writeFileSync(join(dir, "config.capnp"), config(origin));
const child = spawn(workerd, ["serve", "config.capnp", "--experimental", "--socket-addr", `http=127.0.0.1:${port}`, "--control-fd", "3"], {
  cwd: dir,
  stdio: ["ignore", "inherit", "inherit", "pipe"],
});

let stopping = false;
function stop(code: number): void {
  if (stopping) return;
  stopping = true;
  child.kill("SIGTERM");
  setTimeout(() => child.kill("SIGKILL"), 2000).unref();
  child.once("exit", () => {
    rmSync(dir, { recursive: true, force: true });
    process.exit(code);
  });
}
child.once("exit", (code) => {
  if (!stopping) {
    console.error(`workerd exited (${code})`);
    rmSync(dir, { recursive: true, force: true });
    process.exit(1);
  }
});
process.on("SIGTERM", () => stop(0));
process.on("SIGINT", () => stop(0));
setTimeout(() => stop(0), 600_000).unref();

// workerd reports on the control pipe when the socket listens; then the Worker is asked once, so that the
// clients are registered before the URL is printed.
const control = child.stdio[3] as Readable;
await new Promise<void>((ready, fail) => {
  let seen = "";
  const timer = setTimeout(() => fail(new Error(`workerd did not listen within 20 s: ${seen}`)), 20_000);
  control.on("data", (chunk: Buffer) => {
    seen += chunk.toString();
    if (/"event"\s*:\s*"listen"/.test(seen)) {
      clearTimeout(timer);
      ready();
    }
  });
});
const metadata = await fetch(`${origin}/.well-known/oauth-authorization-server`);
if (!metadata.ok) {
  console.error(`The Worker answered ${metadata.status}: ${await metadata.text()}`);
  stop(1);
} else {
  await metadata.body?.cancel();
  console.log(`listening on ${origin}`);
}
