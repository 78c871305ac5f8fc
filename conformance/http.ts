/**
 * The suite's only way to talk to the target: an injectable fetch wrapped in a recorder that keeps every
 * exchange, secrets masked, as evidence for the report. Redirects are never followed here.
 *
 * @module
 */
import { pageSummary } from "./drivers/driver.ts";
import { parseForms } from "./drivers/forms.ts";
import type { Exchange } from "./types.ts";

/** A fetch handler: global `fetch`, or a server's own `fetch(request)` for in-process runs. */
export type FetchLike = (request: Request) => Promise<Response>;

/** A response as the cases inspect it. */
export interface Reply {
  /** The HTTP status. */
  status: number;
  /** The response headers. */
  headers: Headers;
  /** The body as text. */
  text: string;
  /** The parsed body when it is JSON, else undefined. */
  json: unknown;
  /** The Location header resolved against the request URL, if any. */
  location: URL | undefined;
  /** The recorded exchange, secrets masked: the evidence. */
  exchange: Exchange;
}

/** What {@link Recorder.send} sends. */
export interface SendOptions {
  /** Request headers, by name. */
  headers?: Record<string, string>;
  /** A form body (sets Content-Type: application/x-www-form-urlencoded). Pairs allow repeated names. */
  form?: Record<string, string> | [string, string][];
  /** A raw body; `headers` must then carry its Content-Type. */
  body?: string;
}

/**
 * Fields whose values never appear whole in evidence: credentials, codes (RFC 6749 §4.1.2, RFC 8628 §3.2) and
 * every kind of token or signed assertion a request or response may carry.
 */
const SECRET_FIELDS = new Set([
  "client_secret",
  "password",
  "code",
  "code_verifier",
  "device_code",
  "refresh_token",
  "access_token",
  "id_token",
  "assertion",
  "client_assertion",
  "subject_token",
  "actor_token",
  "registration_access_token",
  "initial_access_token",
]);
const SECRET_HEADERS = new Set(["authorization", "proxy-authorization", "cookie", "set-cookie", "dpop"]);
const SECRET_JSON = new RegExp(`("(?:${[...SECRET_FIELDS].filter((f) => f !== "code").join("|")})"\\s*:\\s*")([^"]*)"`, "g");
const MAX_BODY = 2000;

/** Shows only the first four characters of a secret. */
export function mask(value: string): string {
  return value.length <= 4 ? "****" : `${value.slice(0, 4)}***`;
}

function maskHeader(name: string, value: string): string {
  // A redirect carries the code (or a token) in its query.
  if (name === "location") return maskUrl(value);
  if (!SECRET_HEADERS.has(name)) return value;
  if (name === "authorization" || name === "proxy-authorization") {
    const space = value.indexOf(" ");
    return space === -1 ? mask(value) : `${value.slice(0, space)} ${mask(value.slice(space + 1))}`;
  }
  // Cookies: keep names and attributes, hide values.
  return value.replace(/(^|[;,]\s*)([^=;,\s]+)=([^;,]*)/g, (all, sep: string, name: string, v: string) =>
    /^(path|domain|expires|max-age|samesite)$/i.test(name) ? all : `${sep}${name}=${mask(v)}`);
}

/** Masks the secret fields of a form (or query) body. */
export function maskForm(text: string): string {
  const params = new URLSearchParams(text);
  let changed = false;
  for (const [name, value] of params) {
    if (SECRET_FIELDS.has(name)) changed = true;
    void value;
  }
  if (!changed) return text;
  const out: string[] = [];
  for (const [name, value] of params) {
    const v = SECRET_FIELDS.has(name) ? mask(value) : value;
    out.push(`${encodeURIComponent(name)}=${encodeURIComponent(v)}`);
  }
  return out.join("&");
}

/** Masks the secret fields of a URL's query. */
export function maskUrl(url: string): string {
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q + 1) + maskForm(url.slice(q + 1));
}

/** Masks the secret members of a JSON text (a `code` member is left: JSON error bodies use the name too). */
export function maskJson(text: string): string {
  return text.replace(SECRET_JSON, (_, head: string, v: string) => `${head}${mask(v)}"`);
}

function headerRecord(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) {
    const v = maskHeader(name, value);
    out[name] = name in out ? `${out[name]}, ${v}` : v;
  }
  return out;
}

/** An HTML page as evidence: its title and its forms, not its markup. */
function summarizeHtml(html: string, url: string): string {
  const lines = [`HTML page "${pageSummary(html)}" (${html.length} characters)`];
  for (const form of parseForms(html, new URL(url))) {
    const controls = form.controls.map((c) =>
      c.tag === "button" || c.type === "submit" ? `[${c.type} ${c.name ?? ""}=${c.value} "${c.text}"]` : `${c.name ?? "?"}(${c.type})`
    );
    lines.push(`form ${form.method} ${maskUrl(form.action.href)}: ${controls.join(" ")}`);
  }
  return lines.join("\n");
}

function truncate(text: string): string {
  return text.length > MAX_BODY ? `${text.slice(0, MAX_BODY)}… (${text.length} characters)` : text;
}

/** Records every exchange of one case. */
export class Recorder {
  /** Every exchange so far, in order. */
  readonly exchanges: Exchange[] = [];
  private readonly inner: FetchLike;
  private readonly signal: AbortSignal | undefined;
  private readonly secrets: string[];

  /**
   * `secrets` (client secrets, the password) are masked wherever they appear, even echoed by the server; so is
   * every code, token and credential the case sends or receives (see {@link secretValues}).
   */
  constructor(inner: FetchLike, signal?: AbortSignal, secrets: readonly string[] = []) {
    this.inner = inner;
    this.signal = signal;
    this.secrets = secrets.filter((s) => s.length >= 4).flatMap((s) => [s, encodeURIComponent(s)]);
  }

