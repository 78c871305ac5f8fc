/**
 * The reference server on Node: `npm start -- [--port N] [--host H] [--config FILE]`.
 * Prints `listening on http://HOST:PORT` once it accepts connections; stops gracefully on SIGINT and SIGTERM.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import process from "node:process";
import { serveNode } from "../adapters/node.ts";
import { createReferenceApp, type ReferenceApp } from "../reference/app.ts";
import { banner, loadConfig, parseArgs } from "./args.ts";

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const config = await loadConfig(args.config, (path) => readFile(path, "utf8"));
  // The issuer needs the port, which "--port 0" only knows after listening; requests wait for the app.
  let ready!: (app: ReferenceApp) => void;
  const app = new Promise<ReferenceApp>((resolve) => (ready = resolve));
  const running = await serveNode({ handle: async (request) => (await app).handle(request) }, {
    port: args.port,
    hostname: args.host,
    onError: (error) => console.error("internal error:", error),
  });
  ready(await createReferenceApp({ issuer: running.url, config, onError: (error, where) => console.error(`error at ${where.endpoint}:`, error) }));
  // One write, so whoever waits for the listening line sees the recipes too.
  console.log(`listening on ${running.url}` + banner(running.url, args.config === undefined));
  const stop = () => {
    running.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
