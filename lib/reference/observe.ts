/**
 * What an operator sees of the reference server: one JSON line per request, `/healthz` (the process answers),
 * `/readyz` (the store answers too), and Prometheus `/metrics` when the config enables it.
 *
 * The log line carries `time`, `method`, `path` (never the query, where codes and states travel), `endpoint`,
 * `status`, `duration_ms` and `client_id` when the request named one; never a secret, code, token or password.
 *
 * @module
 */
import { jsonResponse, LAZY, MATERIALIZE, pathOf, queryOf, respond, type ResponseParts, standIn, targetOf } from "../http.ts";
import type { AuditEvent } from "../audit.ts";
import type { Metrics } from "./metrics.ts";

/** Options of {@link observe}. */
export interface ObserveOptions {
  /** Receives each request's JSON line; none = no request log. */
  log?: ((line: string) => void) | undefined;
  /** Counts every request; with it, `/metrics` is served. */
  metrics?: Metrics | undefined;
  /** Resolves when the store answers; rejects or hangs when it does not. */
  ready: () => Promise<unknown>;
  /** The issuer's path (`""` at the root): endpoints hang below it. */
  basePath: string;
  /** How long `/readyz` waits for the store, in ms. */
  readyTimeout?: number;
}

/** Clean paths to endpoint names: the `endpoint` of log lines and metrics (a closed list, for label safety). */
const ENDPOINTS: Readonly<Record<string, string>> = {
  "/authorize": "authorize",
  "/token": "token",
  "/revoke": "revoke",
  "/introspect": "introspect",
  "/register": "register",
  "/jwks": "jwks",
  "/device_authorization": "device_authorization",
  "/device": "device",
  "/.well-known/oauth-authorization-server": "metadata",
  "/.well-known/oauth-protected-resource": "resource_metadata",
  "/healthz": "healthz",
  "/readyz": "readyz",
  "/metrics": "metrics",
  "/account/apps": "connected_apps",
  "/logout": "logout",
  "/": "landing",
};
const FORM = /^application\/x-www-form-urlencoded\b/i;

/** The endpoint name of a request, from a closed list; `other` for anything unknown. */
export function endpointOf(target: string, basePath: string): string {
  let path = pathOf(target);
  if (basePath !== "" && path.startsWith(`${basePath}/`)) path = path.slice(basePath.length);
  if (path === "/index.php") {
    const query = new URLSearchParams(queryOf(target));
    const action = query.get("module") === "OAuth2" ? query.get("action") : null;
    return action === "authorize" || action === "token" ? action : "other";
  }
  if (path.startsWith("/api/")) return "api";
  if (path.startsWith("/.well-known/oauth-authorization-server")) return "metadata";
  if (path.startsWith("/.well-known/oauth-protected-resource")) return "resource_metadata";
  return Object.hasOwn(ENDPOINTS, path) ? ENDPOINTS[path]! : "other";
}

type Fetch = (request: Request, info?: unknown) => Promise<Response>;

/** Wraps the app's handler with the request log, the metrics, and the health endpoints. */
export function observe(fetch: Fetch, options: ObserveOptions): Fetch {
  const { log, metrics } = options;
  const health = async (endpoint: string, request: Request): Promise<ResponseParts | undefined> => {
    if (request.method !== "GET" && request.method !== "HEAD") return undefined;
    if (endpoint === "healthz") return jsonResponse(200, { status: "ok" });
    if (endpoint === "readyz") {
      // A store that throws synchronously is as unready as one that rejects: never an exception out of here.
      const ok = await deadline(new Promise((resolve) => resolve(options.ready())), options.readyTimeout ?? 2000);
      return jsonResponse(ok ? 200 : 503, { status: ok ? "ready" : "store unavailable" });
    }
    if (endpoint === "metrics" && metrics) {
      return { status: 200, headers: [["content-type", "text/plain; version=0.0.4; charset=utf-8"], ["cache-control", "no-store"]], body: metrics.render() };
    }
    return undefined;
  };

  return async function observed(request: Request, info?: unknown): Promise<Response> {
    const started = performance.now();
    const target = targetOf(request.url);
    const endpoint = endpointOf(target, options.basePath);
    // Keep the body the handler reads, to name the client and the grant type afterwards.
    let body: string | undefined;
    const parts = await health(endpoint, request);
    const response = parts === undefined
      ? await fetch(recording(request, (text) => (body = text)), info)
      : respond(request, parts);
    const seconds = (performance.now() - started) / 1000;
    const form = body !== undefined && FORM.test(request.headers.get("content-type") ?? "") ? new URLSearchParams(body) : undefined;
    if (metrics) {
      metrics.request(endpoint, response.status, seconds);
      if (response.status === 429) metrics.throttled(endpoint);
      // Every input is checked before the store is called, so a 500 or 503 here is the store failing or timing out.
      if ((response.status === 500 || response.status === 503) && endpoint !== "readyz") metrics.storeError();
      if (endpoint === "token" && response.status === 200) {
        // A 200 comes only from a grant the server has, so the label set is bounded by the grant table.
        metrics.tokenIssued(form?.get("grant_type") ?? "other");
      }
    }
    if (log) {
      const clientId = clientIdOf(request.headers.get("authorization"), target, form);
      log(JSON.stringify({
        time: new Date().toISOString(),
        method: printable(request.method, 16),
        path: printable(pathOf(target), 256),
        endpoint,
        status: response.status,
        duration_ms: Math.round(seconds * 1e6) / 1000,
        ...(clientId === undefined ? {} : { client_id: clientId }),
      }));
    }
    return response;
  };
}

