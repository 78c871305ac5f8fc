/**
 * Node adapter: serves the authorization server from `node:http`, or mounts it in Express or Connect.
 *
 * On Node, building a WHATWG `Request` costs about 20 µs and a `Response` about 13 µs, so when the app has
 * `handle` the adapter feeds it an {@link HttpRequest} read straight from the `IncomingMessage` and writes
 * the {@link HttpResponse} with one `writeHead` and one `end`. A `Request` is built only if a hook asks.
 *
 * @module
 */
import type { ServerResponse } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { HttpRequest, HttpResponse } from "../http.ts";
import { pathOf } from "../http.ts";
import { type NodeIncomingMessage, NodeHttpRequest } from "./node_request.ts";
import { type NodeServerResponse, type WriteMode, writeFetchResponse, writeHttpResponse, writeServerError } from
  "./node_response.ts";

export type { NodeIncomingMessage } from "./node_request.ts";
export type { NodeServerResponse } from "./node_response.ts";

/** What the adapter serves: the core's fast `handle` (preferred when present) or a plain `fetch` handler. */
export type NodeApp =
  | { handle(request: HttpRequest): Promise<HttpResponse> }
  | { fetch(request: Request): Promise<Response> };

/** A `node:http` request listener that is also Express/Connect middleware. */
export type NodeListener = (
  req: NodeIncomingMessage,
  res: NodeServerResponse,
  next?: (error?: unknown) => void,
) => void;

/** Options of {@link toNodeListener}. */
export interface NodeListenerOptions {
  /**
   * Hard cap on any request body, in bytes, whatever limit the core asks for; default 1 MiB. A larger
   * declared `Content-Length` is refused with 413 (RFC 9110 §15.5.14) before a byte is read, and the
   * connection is then closed rather than drained.
   */
  maxBodyBytes?: number;
  /**
   * The public origin, e.g. `https://auth.example.com`, for the URL of `toRequest()`. Without it the URL is
   * built from the `Host` header, which the client chooses: set it in production if hooks read `request.url`.
   */
  origin?: string;
  /**
   * The client's address, e.g. from `X-Forwarded-For` behind a proxy you trust; defaults to the socket's
   * peer address. Never trust forwarding headers from the open internet.
   */
  clientAddress?: (req: NodeIncomingMessage) => string | undefined;
  /**
   * Middleware mode only: the paths the server answers. Other requests go to `next()` untouched, without
   * calling the app. Without it, the app is asked first, and a 404 with no body (how the core answers a path
   * it does not serve) goes to `next()` instead of the client, unless the app read the request body or the
   * response is a hook's own `Response`.
   */
  owns?: (path: string) => boolean;
  /**
   * Called with what the app threw (the client only gets a generic 500) and with stream failures after the
   * status line went out. Defaults to `console.error`.
   */
  onError?: (error: unknown, request: HttpRequest) => void;
}

interface Context {
  readonly app: NodeApp;
  readonly maxBodyBytes: number;
  readonly origin: string | undefined;
  readonly clientAddress: ((req: NodeIncomingMessage) => string | undefined) | undefined;
  readonly owns: ((path: string) => boolean) | undefined;
  readonly onError: (error: unknown, request: HttpRequest) => void;
}

/**
 * Turns the server into a `node:http` request listener, usable as Express or Connect middleware too.
 *
 * As middleware (when `next` is passed), requests for other paths go on to `next()`: see
 * {@link NodeListenerOptions.owns}. Errors the app throws are answered with a generic 500
 * `{"error":"server_error"}` and reported to `onError`; they are not passed to `next(error)`, whose
 * default Express handler would print the stack.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * createServer(toNodeListener(server)).listen(8080);
 * ```
 *
 * @example Express, mounted before any body parser (the adapter reads the body itself)
 * ```ts
 * app.use(toNodeListener(server, { owns: (path) => path.startsWith("/oauth2/") }));
 * ```
 */
export function toNodeListener(app: NodeApp, options: NodeListenerOptions = {}): NodeListener {
  const ctx: Context = {
    app,
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    origin: options.origin?.replace(/\/+$/, ""),
    clientAddress: options.clientAddress,
    owns: options.owns,
    onError: options.onError ?? logError,
  };
  return (req, res, next) => void respond(ctx, req, res, next);
}

async function respond(
  ctx: Context,
  req: NodeIncomingMessage,
  res: NodeServerResponse,
  next: ((error?: unknown) => void) | undefined,
): Promise<void> {
  const middleware = typeof next === "function";
  const request = new NodeHttpRequest(req, ctx.maxBodyBytes, ctx.origin);
  const mode: WriteMode = { head: request.method === "HEAD", close: false, merge: middleware };
  try {
    // Inside the try: user callbacks (owns, clientAddress, a next middleware) must not become a rejection.
    if (middleware && ctx.owns !== undefined && !ctx.owns(pathOf(request.target))) return next();
    request.remoteAddress = ctx.clientAddress === undefined ? req.socket.remoteAddress : ctx.clientAddress(req);
    const app = ctx.app;
    if ("handle" in app) {
      const response = await app.handle(request);
      if (middleware && unrouted(ctx, request, response.status, response.body) && !response.passthrough) {
        return next();
      }
      mode.close = request.refused;
      if (response.passthrough === undefined) writeHttpResponse(res, response, mode);
      else await writeFetchResponse(res, response.passthrough, mode, (e) => report(ctx, e, request));
    } else {
      const response = await app.fetch(request.toRequest());
      if (middleware && unrouted(ctx, request, response.status, response.body)) return next();
      mode.close = request.refused;
      await writeFetchResponse(res, response, mode, (e) => report(ctx, e, request));
    }
  } catch (error) {
    report(ctx, error, request);
    mode.close = request.refused;
    writeServerError(res, mode);
  }
}

