/**
 * A bench server on Bun: `bun test/bench/serve_bun.ts --mode bare|oauth|stored [--stored N]`.
 *
 * - `bare`: `Bun.serve` reads the form body and answers constant JSON: the ceiling for Bun.
 * - `oauth`: `Bun.serve({ fetch: server.fetch })`, exactly as the README shows it.
 * - `stored`: the same, its store pre-filled with `--stored N` records, plus a Bearer-protected resource
 *   port (see stored.ts).
 *
 * Prints one line of JSON (`ReadyLine`) once it listens; stops on SIGTERM.
 *
 * @module
 */
import { bareFetch, controlFetch, createBenchServer, type ReadyLine, serveMode } from "./fixture.ts";
import { prefill, resourceFetch, storedControlFetch, storedCount } from "./stored.ts";

/** The part of the Bun namespace used here, so that this file type-checks without Bun's types. */
declare const Bun: {
  argv: string[];
  serve(options: {
    port: number;
    hostname: string;
    fetch: (request: Request, server: unknown) => Response | Promise<Response>;
  }): { port: number };
};

const listen = (fetch: (request: Request, server: unknown) => Promise<Response>): number =>
  Bun.serve({ port: 0, hostname: "127.0.0.1", fetch }).port;

const mode = serveMode(Bun.argv);
let ready: ReadyLine;
if (mode === "oauth") {
  const server = await createBenchServer();
  ready = { port: listen(server.fetch), control: listen(controlFetch(server)) };
} else if (mode === "stored") {
  // Pre-filled before it listens (see stored.ts).
  const server = await createBenchServer();
  const filled = await prefill(server, storedCount(Bun.argv));
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
