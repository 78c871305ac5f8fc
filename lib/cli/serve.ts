#!/usr/bin/env node
/**
 * The `oauth2-fetch-server` command on Node (the package's `bin`, built to dist/lib/cli/serve.js), and the
 * reference server of `npm start -- [--port N] [--host H] [--config FILE]` (serve is the default command).
 * Prints `listening on http://HOST:PORT` once it accepts connections; stops gracefully on SIGINT and SIGTERM.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { nodeDrivers } from "./drivers.ts";
import { main } from "./main.ts";
import { nodeProcess } from "./node_process.ts";

await main({ ...nodeProcess(), readText: (path) => readFile(path, "utf8"), drivers: nodeDrivers });
