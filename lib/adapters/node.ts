/**
 * Node adapter: serves the authorization server from `node:http`, or mounts it in Express or Connect.
 *
 * On Node, building a WHATWG `Request` and `Response` and reading them back costs more than a token request's
 * OAuth work, so the app gets a `Request` that is built for real only if something reads past the method, URL,
 * headers and body (`node_request.ts`), and the authorization server answers it with a `Response` whose parts
 * are written with one `writeHead` and one `end`. Any other `Response` is streamed.
 *
 * @module
 */
import type { ServerResponse } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { jsonResponse, partsOf, pathOf } from "../http.ts";
import { requestHeadProblem } from "../request_head.ts";
import { baseUrl, type FetchApp, logError, report } from "./fetch.ts";
import { type NodeIncomingMessage, nodeRequest } from "./node_request.ts";
import { type NodeServerResponse, type WriteMode, writeFetchResponse, writeParts, writeServerError } from
  "./node_response.ts";

export type { NodeIncomingMessage } from "./node_request.ts";
export type { NodeServerResponse } from "./node_response.ts";

export type { FetchApp } from "./fetch.ts";

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
   * The public origin, e.g. `https://auth.example.com`, for `request.url`. Without it the URL is built from
   * the `Host` header, which the client chooses: set it in production if hooks read `request.url`.
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
   * it does not serve) goes to `next()` instead of the client, unless the app read the request body.
   */
  owns?: (path: string) => boolean;
  /**
   * Called with what the app threw (the client only gets a generic 500) and with stream failures after the
   * status line went out. Defaults to `console.error`.
   */
  onError?: (error: unknown, request: Request) => void;
}

interface Context {
  readonly app: FetchApp;
  readonly maxBodyBytes: number;
  readonly origin: string | undefined;
  readonly clientAddress: ((req: NodeIncomingMessage) => string | undefined) | undefined;
  readonly owns: ((path: string) => boolean) | undefined;
  readonly onError: (error: unknown, request: Request) => void;
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
export function toNodeListener(app: FetchApp, options: NodeListenerOptions = {}): NodeListener {
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

/** Every `Host` value as received, repeats kept. */
function hostsOf(rawHeaders: readonly string[]): string[] {
  const hosts: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && (name === "Host" || name === "host" || name.toLowerCase() === "host")) hosts.push(rawHeaders[i + 1]!);
  }
  return hosts;
}

async function respond(
  ctx: Context,
  req: NodeIncomingMessage,
  res: NodeServerResponse,
  next: ((error?: unknown) => void) | undefined,
): Promise<void> {
  const middleware = typeof next === "function";
  const request = nodeRequest(req, ctx.maxBodyBytes, ctx.origin);
  const mode: WriteMode = { head: request.method === "HEAD", close: false, merge: middleware };
  const onStreamError = (error: unknown): void => report(ctx.onError, error, request);
  try {
    // Inside the try: user callbacks (owns, clientAddress, a next middleware) must not become a rejection.
    if (middleware && ctx.owns !== undefined && !ctx.owns(pathOf(request.target))) return next();
    // Findings 6-7 of issue 15: one well-formed Host and a routable target, or 400 before routing. Skipped only
    // for middleware that does not know its paths, where the request may be the host app's.
    const problem = middleware && ctx.owns === undefined ? null : requestHeadProblem(hostsOf(req.rawHeaders), request.target);
    if (problem !== null) {
      writeParts(res, jsonResponse(400, { error: "invalid_request", error_description: problem }), { ...mode, close: true });
      return;
    }
    const hostname = ctx.clientAddress === undefined ? req.socket.remoteAddress : ctx.clientAddress(req);
    // Node calls this listener as soon as the head is parsed, before the body bytes that came in the same read
    // are handed over; a microtask later they are buffered, and a small form is then read at once (see
    // `BODY_TEXT` in node_request.ts).
    if (req.headers["content-length"] !== undefined) await undefined;
    // Shaped as Deno's handler info, which the authorization server reads the client's address from.
    const response = await ctx.app.fetch(request, { remoteAddr: { hostname } });
    const parts = partsOf(response);
    const body = parts === undefined ? response.body : parts.body;
    // "Not my path", which `next()` may take over as long as the body is unread.
    if (middleware && ctx.owns === undefined && response.status === 404 && body === null && !request.bodyTouched) {
      return next();
    }
    // A refused body is not drained: the connection closes after the answer.
    mode.close = request.refused || response.status === 413;
    if (parts !== undefined) writeParts(res, parts, mode);
    else await writeFetchResponse(res, response, mode, onStreamError);
  } catch (error) {
    onStreamError(error);
    mode.close = request.refused;
    writeServerError(res, mode);
  }
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
  /** Whether it accepts connections. */
  readonly listening: boolean;
  /** Node's `server.address()`: an `AddressInfo` while it listens. */
  address(): unknown;
  /** Node's event listener registration, e.g. for `"connection"` or `"close"`. */
  on(event: string, listener: (...args: never[]) => void): unknown;
}

/** A running server, as {@link serveNode} resolves it. */
export interface NodeServer {
  /** The `node:http` server itself. */
  readonly server: NodeHttpServer;
  /** The port it listens on: the one asked for, or the one picked for port 0. */
  readonly port: number;
  /** The interface it listens on. */
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
export async function serveNode(app: FetchApp, options: ServeNodeOptions): Promise<NodeServer> {
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
  // A plain list without a "close" listener per response (a measurable share of a token request), swept once
  // it holds twice what is still in flight, so that a finished response is let go soon (held longer, in a Set,
  // they outlived young-generation collections and each got an identity hash, at a cost per request).
  let active: ServerResponse[] = [];
  let sweepAt = 64;
  let closing: Promise<void> | undefined;
  const server = createServer({
    headersTimeout,
    requestTimeout,
    keepAliveTimeout,
    // How often Node enforces the two timeouts above; its default of 30 s would let a slow client overstay.
    connectionsCheckingInterval: 1_000,
  }, (req, res) => {
    if (closing === undefined) {
      if (active.length >= sweepAt) {
        active = active.filter((each) => !finished(each));
        sweepAt = Math.max(64, 2 * active.length);
      }
      active.push(res);
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
  return { server, port: bound, hostname, url: baseUrl(hostname, bound), close };
}

/** Whether a response is over: sent in full, or cut off with its connection. */
function finished(res: ServerResponse): boolean {
  return res.writableFinished || res.destroyed;
}
