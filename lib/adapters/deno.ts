/**
 * Deno adapter. `Deno.serve(server.fetch)` already works as it is: the handler is bound and reads the client's
 * address from Deno's second argument. {@link serveDeno} adds what a real server wants around it: the port and
 * interface, a generic 500 for anything thrown, and a graceful shutdown that resolves when it is done.
 *
 * The Deno APIs used are typed structurally here, so this file type-checks under `tsc` without Deno's types.
 *
 * @example
 * ```ts
 * import { createAuthorizationServer } from "oauth2-fetch-server";
 * import { serveDeno } from "oauth2-fetch-server/adapters/deno";
 *
 * const server = createAuthorizationServer({ issuer: "http://127.0.0.1:8080", scopes: { read: "Read" } });
 * const running = await serveDeno(server, { port: 8080 });
 * Deno.addSignalListener("SIGTERM", () => void running.close().then(() => Deno.exit(0)));
 * ```
 *
 * @module
 */
import { checkFetchRequest } from "../request_head.ts";
import { baseUrl, type FetchApp, logError, report, serverError } from "./fetch.ts";

export type { FetchApp } from "./fetch.ts";

/** Options of {@link serveDeno}. */
export interface ServeDenoOptions {
  /** The port; 0 picks a free one. */
  port: number;
  /** The interface to listen on; default `127.0.0.1`. Use `0.0.0.0` or `::` to accept outside connections. */
  hostname?: string;
  /** Aborting it closes the server gracefully, as {@link DenoServer.close} does. */
  signal?: AbortSignal;
  /** Called with what the handler threw; the client gets a generic 500. Defaults to `console.error`. */
  onError?: (error: unknown) => void;
  /**
   * How long `close()` waits for requests in flight, in ms; default 10 s. Deno has no API to cut them, so after
   * this `close()` resolves anyway and the process may exit under them.
   */
  shutdownTimeout?: number;
}

/** A running server, as {@link serveDeno} resolves it. */
export interface DenoServer {
  /** The port it listens on: the one asked for, or the one picked for port 0. */
  readonly port: number;
  /** The interface it listens on. */
  readonly hostname: string;
  /** The base URL, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  /** Stops accepting connections and waits for requests in flight (see `shutdownTimeout`). Safe to call twice. */
  close(): Promise<void>;
  /** Settles when the server has stopped, for whatever reason. */
  readonly finished: Promise<void>;
}

/** The slice of `Deno.serve` used here. */
interface DenoServeApi {
  serve(
    options: {
      port: number;
      hostname: string;
      onListen: (addr: { hostname: string; port: number }) => void;
      onError: (error: unknown) => Response;
    },
    handler: (request: Request, info: unknown) => Response | Promise<Response>,
  ): { readonly finished: Promise<void>; shutdown(): Promise<void> };
}

/**
 * Serves the app with `Deno.serve` on `hostname:port` and resolves once it listens. Needs `--allow-net`.
 *
 * @example
 * ```ts
 * const { url } = await serveDeno(server, { port: 0 });
 * console.log(`listening on ${url}`);
 * ```
 */
export function serveDeno(app: FetchApp, options: ServeDenoOptions): Promise<DenoServer> {
  const deno = (globalThis as { Deno?: DenoServeApi }).Deno;
  if (typeof deno?.serve !== "function") return Promise.reject(new Error("Cannot serve: serveDeno needs the Deno runtime"));
  const { port, hostname = "127.0.0.1", signal, onError = logError, shutdownTimeout = 10_000 } = options;
  return new Promise<DenoServer>((resolve, reject) => {
    let server: ReturnType<DenoServeApi["serve"]>;
    let closing: Promise<void> | undefined;
    const close = (): Promise<void> =>
      (closing ??= new Promise<void>((done) => {
        const timer = setTimeout(done, shutdownTimeout);
        const finish = (): void => {
          clearTimeout(timer);
          done();
        };
        server.shutdown().then(finish, finish);
      }));
    const onListen = (addr: { hostname: string; port: number }): void => {
      resolve({ port: addr.port, hostname, url: baseUrl(hostname, addr.port), close, finished: server.finished });
    };
    try {
      server = deno.serve({
        port,
        hostname,
        onListen: (addr) => queueMicrotask(() => onListen(addr)),
        onError: (error) => {
          report(onError, error);
          return serverError();
        },
      }, (request, info) => checkFetchRequest(request) ?? app.fetch(request, info));
    } catch (error) {
      reject(error);
      return;
    }
    if (signal !== undefined) {
      if (signal.aborted) void close();
      else signal.addEventListener("abort", () => void close(), { once: true });
    }
  });
}
