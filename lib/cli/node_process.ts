/**
 * The parts of the command's runtime that Node and Bun share: both run it as a `node:process` with
 * `node:http` (see serve_bun.ts for why Bun does not use Bun.serve).
 *
 * @module
 */
import { appendFile } from "node:fs/promises";
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
  };
}
