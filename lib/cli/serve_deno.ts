/**
 * The reference server on Deno: `deno task start -- [--port N] [--host H] [--config FILE]`.
 * Prints `listening on http://HOST:PORT` once it accepts connections; stops gracefully on SIGINT and SIGTERM.
 * Needs `--allow-net`, and `--allow-read` for `--config`.
 *
 * @module
 */
import { serveDeno } from "../adapters/deno.ts";
import { fromRequest, toResponse } from "../http.ts";
import { createReferenceApp, type ReferenceApp } from "../reference/app.ts";
import { banner, loadConfig, parseArgs } from "./args.ts";

/** The slice of the `Deno` namespace used here, typed structurally so `tsc` needs no Deno types. */
const deno = (globalThis as unknown as {
  Deno: {
    readonly args: readonly string[];
    readTextFile(path: string): Promise<string>;
    addSignalListener(signal: "SIGINT" | "SIGTERM", handler: () => void): void;
    exit(code: number): never;
  };
}).Deno;

/** The client's address from `Deno.serve`'s handler info, for the throttle of failed client authentications. */
const clientAddress = (info: unknown): string | undefined =>
  (info as { remoteAddr?: { hostname?: string } } | undefined)?.remoteAddr?.hostname;

async function main(): Promise<void> {
  // `deno task start -- --port 0` passes the "--" through; npm and Bun drop it.
  const args = parseArgs(deno.args[0] === "--" ? deno.args.slice(1) : deno.args);
  const config = await loadConfig(args.config, (path) => deno.readTextFile(path));
  // The issuer needs the port, which "--port 0" only knows after listening; requests wait for the app.
  let ready!: (app: ReferenceApp) => void;
  const app = new Promise<ReferenceApp>((resolve) => (ready = resolve));
  const running = await serveDeno({
    fetch: async (request, info) => {
      // Read before waiting: Deno's handler info is only valid while the request is open.
      const incoming = fromRequest(request, clientAddress(info));
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
    running.close().then(() => deno.exit(0), () => deno.exit(1));
  };
  deno.addSignalListener("SIGINT", stop);
  deno.addSignalListener("SIGTERM", stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  deno.exit(1);
});