/** A "not my path" answer in middleware mode, which `next()` may take over since the body is still unread. */
function unrouted(ctx: Context, request: NodeHttpRequest, status: number, body: unknown): boolean {
  return status === 404 && body === null && ctx.owns === undefined && !request.bodyTouched;
}

function report(ctx: Context, error: unknown, request: HttpRequest): void {
  try {
    ctx.onError(error, request);
  } catch {
    // A failing error hook must not turn into an unhandled rejection.
  }
}

function logError(error: unknown, request: HttpRequest): void {
  // The path only: a query may carry a token (RFC 6750 §2.3) or a code.
  console.error(`Unhandled error while serving ${request.method} ${pathOf(request.target)}:`, error);
}

/** Options of {@link serveNode}: where to listen, the server's timeouts, and those of the listener. */
export interface ServeNodeOptions extends NodeListenerOptions {
  /** The port; 0 picks a free one. */
  port: number;
  /** The interface to listen on; default `127.0.0.1`. Use `0.0.0.0` or `::` to accept outside connections. */
  hostname?: string;
  /** Aborting it closes the server gracefully, as {@link NodeServer.close} does. */
  signal?: AbortSignal;
  /** Most milliseconds a client may take to send the request headers (slowloris); default 10 s. */
  headersTimeout?: number;
  /** Most milliseconds a client may take to send the whole request, body included; default 30 s. */
  requestTimeout?: number;
  /** How long an idle keep-alive connection stays open; default 5 s (keep it above a proxy's idle timeout). */
  keepAliveTimeout?: number;
  /** How long `close()` waits for requests in flight before cutting their connections; default 10 s. */
  shutdownTimeout?: number;
}

/** The part of Node's `http.Server` exposed by {@link serveNode} (structural; cast it for the rest). */
export interface NodeHttpServer {
  readonly listening: boolean;
  address(): unknown;
  on(event: string, listener: (...args: never[]) => void): unknown;
}

/** A running server, as {@link serveNode} resolves it. */
export interface NodeServer {
  readonly server: NodeHttpServer;
  readonly port: number;
  readonly hostname: string;
  /** The base URL, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  /**
   * Stops accepting connections, closes idle keep-alive ones, lets requests in flight finish (their
   * connections then close) and, after `shutdownTimeout`, cuts whatever is left. Safe to call twice.
   */
  close(): Promise<void>;
}

/**
 * Starts a `node:http` server for the app with timeouts fit for the open internet, and resolves once it
 * listens.
 *
 * @example
 * ```ts
 * const { url, close } = await serveNode(server, { port: 8080 });
 * console.log(`Listening on ${url}`);
 * process.once("SIGTERM", () => void close());
 * ```
 */
export async function serveNode(app: NodeApp, options: ServeNodeOptions): Promise<NodeServer> {
  const {
    port,
    hostname = "127.0.0.1",
    signal,
    headersTimeout = 10_000,
    requestTimeout = 30_000,
    keepAliveTimeout = 5_000,
    shutdownTimeout = 10_000,
    ...listenerOptions
  } = options;
  const listener = toNodeListener(app, listenerOptions);
  // Responses in flight, so that close() can end their connections after them instead of keeping them alive.
  // Finished ones are swept out in batches rather than each by a "close" listener: a listener per response
  // is a measurable share of a token request.
  const active = new Set<ServerResponse>();
  let closing: Promise<void> | undefined;
  const server = createServer({
    headersTimeout,
    requestTimeout,
    keepAliveTimeout,
    // How often Node enforces the two timeouts above; its default of 30 s would let a slow client overstay.
    connectionsCheckingInterval: 1_000,
  }, (req, res) => {
    if (closing === undefined) {
      if (active.size >= 1024) for (const done of active) if (finished(done)) active.delete(done);
      active.add(res);
    } else {
      res.shouldKeepAlive = false;
    }
    listener(req, res);
  });
  const closeIdleSoon = (): void => void setImmediate(() => server.closeIdleConnections());

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, () => {
      server.removeListener("error", reject);
      resolve();
    });
  });

  const close = (): Promise<void> =>
    (closing ??= new Promise<void>((resolve) => {
      for (const res of active) {
        if (finished(res)) continue;
        if (!res.headersSent) res.shouldKeepAlive = false;
        else res.on("finish", closeIdleSoon);
      }
      const force = setTimeout(() => server.closeAllConnections(), shutdownTimeout);
      server.close(() => {
        clearTimeout(force);
        resolve();
      });
      server.closeIdleConnections();
    }));
  if (signal !== undefined) {
    if (signal.aborted) void close();
    else signal.addEventListener("abort", () => void close(), { once: true });
  }
  const bound = (server.address() as AddressInfo).port;
  const shown = hostname === "0.0.0.0" || hostname === "::" ? "localhost" : hostname;
  const url = `http://${shown.includes(":") ? `[${shown}]` : shown}:${bound}`;
  return { server, port: bound, hostname, url, close };
}

/** Whether a response is over: sent in full, or cut off with its connection. */
function finished(res: ServerResponse): boolean {
  return res.writableFinished || res.destroyed;
}
