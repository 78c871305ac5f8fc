/**
 * The parts of the command's runtime that Node and Bun share: both run it as a `node:process` with
 * `node:http` (see serve_bun.ts for why Bun does not use Bun.serve).
 *
 * @module
 */
import { appendFile, writeFile } from "node:fs/promises";
import process from "node:process";
import { serveNode } from "../adapters/node.ts";
import type { CliRuntime } from "./main.ts";

/** Arguments, environment, standard input, signals, exit, the audit-log file and the server, from `node:process`. */
export function nodeProcess(): Omit<CliRuntime, "readText" | "drivers" | "noConnectionTimeouts"> {
  return {
    args: process.argv.slice(2),
    env: (name) => process.env[name],
    readStdin: async () => {
      let text = "";
      for await (const chunk of process.stdin) text += String(chunk);
      return text;
    },
    serve: serveNode,
    onSignal: (signal, listener) => process.once(signal, listener),
    exit: (code) => process.exit(code),
    appendText: (path, text) => appendFile(path, text),
    // "wx": only if absent, so two instances starting at once keep one secret; the mode applies at creation.
    createPrivateFile: (path, text) =>
      writeFile(path, text, { flag: "wx", mode: 0o600 }).then(() => true, (error: { code?: string }) => {
        if (error.code === "EEXIST") return false;
        throw error;
      }),
  };
}