  /** Remembers secret values seen on the wire, so that a server echoing one (in an error text, say) shows it masked. */
  private learn(values: string[]): void {
    for (const v of values) {
      // Short values (a state, "1") would mask unrelated text.
      if (v.length < 8) continue;
      for (const form of [v, encodeURIComponent(v)]) if (!this.secrets.includes(form)) this.secrets.push(form);
    }
  }

  /** Masks every secret in `text`. */
  private scrub(text: string): string {
    for (const secret of this.secrets) if (text.includes(secret)) text = text.split(secret).join(mask(secret));
    return text;
  }

  /** Masks every secret in a recorded exchange, in place. */
  private scrubExchange(e: Exchange): void {
    e.request.url = this.scrub(e.request.url);
    for (const k in e.request.headers) e.request.headers[k] = this.scrub(e.request.headers[k]!);
    if (e.request.body !== undefined) e.request.body = this.scrub(e.request.body);
    if (e.response) {
      for (const k in e.response.headers) e.response.headers[k] = this.scrub(e.response.headers[k]!);
      e.response.body = this.scrub(e.response.body);
    }
  }

  /** A fetch that records what it sends and receives; drivers get this one. */
  readonly fetch = async (request: Request): Promise<Response> => (await this.record(request)).response;

  /** Sends a request and records it; returns the response (body re-readable) and its exchange. */
  private async record(request: Request): Promise<{ response: Response; exchange: Exchange }> {
    const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.clone().text();
    this.learn(secretValues(request.url, request.headers, body));
    const exchange: Exchange = {
      request: { method: request.method, url: maskUrl(request.url), headers: headerRecord(request.headers) },
    };
    if (body !== undefined && body !== "") {
      exchange.request.body = truncate(body.trimStart().startsWith("{") ? maskJson(body) : maskForm(body));
    }
    this.scrubExchange(exchange);
    this.exchanges.push(exchange);
    let response: Response;
    try {
      response = await this.inner(request);
    } catch (error) {
      exchange.error = describe(error);
      throw error;
    }
    const text = await response.text();
    this.learn(secretValues(undefined, response.headers, text));
    const html = /^text\/html\b/i.test(response.headers.get("content-type") ?? "");
    const shown = html ? summarizeHtml(text, request.url) : truncate(maskJson(text));
    exchange.response = { status: response.status, headers: headerRecord(response.headers), body: shown };
    this.scrubExchange(exchange);
    // The body was read for the evidence, so hand on a copy.
    const nullBody = response.status === 204 || response.status === 304 || (response.status >= 100 && response.status < 200);
    return { response: new Response(nullBody ? null : text, { status: response.status, headers: response.headers }), exchange };
  }

  /** Sends one request (redirects not followed) and returns the reply with its recorded exchange. */
  async send(method: string, url: string | URL, options: SendOptions = {}): Promise<Reply> {
    const headers = new Headers(options.headers);
    let body = options.body;
    if (options.form !== undefined) {
      const pairs = Array.isArray(options.form) ? options.form : Object.entries(options.form);
      body = new URLSearchParams(pairs).toString();
      if (!headers.has("content-type")) headers.set("content-type", "application/x-www-form-urlencoded");
    }
    const init: RequestInit = { method, headers, redirect: "manual" };
    if (body !== undefined) init.body = body;
    if (this.signal) init.signal = this.signal;
    const { response, exchange } = await this.record(new Request(url, init));
    const text = await response.text();
    const location = response.headers.get("location");
    return {
      status: response.status,
      headers: response.headers,
      text,
      json: parseJson(text),
      location: location === null ? undefined : safeUrl(location, url),
      exchange,
    };
  }

  /** The last exchange, if any. */
  last(): Exchange | undefined {
    return this.exchanges[this.exchanges.length - 1];
  }
}

/**
 * The secret values of a message: the secret fields of its URL query, form or JSON body, the credentials of
 * its Authorization header, its cookie values and the query of its Location.
 */
function secretValues(url: string | undefined, headers: Headers, body: string | undefined): string[] {
  const out: string[] = [];
  const fromForm = (text: string) => {
    for (const [name, value] of new URLSearchParams(text)) if (SECRET_FIELDS.has(name)) out.push(value);
  };
  if (url !== undefined && url.includes("?")) fromForm(url.slice(url.indexOf("?") + 1));
  const location = headers.get("location");
  if (location !== null && location.includes("?")) fromForm(location.slice(location.indexOf("?") + 1));
  const auth = headers.get("authorization");
  if (auth !== null) out.push(auth.slice(auth.indexOf(" ") + 1));
  for (const name of ["cookie", "set-cookie"]) {
    for (const m of (headers.get(name) ?? "").matchAll(/(?:^|[;,]\s*)[^=;,\s]+=([^;,]*)/g)) out.push(m[1]!);
  }
  if (body !== undefined) {
    const json = parseJson(body);
    if (typeof json === "object" && json !== null && !Array.isArray(json)) {
      for (const [name, value] of Object.entries(json)) if (SECRET_FIELDS.has(name) && name !== "code" && typeof value === "string") out.push(value);
    } else if (!/^\s*</.test(body)) fromForm(body);
  }
  return out;
}

function parseJson(text: string): unknown {
  const t = text.trimStart();
  if (!t.startsWith("{") && !t.startsWith("[")) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function safeUrl(location: string, base: string | URL): URL | undefined {
  try {
    return new URL(location, base);
  } catch {
    return undefined;
  }
}

/** A one-line description of a thrown value. */
export function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}
