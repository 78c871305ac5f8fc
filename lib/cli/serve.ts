#!/usr/bin/env node
/**
 * The `oauth2-fetch-server` command on Node (the package's `bin`, built to dist/lib/cli/serve.js), and the
 * reference server of `npm start -- [--port N] [--host H] [--config FILE]` (serve is the default command).
 * Prints `listening on http://HOST:PORT` once it accepts connections; stops gracefully on SIGINT and SIGTERM.
 *
 * @module
 */
import { appendFile, readFile } from "node:fs/promises";
import process from "node:process";
import { serveNode } from "../adapters/node.ts";
import { nodeDrivers } from "./drivers.ts";
import { main } from "./main.ts";

await main({
  args: process.argv.slice(2),
  readText: (path) => readFile(path, "utf8"),
  env: (name) => process.env[name],
  readStdin: async () => {
    let text = "";
    for await (const chunk of process.stdin) text += String(chunk);
    return text;
  },
  serve: serveNode,
  onSignal: (signal, listener) => process.once(signal, listener),
  drivers: nodeDrivers,
  exit: (code) => process.exit(code),
  appendText: (path, text) => appendFile(path, text),
});
