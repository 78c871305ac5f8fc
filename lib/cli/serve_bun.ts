/**
 * The reference server on Bun: `npm run start:bun -- [--port N] [--host H] [--config FILE]`.
 * Prints `listening on http://HOST:PORT` once it accepts connections; stops gracefully on SIGINT and SIGTERM.
 *
 * @module
 */
import process from "node:process";
import { serveBun } from "../adapters/bun.ts";
import { fromRequest, toResponse } from "../http.ts";
import { createReferenceApp, type ReferenceApp } from "../reference/app.ts";
import { banner, loadConfig, parseArgs } from "./args.ts";

/** The slice of the `Bun` namespace used here, typed structurally so `tsc` needs no Bun types. */
const bun = (globalThis as unknown as { Bun: { file(path: string): { text(): Promise<string> } } }).Bun;

/** The client's address from Bun's server object, for the throttle of failed client authentications. */
const clientAddress = (request: Request, server: unknown): string | undefined =>
  (server as { requestIP?: (request: Request) => { address?: string } | null } | undefined)?.requestIP?.(request)?.address;

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const config = await loadConfig(args.config, (path) => bun.file(path).text());
  // The issuer needs the port, which "--port 0" only knows after listening; requests wait for the app.
  let ready!: (app: ReferenceApp) => void;
  const app = new Promise<ReferenceApp>((resolve) => (ready = resolve));
  const running = await serveBun({
    fetch: async (request, server) => {
      const incoming = fromRequest(request, clientAddress(request, server));
      return toResponse(await (await app).handle(incoming));
    },
  }, {
    port: args.port,
    hostname: args.host,
    onError: (error) => console.error("internal error:", error),
  });
  ready(await createReferenceApp({ issuer: running.url, config, onError: (error, where) => console.error(`error at ${where.endpoint}:`, error) }));
  // One write, so whoever waits for the listening line sees the recipes too.
  console.log(`listening on ${running.url}` + banner(running.url, args.config === undefined));
  const stop = (): void => {
    running.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
