/**
 * The reference server on Bun: `npm run start:bun -- [--port N] [--host H] [--config FILE]`.
 * Prints `listening on http://HOST:PORT` once it accepts connections; stops gracefully on SIGINT and SIGTERM.
 *
 * @module
 */
import { appendFile } from "node:fs/promises";
import process from "node:process";
import { serveNode } from "../adapters/node.ts";
import { bunDrivers } from "./drivers.ts";
import { main } from "./main.ts";

/** The slice of the `Bun` namespace used here, typed structurally so `tsc` needs no Bun types. */
const bun = (globalThis as unknown as { Bun: { file(path: string): { text(): Promise<string> } } }).Bun;

await main({
  args: process.argv.slice(2),
  readText: (path) => bun.file(path).text(),
  env: (name) => process.env[name],
  readStdin: async () => {
    let text = "";
    for await (const chunk of process.stdin) text += String(chunk);
    return text;
  },
  // node:http, not Bun.serve: Bun.serve resolves dot segments and rewrites absolute-form targets before any
  // handler sees them, so the request target could not be checked as received (issue 15, finding 7).
  serve: serveNode,
  onSignal: (signal, listener) => process.once(signal, listener),
  drivers: bunDrivers,
  exit: (code) => process.exit(code),
  appendText: (path, text) => appendFile(path, text),
});
