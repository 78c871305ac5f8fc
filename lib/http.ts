/**
 * The core's one request model is the WHATWG `Request`; what it answers is {@link ResponseParts} (status,
 * header pairs, a text body), which {@link respond} turns into the `Response` that `fetch` returns.
 *
 * Where a `Request` and a `Response` are dear to build and to read back (Node), the
 * adapter hands the core a `Request` that builds the real one only when something reads past the method,
 * URL, headers and body text (see `lib/adapters/node_request.ts`, after @hono/node-server). Such a request
 * carries {@link LAZY}; {@link respond} then answers with a `Response` of the same kind, whose parts the
 * adapter writes straight to the socket. Everyone else sees plain WHATWG objects.
 *
 * @module
 */
import { DeadlineQueue } from "./deadline.ts";
import { OAuthError } from "./errors.ts";

/** What an endpoint is given: the request, its target (path and query) and the address of
 * its peer (the socket's other end; behind a trusted proxy see `clientAddressOf`). */
export interface Incoming {
  readonly request: Request;
  readonly target: string;
  readonly remoteAddress: string | undefined;
}

/** A response as the core builds it. */
export interface ResponseParts {
  status: number;
  /** Header pairs; a name may repeat (`Set-Cookie`). */
  headers: [string, string][];
  /** A text body, or null for none. */
  body: string | null;
}

/**
 * On a request: it accepts a lazy `Response` (the Node adapter's requests do). On such a response: its parts.
 * `Symbol.for`, so that two copies of this module in one process still agree.
 */
export const LAZY: unique symbol = Symbol.for("oauth2-fetch-server.lazy");

/**
 * On a lazy request: `[BODY_TEXT](limit)` gives the whole body as text, without a promise, when every byte of it
 * has arrived already and it fits in `limit` bytes; else undefined, and the body is read as any body is.
 */
export const BODY_TEXT: unique symbol = Symbol.for("oauth2-fetch-server.bodyText");

/** Builds the real object behind a lazy one, on first use, and returns it from then on. */
export const MATERIALIZE: unique symbol = Symbol.for("oauth2-fetch-server.materialize");

/**
 * Makes `proto` a stand-in for `base` (`Request.prototype`, `Response.prototype`, `Headers.prototype`):
 * every member `proto` does not define itself is forwarded to the real object `this[MATERIALIZE]()` builds,
 * and `instanceof` holds. What `proto` defines is served without building anything.
 */
export function standIn(proto: object, base: object): void {
  for (const key of Reflect.ownKeys(base)) {
    if (key === "constructor" || Object.hasOwn(proto, key)) continue;
    const descriptor = Object.getOwnPropertyDescriptor(base, key)!;
    if (descriptor.get !== undefined) {
      Object.defineProperty(proto, key, {
        configurable: true,
        get(this: { [MATERIALIZE](): Record<PropertyKey, unknown> }) {
          return this[MATERIALIZE]()[key];
        },
      });
    } else if (typeof descriptor.value === "function") {
      Object.defineProperty(proto, key, {
        configurable: true,
        writable: true,
        value(this: { [MATERIALIZE](): Record<PropertyKey, (...args: unknown[]) => unknown> }, ...args: unknown[]) {
          const real = this[MATERIALIZE]();
          return real[key]!.apply(real, args);
        },
      });
    }
  }
  Object.setPrototypeOf(proto, base);
}

/** A `Response` over parts, built for real only when something other than its adapter reads it. */
class LazyResponse {
  readonly [LAZY]: ResponseParts;
  #real: Response | undefined;

  constructor(parts: ResponseParts) {
    this[LAZY] = parts;
  }

  get status(): number {
    return this[LAZY].status;
  }

