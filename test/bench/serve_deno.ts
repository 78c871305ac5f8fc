/**
 * A bench server on Deno: `deno run --allow-net test/bench/serve_deno.ts --mode bare|oauth|stored [--stored N]`.
 *
 * - `bare`: `Deno.serve` reads the form body and answers constant JSON: the ceiling for Deno.
 * - `oauth`: `Deno.serve(server.fetch)`, exactly as the README shows it.
 * - `stored`: the same, its store pre-filled with `--stored N` records, plus a Bearer-protected resource
 *   port (see stored.ts).
 *
 * Prints one line of JSON (`ReadyLine`) once it listens; stops on SIGTERM.
 *
 * @module
 */
import { bareFetch, controlFetch, createBenchServer, type ReadyLine, serveMode } from "./fixture.ts";
import { prefill, resourceFetch, storedControlFetch, storedCount } from "./stored.ts";

/** The part of the Deno namespace used here, so that this file type-checks without Deno's types. */
declare const Deno: {
  args: string[];
  serve(
    options: { port: number; hostname: string; onListen?: (address: { port: number }) => void },
    handler: (request: Request, info: unknown) => Response | Promise<Response>,
  ): { addr: { port: number } };
  addSignalListener(signal: "SIGTERM", handler: () => void): void;
  exit(code: number): never;
};

const listen = (handler: (request: Request, info: unknown) => Promise<Response>): number =>
  Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, handler).addr.port;

const mode = serveMode(Deno.args);
let ready: ReadyLine;
if (mode === "oauth") {
  const server = await createBenchServer();
  ready = { port: listen(server.fetch), control: listen(controlFetch(server)) };
} else if (mode === "stored") {
  // Pre-filled before it listens (see stored.ts).
  const server = await createBenchServer();
  const filled = await prefill(server, storedCount(Deno.args));
  ready = {
    port: listen(server.fetch),
    control: listen(storedControlFetch(server)),
    resource: listen(resourceFetch(server)),
    prefill: filled,
  };
} else {
  ready = { port: listen(bareFetch) };
}
console.log(JSON.stringify(ready));
Deno.addSignalListener("SIGTERM", () => Deno.exit(0));
