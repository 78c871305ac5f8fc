/**
 * The reference server's start-up, shared by the Node, Deno and Bun entry points: parse the flags, load the
 * config, listen, build the app for the address it got, print the listening line, stop on SIGINT/SIGTERM.
 *
 * @module
 */
import type { HttpRequest, HttpResponse } from "../http.ts";
import { createReferenceApp, type ReferenceApp } from "../reference/app.ts";
import { banner, loadConfig, parseArgs } from "./args.ts";

/** What an entry point supplies from its runtime. */
export interface CliRuntime {
  args: readonly string[];
  readText(path: string): Promise<string>;
  /** Serves `handle` on the core's request shape; resolves once listening. */
  serve(
    handle: (request: HttpRequest) => Promise<HttpResponse>,
    options: { port: number; hostname: string; onError: (error: unknown) => void },
  ): Promise<{ url: string; close(): Promise<void> }>;
  onSignal(signal: "SIGINT" | "SIGTERM", listener: () => void): void;
  exit(code: number): void;
}

/** Runs the reference server until a signal stops it; a bad flag or config exits 1 with a one-line message. */
export async function main(runtime: CliRuntime): Promise<void> {
  try {
    const args = parseArgs(runtime.args);
    const config = await loadConfig(args.config, runtime.readText);
    // The issuer needs the port, which "--port 0" only knows after listening; requests wait for the app.
    let ready!: (app: ReferenceApp) => void;
    const app = new Promise<ReferenceApp>((resolve) => (ready = resolve));
    const running = await runtime.serve(async (request) => (await app).handle(request), {
      port: args.port,
      hostname: args.host,
      onError: (error) => console.error("internal error:", error),
    });
    ready(await createReferenceApp({
      issuer: running.url,
      config,
      onError: (error, where) => console.error(`error at ${where.endpoint}:`, error),
    }));
    // One write, so whoever waits for the listening line sees the recipes too.
    console.log(`listening on ${running.url}` + banner(running.url, args.config === undefined));
    const stop = (): void => {
      running.close().then(() => runtime.exit(0), () => runtime.exit(1));
    };
    runtime.onSignal("SIGINT", stop);
    runtime.onSignal("SIGTERM", stop);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    runtime.exit(1);
  }
}
