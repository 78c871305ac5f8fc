/**
 * The small request/response shape the core works on. `server.fetch` wraps a WHATWG `Request` into it and
 * turns the result into a `Response`; the Node adapter builds it straight from `IncomingMessage`, so the hot
 * path does not pay for two WHATWG objects per call on runtimes where they are dear.
 *
 * @module
 */
import { OAuthError } from "./errors.ts";

/** An incoming HTTP request, as the core sees it. */
export interface HttpRequest {
  /** Upper-case method, e.g. `POST`. */
  readonly method: string;
  /** The request target in origin form: path and query, e.g. `/index.php?module=OAuth2&action=token`. */
  readonly target: string;
  /** A request header by lower-case name; repeated headers are joined with `, `. */
  header(name: string): string | null;
  /** The body as text, at most `limit` bytes; over it, throws `OAuthError` with status 413. */
  text(limit: number): Promise<string>;
  /** The client's network address, when the adapter knows it. */
  readonly remoteAddress: string | undefined;
  /** The request as a WHATWG `Request`, built on first use (for user hooks). Its body may already be read. */
  toRequest(): Request;
}

/** An outgoing HTTP response, as the core produces it. */
export interface HttpResponse {
  status: number;
  /** Header pairs; a name may repeat (`Set-Cookie`). */
  headers: [string, string][];
  /** A text body, or null for none. */
  body: string | null;
  /** A response produced by a user hook, passed through as it is; status, headers and body are then unused. */
  passthrough?: Response;
}

/** Headers of every token, revocation and introspection response (RFC 6749 §5.1). */
const NO_STORE: [string, string][] = [
  ["cache-control", "no-store"],
  ["pragma", "no-cache"],
];

/** A JSON response that no cache may keep. */
export function jsonResponse(status: number, body: unknown, headers?: Record<string, string>): HttpResponse {
  const list: [string, string][] = [["content-type", "application/json;charset=UTF-8"], ...NO_STORE];
  if (headers) for (const name in headers) list.push([name.toLowerCase(), headers[name]!]);
  return { status, headers: list, body: JSON.stringify(body) };
}

/** A redirect to an address already checked against the client's registration. */
export function redirectResponse(location: string, status = 302): HttpResponse {
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
  const seen = new Set<string>();
  let repeated: string | undefined;
  if (text === "") return { params, repeated };
  let count = 0;
  for (const [name, value] of new URLSearchParams(text)) {
    if (++count > limits.maxParameters) {
      throw new OAuthError("invalid_request", { description: "Too many parameters" });
    }
    if (value.length > limits.maxParameterLength || name.length > limits.maxParameterLength) {
      throw new OAuthError("invalid_request", { description: "A parameter is too long" });
    }
    if (seen.has(name)) {
      repeated ??= name;
      continue;
    }
    seen.add(name);
    if (value !== "") params.set(name, value);
  }
  return { params, repeated };
}

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

/** The path of a request target, without the query. */
export function pathOf(target: string): string {
  const q = target.indexOf("?");
  return q === -1 ? target : target.slice(0, q);
}

/** Whether the request's media type is form-urlencoded, parameters (such as `charset`) allowed. */
export function isFormContentType(value: string | null): boolean {
  if (value === null) return false;
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

/** Wraps a WHATWG `Request` as an {@link HttpRequest}. */
export function fromRequest(request: Request, remoteAddress?: string): HttpRequest {
  const url = request.url;
  // The target is everything after the authority: skip "scheme://host".
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const target = start === -1 ? "/" : url.slice(start);
  const hash = target.indexOf("#");
  return {
    method: request.method,
    target: hash === -1 ? target : target.slice(0, hash),
    header: (name) => request.headers.get(name),
    text: (limit) => readText(request, limit),
    remoteAddress,
    toRequest: () => request,
  };
}

/** Turns an {@link HttpResponse} into a WHATWG `Response`. */
export function toResponse(response: HttpResponse): Response {
  if (response.passthrough) return response.passthrough;
  return new Response(response.body, { status: response.status, headers: response.headers });
}

const TOO_LARGE = (): OAuthError =>
  new OAuthError("invalid_request", { description: "Request body is too large", status: 413 });

/** Reads a body as UTF-8 text, stopping as soon as it passes `limit` bytes. */
async function readText(request: Request, limit: number): Promise<string> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw TOO_LARGE();
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
      throw TOO_LARGE();
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