  [MATERIALIZE](): Response {
    return (this.#real ??= new Response(this[LAZY].body, this[LAZY]));
  }
}
standIn(LazyResponse.prototype, Response.prototype);

/** The `Response` for parts: a lazy one when the request accepts it, else a real one. */
export function respond(request: Request, parts: ResponseParts): Response {
  if ((request as { [LAZY]?: unknown })[LAZY] === true) return new LazyResponse(parts) as unknown as Response;
  return new Response(parts.body, parts);
}

/**
 * The client's address from a handler's second argument, read structurally: Deno's handler info
 * (`remoteAddr.hostname`, which the Node adapter imitates) or Bun's server (`requestIP(request)`).
 */
export function remoteAddressOf(request: Request, info: unknown): string | undefined {
  if (typeof info !== "object" || info === null) return undefined;
  const remoteAddr = (info as { remoteAddr?: { hostname?: unknown } }).remoteAddr;
  if (typeof remoteAddr?.hostname === "string") return remoteAddr.hostname;
  const requestIP = (info as { requestIP?: unknown }).requestIP;
  if (typeof requestIP === "function") {
    // Bun wants its own Request object, not a stand-in for it.
    const real = (request as { [MATERIALIZE]?: () => Request })[MATERIALIZE]?.() ?? request;
    const address = (requestIP.call(info, real) as { address?: unknown } | null)?.address;
    if (typeof address === "string") return address;
  }
  return undefined;
}

/** The parts of a lazy response built by {@link respond}, for the adapter that asked for it. */
export function partsOf(response: Response): ResponseParts | undefined {
  return (response as { [LAZY]?: ResponseParts })[LAZY];
}

/** Headers of every token, revocation and introspection response (RFC 6749 §5.1). */
const NO_STORE: [string, string][] = [
  ["cache-control", "no-store"],
  ["pragma", "no-cache"],
];

/** A JSON response that no cache may keep. */
export function jsonResponse(status: number, body: unknown, headers?: Record<string, string>): ResponseParts {
  return jsonTextResponse(status, JSON.stringify(body), headers);
}

/** {@link jsonResponse} for a body already serialized. */
export function jsonTextResponse(status: number, json: string, headers?: Record<string, string>): ResponseParts {
  // NO_STORE written out: a spread in the hot path costs more than the two pairs.
  const list: [string, string][] = [
    ["content-type", "application/json;charset=UTF-8"],
    ["cache-control", "no-store"],
    ["pragma", "no-cache"],
  ];
  if (headers) for (const name in headers) list.push([name.toLowerCase(), headers[name]!]);
  return { status, headers: list, body: json };
}

/** A redirect to an address already checked against the client's registration. */
export function redirectResponse(location: string, status = 302): ResponseParts {
  return { status, headers: [["location", location], ...NO_STORE], body: null };
}

/**
 * Parses an `application/x-www-form-urlencoded` body or query string into a map, refusing a parameter sent
 * twice (RFC 6749 §3.1, §3.2: "Request and response parameters MUST NOT be included more than once").
 * Empty values count as absent, as RFC 6749 §3.1 says.
 */
export function parseForm(text: string, limits: FormLimits = DEFAULT_FORM_LIMITS): Map<string, string> {
  const { params, repeated } = readParams(text, limits);
  if (repeated !== undefined) {
    throw new OAuthError("invalid_request", { description: `The ${printable(repeated)} parameter is repeated` });
  }
  return params;
}

/**
 * Parses a form or query string, reporting the first repeated parameter instead of throwing, for the
 * authorization endpoint, which must know whether client_id and redirect_uri can be trusted before it decides
 * how to answer.
 */
export function readParams(
  text: string,
  limits: FormLimits = DEFAULT_FORM_LIMITS,
): { params: Map<string, string>; repeated: string | undefined } {
  const params = new Map<string, string>();
  let empty: Set<string> | undefined; // names sent with an empty value: absent, yet not to be sent again
  let repeated: string | undefined;
  let count = 0;
  // Most forms hold nothing to decode: then every name and value is a plain slice.
  const plain = !NEEDS_DECODING.test(text);
  // The WHATWG application/x-www-form-urlencoded parser, as `new URLSearchParams(text)` runs it: drop one
  // leading "?", split on "&", skip empty sequences, split each at its first "=", then decode "+" and
  // percent-escapes. `test/form.test.ts` checks it against URLSearchParams and the URL Standard.
  for (let start = text.charCodeAt(0) === 0x3f ? 1 : 0; start < text.length;) {
    let end = text.indexOf("&", start);
    if (end === -1) end = text.length;
    if (end > start) {
      if (++count > limits.maxParameters) {
        throw new OAuthError("invalid_request", { description: "Too many parameters" });
      }
      let eq = text.indexOf("=", start);
      if (eq === -1 || eq > end) eq = end;
      const name = plain ? text.slice(start, eq) : decodeComponent(text, start, eq);
      const value = eq === end ? "" : plain ? text.slice(eq + 1, end) : decodeComponent(text, eq + 1, end);
      if (value.length > limits.maxParameterLength || name.length > limits.maxParameterLength) {
        throw new OAuthError("invalid_request", { description: "A parameter is too long" });
      }
      if (params.has(name) || empty?.has(name)) repeated ??= name;
      else if (value !== "") params.set(name, value);
      else (empty ??= new Set()).add(name);
    }
    start = end + 1;
  }
  return { params, repeated };
}

/** What makes a component differ from its decoded form: "+", "%", or a surrogate (lone ones become U+FFFD). */
const NEEDS_DECODING = /[+%\ud800-\udfff]/;

/** One name or value: as it stands when it holds no "+", "%" or surrogate, else decoded byte by byte. */
function decodeComponent(text: string, start: number, end: number): string {
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x25 || c === 0x2b || (c >= 0xd800 && c <= 0xdfff)) return percentDecode(text.slice(start, end));
  }
  return text.slice(start, end);
}