/** The request as it is, except that the body text the handler reads is also handed to `onBody`. */
function recording(request: Request, onBody: (text: string) => void): Request {
  return new RecordingRequest(request, onBody) as unknown as Request;
}

class RecordingRequest {
  readonly #request: Request;
  readonly #onBody: (text: string) => void;
  #stream: ReadableStream<Uint8Array> | undefined;

  constructor(request: Request, onBody: (text: string) => void) {
    this.#request = request;
    this.#onBody = onBody;
  }

  /** Whether the request accepts a lazy response: as the wrapped one does. */
  get [LAZY](): unknown {
    return (this.#request as { [LAZY]?: unknown })[LAZY];
  }

  get body(): ReadableStream<Uint8Array> | null {
    const source = this.#request.body;
    if (source === null) return null;
    let text = "";
    const utf8 = new TextDecoder();
    return (this.#stream ??= source.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
      transform: (chunk, controller) => {
        text += utf8.decode(chunk, { stream: true });
        controller.enqueue(chunk);
      },
      flush: () => this.#onBody(text + utf8.decode()),
    })));
  }

  bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return this.#request.bytes().then((bytes) => {
      this.#onBody(decoder.decode(bytes));
      return bytes;
    });
  }

  text(): Promise<string> {
    return this.#request.text().then((text) => {
      this.#onBody(text);
      return text;
    });
  }

  [MATERIALIZE](): Request {
    return this.#request;
  }
}
standIn(RecordingRequest.prototype, Request.prototype);

const decoder = new TextDecoder();

/**
 * The client a request names: the user part of Basic credentials (never the password), else `client_id` of the
 * form, else of the query. Only identifiers, which are public; nothing else of the body or query is read.
 */
function clientIdOf(authorization: string | null, target: string, form: URLSearchParams | undefined): string | undefined {
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization ?? "");
  let id: string | null | undefined;
  if (basic) {
    try {
      const user = atob(basic[1]!);
      // RFC 6749 §2.3.1: the client_id is form-encoded before it goes into the Basic credentials.
      id = decodeURIComponent(user.slice(0, Math.max(0, user.indexOf(":"))).replace(/\+/g, " "));
    } catch {
      id = undefined;
    }
  }
  id ||= form?.get("client_id") ?? new URLSearchParams(queryOf(target)).get("client_id");
  return id ? printable(id, 256) : undefined;
}

/** At most `max` characters, control characters escaped (JSON.stringify does the rest). */
function printable(value: string, max: number): string {
  const short = value.length > max ? `${value.slice(0, max)}…` : value;
  return short.replace(/\p{Cc}/gu, "?");
}

/** Whether `promise` resolves within `ms`. */
async function deadline(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true, () => false), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** How often, at most, the log says that client metadata documents were refused. */
const NOTICE_INTERVAL_MS = 60_000;

/**
 * The audit events an operator watches without an audit log: a refused or unreachable client metadata document
 * is a stranger's mistake (or a flood), so it is counted in the metrics and logged as at most one line a minute,
 * saying how many there were, with the host of the last one and never a stack trace or a URL path.
 */
export function watchEvents(
  options: { log?: ((line: string) => void) | undefined; metrics?: Metrics | undefined; clock?: () => number },
): (event: AuditEvent) => void {
  const clock = options.clock ?? Date.now;
  let lastLine = -Infinity;
  let unlogged = 0;
  return (event) => {
    if (event.type !== "client.document_refused") return;
    options.metrics?.documentRefused(event.reason ?? "other");
    if (options.log === undefined) return;
    unlogged++;
    const now = clock();
    if (now - lastLine < NOTICE_INTERVAL_MS) return;
    lastLine = now;
    let host = "?";
    try {
      host = printable(new URL(event.client_id ?? "").host, 256);
    } catch {
      // Not a URL: the host stays unknown.
    }
    options.log(JSON.stringify({
      time: new Date(now).toISOString(),
      event: "client.document_refused",
      count: unlogged,
      reason: printable(event.reason ?? "other", 32),
      host,
    }));
    unlogged = 0;
  };
}
