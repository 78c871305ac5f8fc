/**
 * The reference server on Bun: `npm run start:bun -- [--port N] [--host H] [--config FILE]`.
 * Prints `listening on http://HOST:PORT` once it accepts connections; stops gracefully on SIGINT and SIGTERM.
 *
 * @module
 */
import { bunDrivers } from "./drivers.ts";
import { main } from "./main.ts";
import { nodeProcess } from "./node_process.ts";

/** The slice of the `Bun` namespace used here, typed structurally so `tsc` needs no Bun types. */
const bun = (globalThis as unknown as { Bun: { file(path: string): { text(): Promise<string> } } }).Bun;

// node:http (nodeProcess().serve), not Bun.serve: Bun.serve resolves dot segments and rewrites absolute-form
// targets before any handler sees them, so the request target could not be checked as received (issue 15, finding 7).
await main({ ...nodeProcess(), readText: (path) => bun.file(path).text(), drivers: bunDrivers });