/** "+" to space, then percent-decoding of the UTF-8 bytes, then UTF-8 decoding with U+FFFD for bad bytes. */
function percentDecode(component: string): string {
  const bytes = encoder.encode(component); // a lone surrogate becomes U+FFFD here, as in the WHATWG parser
  const out = new Uint8Array(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b === 0x2b) {
      out[n++] = 0x20;
    } else if (b === 0x25 && i + 2 < bytes.length) {
      const high = hexValue(bytes[i + 1]!);
      const low = hexValue(bytes[i + 2]!);
      if (high === -1 || low === -1) {
        out[n++] = b;
      } else {
        out[n++] = (high << 4) | low;
        i += 2;
      }
    } else {
      out[n++] = b;
    }
  }
  return formDecoder.decode(out.subarray(0, n));
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1;
}

const encoder = new TextEncoder();
/** "UTF-8 decode without BOM": a leading U+FEFF is kept, as URLSearchParams keeps it. */
const formDecoder = new TextDecoder("utf-8", { ignoreBOM: true });

/** Limits on parsed forms and query strings. */
export interface FormLimits {
  /** Most parameters one request may carry. */
  maxParameters: number;
  /** Longest name or value, in characters. */
  maxParameterLength: number;
}

/** Defaults of {@link FormLimits}: ample for OAuth, small enough that a hostile form costs little. */
export const DEFAULT_FORM_LIMITS: FormLimits = { maxParameters: 64, maxParameterLength: 4096 };

/** The query string of a request target, without the `?`. */
export function queryOf(target: string): string {
  const q = target.indexOf("?");
  return q === -1 ? "" : target.slice(q + 1);
}

/**
 * The request target of a URL, in origin form: path and query, e.g. `/index.php?module=OAuth2&action=token`.
 * Read from the string (everything after "scheme://host", without a fragment): cheaper than `new URL`.
 */
export function targetOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const hash = url.indexOf("#", start);
  return hash === -1 ? url.slice(start) : url.slice(start, hash);
}

/** The path of a request target, without the query. */
export function pathOf(target: string): string {
  const q = target.indexOf("?");
  return q === -1 ? target : target.slice(0, q);
}

/** Whether the request's media type is form-urlencoded, parameters (such as `charset`) allowed. */
export function isFormContentType(value: string | null): boolean {
  if (value === null) return false;
  if (value === "application/x-www-form-urlencoded") return true; // as nearly every client sends it
  const semi = value.indexOf(";");
  const type = (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
  return type === "application/x-www-form-urlencoded";
}

/**
 * A client-supplied name made safe to echo in an `error_description`: cut short, and every character outside
 * the set RFC 6749 §5.2 allows there (%x20-21 / %x23-5B / %x5D-7E: no quote, no backslash, no non-ASCII)
 * replaced by `?`.
 */
export function printable(value: string): string {
  const clean = value.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, "?");
  return clean.length > 40 ? clean.slice(0, 40) + "..." : clean;
}

