/**
 * Bun adapter. `Bun.serve({ fetch: server.fetch })` already works as it is: the handler is bound and reads the
 * client's address from Bun's second argument (the server's `requestIP`). {@link serveBun} adds the port and
 * interface, a generic 500 for anything thrown, and a graceful shutdown that cuts stragglers after a deadline.
 *
 * The Bun APIs used are typed structurally here, so this file type-checks without `bun-types`.
 *
 * @example
 * ```ts
 * import { createAuthorizationServer } from "oauth2-fetch-server";
 * import { serveBun } from "oauth2-fetch-server/adapters/bun";
 *
 * const server = createAuthorizationServer({ issuer: "http://127.0.0.1:8080", scopes: { read: "Read" } });
 * const running = await serveBun(server, { port: 8080 });
 * process.once("SIGTERM", () => void running.close().then(() => process.exit(0)));
 * ```
 *
 * @module
 */
import { checkFetchRequest } from "../request_head.ts";
import { baseUrl, type FetchApp, logError, report, serverError } from "./fetch.ts";

export type { FetchApp } from "./fetch.ts";

/** Options of {@link serveBun}. */
export interface ServeBunOptions {
  /** The port; 0 picks a free one. */
  port: number;
  /** The interface to listen on; default `127.0.0.1`. Use `0.0.0.0` or `::` to accept outside connections. */
  hostname?: string;
  /** Aborting it closes the server gracefully, as {@link BunServer.close} does. */
  signal?: AbortSignal;
  /** Called with what the handler threw; the client gets a generic 500. Defaults to `console.error`. */
  onError?: (error: unknown) => void;
  /** Seconds a connection may sit idle before Bun closes it; Bun's default is 10. */
  idleTimeout?: number;
  /** How long `close()` waits for requests in flight before cutting their connections, in ms; default 10 s. */
  shutdownTimeout?: number;
}

/** A running server, as {@link serveBun} resolves it. */
export interface BunServer {
  /** The port it listens on: the one asked for, or the one picked for port 0. */
  readonly port: number;
  /** The interface it listens on. */
  readonly hostname: string;
  /** The base URL, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  /**
   * Stops accepting connections, lets requests in flight finish and, after `shutdownTimeout`, cuts whatever is
   * left. Safe to call twice.
   */
  close(): Promise<void>;
}

/** The slice of `Bun.serve` used here. */
interface BunServeApi {
  serve(options: {
    port: number;
    hostname: string;
    idleTimeout?: number;
    fetch: (request: Request, server: unknown) => Response | Promise<Response>;
    error: (error: unknown) => Response;
  }): { readonly port: number; stop(closeActiveConnections?: boolean): Promise<void> };
}

/**
 * Serves the app with `Bun.serve` on `hostname:port` and resolves once it listens.
 *
 * @example
 * ```ts
 * const { url } = await serveBun(server, { port: 0 });
 * console.log(`listening on ${url}`);
 * ```
 */
export async function serveBun(app: FetchApp, options: ServeBunOptions): Promise<BunServer> {
  const bun = (globalThis as { Bun?: BunServeApi }).Bun;
  if (typeof bun?.serve !== "function") throw new Error("Cannot serve: serveBun needs the Bun runtime");
  const { port, hostname = "127.0.0.1", signal, onError = logError, idleTimeout, shutdownTimeout = 10_000 } = options;
  // Bun.serve listens before it returns, and throws if it cannot (a port in use).
  const server = bun.serve({
    port,
    hostname,
    ...(idleTimeout === undefined ? {} : { idleTimeout }),
    fetch: (request, running) => checkFetchRequest(request) ?? app.fetch(request, running),
    error: (error) => {
      report(onError, error);
      return serverError();
    },
  });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= new Promise<void>((done) => {
      const timer = setTimeout(() => void server.stop(true).then(finish, finish), shutdownTimeout);
      const finish = (): void => {
        clearTimeout(timer);
        done();
      };
      server.stop(false).then(finish, finish);
    }));
  if (signal !== undefined) {
    if (signal.aborted) void close();
    else signal.addEventListener("abort", () => void close(), { once: true });
  }
  return { port: server.port, hostname, url: baseUrl(hostname, server.port), close };
}
