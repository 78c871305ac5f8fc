/**
 * The reference server on Deno: `deno task start -- [--port N] [--host H] [--config FILE]`.
 * Prints `listening on http://HOST:PORT` once it accepts connections; stops gracefully on SIGINT and SIGTERM.
 * Needs `--allow-net`, `--allow-read` for `--config`, `--allow-write` for its SQLite file, and `--allow-env` for
 * `{ "env": "NAME" }` values in it.
 *
 * @module
 */
import { serveDeno } from "../adapters/deno.ts";
import { nodeDrivers } from "./drivers.ts";
import { main } from "./main.ts";

/** The slice of the `Deno` namespace used here, typed structurally so `tsc` needs no Deno types. */
const deno = (globalThis as unknown as {
  Deno: {
    readonly args: readonly string[];
    readTextFile(path: string): Promise<string>;
    writeTextFile(path: string, text: string, options: { append?: boolean; createNew?: boolean; mode?: number }): Promise<void>;
    readonly errors: { readonly AlreadyExists: new () => Error };
    readonly env: { get(name: string): string | undefined };
    readonly stdin: { readonly readable: ReadableStream<Uint8Array> };
    addSignalListener(signal: "SIGINT" | "SIGTERM", handler: () => void): void;
    exit(code: number): never;
  };
}).Deno;

await main({
  // `deno task start -- --port 0` passes the "--" through; npm and Bun drop it.
  args: deno.args[0] === "--" ? deno.args.slice(1) : deno.args,
  readText: (path) => deno.readTextFile(path),
  env: (name) => deno.env.get(name),
  readStdin: () => new Response(deno.stdin.readable).text(),
  serve: serveDeno,
  onSignal: (signal, listener) => deno.addSignalListener(signal, listener),
  drivers: nodeDrivers,
  exit: (code) => deno.exit(code),
  noConnectionTimeouts: "Deno",
  appendText: (path, text) => deno.writeTextFile(path, text, { append: true }),
  // createNew: only if absent, so two instances starting at once keep one secret; the mode applies at creation.
  createPrivateFile: (path, text) =>
    deno.writeTextFile(path, text, { createNew: true, mode: 0o600 }).then(() => true, (error: unknown) => {
      if (error instanceof deno.errors.AlreadyExists) return false;
      throw error;
    }),
});