/** The one answer to a body over a limit (RFC 9110 §15.5.14). */
export function tooLarge(): OAuthError {
  return new OAuthError("invalid_request", { description: "Request body is too large", status: 413 });
}

/** Default deadline for a request body to arrive, in ms (`limits.bodyTimeout`). */
export const DEFAULT_BODY_TIMEOUT = 10_000;

/**
 * The body of a lazy request as text, when it has all arrived and fits in `limit` bytes (see {@link BODY_TEXT}):
 * no stream, listener or deadline for the one small form a token request carries. Undefined otherwise.
 */
function bodyTextNow(request: Request, limit: number): string | undefined {
  return (request as { [BODY_TEXT]?: (limit: number) => string | undefined })[BODY_TEXT]?.(limit);
}

/**
 * Reads a body as UTF-8 text, stopping as soon as it passes `limit` bytes, and giving up with 408 when it has
 * not all arrived within `timeout` ms: a client that declares a body and never sends it (slowloris) must not
 * hold the request open, on a runtime whose server has no timeout of its own (Deno) least of all. A lazy
 * request's body that is all there already is taken at once.
 */
export function readText(request: Request, limit: number, timeout: number = DEFAULT_BODY_TIMEOUT): Promise<string> {
  const now = bodyTextNow(request, limit);
  if (now !== undefined) return Promise.resolve(now);
  // A client that disconnects mid-body is no server error: a plain 400, nothing for onError (anyone could fill
  // the log with stack traces that way). The connection is gone, so nobody reads the answer.
  const read = readBody(request, limit).catch((error: unknown) => {
    if (error instanceof OAuthError) throw error;
    throw new OAuthError("invalid_request", { description: "The request body could not be read", headers: { connection: "close" } });
  });
  // The read is abandoned, not cancelled, at the deadline: cancelling the body makes Deno drop the response.
  return bodyDeadlines(timeout).watch(read, "body");
}

/** One deadline queue per body timeout (a server has one), so a body read arms no timer of its own. */
const BODY_DEADLINES = new Map<number, DeadlineQueue>();

function bodyDeadlines(timeout: number): DeadlineQueue {
  let queue = BODY_DEADLINES.get(timeout);
  if (queue === undefined) {
    queue = new DeadlineQueue(timeout, () =>
      new OAuthError("invalid_request", {
        description: "The request body did not arrive in time",
        status: 408,
        headers: { connection: "close" },
      }));
    BODY_DEADLINES.set(timeout, queue);
  }
  return queue;
}

/**
 * Reads a body (a request's, or a fetched response's) as UTF-8 text, stopping as soon as it passes `limit`
 * bytes; past it, throws `tooLargeError()`, by default the 413 {@link tooLarge}. No deadline of its own.
 */
export async function readBody(
  request: Request | Response,
  limit: number,
  tooLargeError: () => Error = tooLarge,
): Promise<string> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    const length = Number(declared);
    if (length > limit) throw tooLargeError();
    if (Number.isSafeInteger(length) && request.headers.get("transfer-encoding") === null) {
      // A declared length within the limit, and no chunked framing: the server that parsed the request (Node,
      // Deno and Bun all do) delivers exactly that many bytes and refuses Content-Length with
      // Transfer-Encoding, so one whole read is bounded, and several times cheaper than a stream reader (which
      // is why `request.body` is not even touched here). The size is checked again for a Request built in
      // process with a length that lies.
      const bytes = await request.bytes();
      if (bytes.byteLength > limit) throw tooLargeError();
      return decoder.decode(bytes);
    }
  }
  if (request.body === null) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLargeError();
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return decoder.decode(chunks[0]);
  const all = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return decoder.decode(all);
}

const decoder = new TextDecoder();
