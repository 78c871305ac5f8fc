/**
 * The reference server on Node: `npm start -- [--port N] [--host H] [--config FILE]`.
 * Prints `listening on http://HOST:PORT` once it accepts connections; stops gracefully on SIGINT and SIGTERM.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import process from "node:process";
import { serveNode } from "../adapters/node.ts";
import { main } from "./main.ts";

await main({
  args: process.argv.slice(2),
  readText: (path) => readFile(path, "utf8"),
  serve: (handle, options) => serveNode({ handle }, options),
  onSignal: (signal, listener) => process.once(signal, listener),
  exit: (code) => process.exit(code),
});
