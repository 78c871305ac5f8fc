/**
 * The one door for requests the server makes (client metadata documents, client `jwks_uri`, trusted issuers'
 * key sets). The URL is often chosen by a stranger, so each fetch is fenced: no private hosts, no redirects,
 * a cap on decoded bytes counted while reading, and one deadline for the whole exchange.
 *
 * @module
 */

/** Why an outbound fetch failed. */
export type OutboundFailure =
  /** An IP literal, `localhost`, a `.local`, `.internal`, `.localhost` or `.arpa` name, or a single label. */
  | "private_host"
  /** Not https (nor an allowed origin), credentials in the URL, or refused by the `allowFetch` hook. */
  | "refused"
  /** A 3xx answer: redirects are never followed. */
  | "redirect"
  /** A status other than 2xx. */
  | "status"
  /** More bytes than the cap, declared or read. */
  | "too_large"
  /** The deadline passed before the body was read. */
  | "timeout"
  /** The connection failed. */
  | "network";

/** A refused or failed outbound fetch. Its message names the host, never the path or query. */
export class OutboundError extends Error {
  /** Why it failed. */
  readonly reason: OutboundFailure;
  /** The status answered, for `redirect` and `status`. */
  readonly status: number | undefined;

  /** A failure with its reason; `status` for `redirect` and `status`. */
  constructor(reason: OutboundFailure, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "OutboundError";
    this.reason = reason;
    this.status = options.status;
  }
}

/** Options of {@link guardedFetch}. */
export interface GuardedFetchOptions {
  /** Most bytes of the decoded body read; the read stops there. */
  maxBytes: number;
  /** Milliseconds for the whole exchange, headers and body. Default 5000. */
  timeout?: number;
  /** Origins exempt from the https and private-host rules, e.g. `http://127.0.0.1:8123`. Exact origins. */
  allowOrigins?: readonly string[];
  /** The URL comes from the operator's configuration, not from a client: exempt as an allowed origin is. */
  trusted?: boolean;
  /**
   * Decides, after the built-in checks, whether a URL may be fetched: the place for a DNS check of the
   * resolved address (Web `fetch` cannot pin it) or an allow list.
   */
  allowFetch?: (url: URL) => boolean | Promise<boolean>;
  /**
   * The fetch to use. Default `globalThis.fetch`, told not to decompress where the runtime allows it. One
   * that decodes a whole body before returning it defeats the cap.
   */
  fetch?: (request: Request) => Promise<Response>;
  /** The `Accept` header. Default `application/json`. */
  accept?: string;
}

/** A fetched answer, read whole within the cap. */
export interface GuardedResponse {
  /** A 2xx status. */
  status: number;
  /** The response headers. */
  headers: Headers;
  /** The body as received (decoded where the runtime decodes), at most `maxBytes`. */
  body: Uint8Array;
  /** The body as UTF-8 text. */
  text(): string;
}

const DEFAULT_TIMEOUT = 5000;
// Bun inflates a compressed body whole, in native code, before a byte of it is read (211 bytes of brotli became
// 256 MiB there, whatever was read or cancelled); `decompress: false` makes it hand over the bytes as sent.
// Other runtimes ignore the member: Deno honours the identity request, Node decodes as the stream is read.
const AS_SENT = { decompress: false } as RequestInit;
const defaultFetch = (request: Request): Promise<Response> => fetch(request, AS_SENT);
const utf8 = new TextDecoder();

/**
 * Whether a host name must not be fetched on a stranger's word: IP literals, `localhost`, single-label
 * names, and the special-use suffixes `.localhost` (RFC 6761 §6.3), `.local` (RFC 6762), `.internal`
 * (ICANN's private-use TLD) and `.arpa` (reverse zones, `home.arpa` of RFC 8375). A public name that resolves
 * to a private address (RFC 6890) can only be caught by `allowFetch` or an egress policy.
 */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  // WHATWG URL has already turned 0x7f.1, 2130706433 and the like into dotted decimal.
  if (host.startsWith("[") || /^[0-9.]+$/.test(host)) return true;
  return host === "localhost" || !host.includes(".") || /\.(?:localhost|local|internal|arpa)$/.test(host);
}

/**
 * Fetches a URL for the server, fenced (OWASP SSRF prevention; issue 21, finding 1):
 * - the URL must be https on a public host name, unless its origin is in `allowOrigins` or it is `trusted`;
 *   then the `allowFetch` hook has the last word;
 * - redirects are not followed (`redirect: "manual"`); a 3xx is a failure, as is any status but 2xx;
 * - `identity` is asked for, and the decoded bytes are counted as they are read, stopping at `maxBytes`
 *   whatever `Content-Length` or `Content-Encoding` say; a declared length above the cap is refused unread;
 * - one deadline covers headers and body, also when the fetch ignores its abort signal or the body trickles.
 *
 * Throws {@link OutboundError}.
 *
 * @example
 * ```ts
 * const { body } = await guardedFetch(jwksUri, { maxBytes: 64 * 1024, timeout: 5000 });
 * ```
 */
export async function guardedFetch(url: string | URL, options: GuardedFetchOptions): Promise<GuardedResponse> {
  const target = await admit(url, options);
  const host = target.host;
  const doFetch = options.fetch ?? defaultFetch;
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new OutboundError("timeout", `Cannot fetch from ${host}: no complete answer within the deadline`);
      controller.abort(error);
      reject(error);
    }, options.timeout ?? DEFAULT_TIMEOUT);
  });
  expired.catch(() => {});
  let response: Response | undefined;
  let finished = false;
  try {
    const pending = Promise.resolve().then(() =>
      doFetch(new Request(target, {
        headers: { accept: options.accept ?? "application/json", "accept-encoding": "identity" },
        redirect: "manual",
        signal: controller.signal,
      }))
    );
    // A fetch that answers after the deadline: its body is never read, so release it.
    pending.then((late) => {
      if (finished && late !== response) void late.body?.cancel().catch(() => {});
    }, () => {});
    try {
      response = await Promise.race([pending, expired]);
    } catch (cause) {
      if (cause instanceof OutboundError) throw cause;
      if (controller.signal.aborted) throw controller.signal.reason;
      throw new OutboundError("network", `Cannot fetch from ${host}: the connection failed`, { cause });
    }
    const { status } = response;
    if (response.type === "opaqueredirect" || (status >= 300 && status < 400)) {
      throw discard(response, new OutboundError("redirect", `Cannot fetch from ${host}: it answered with a redirect`, { status }));
    }
    if (status < 200 || status > 299) {
      throw discard(response, new OutboundError("status", `Cannot fetch from ${host}: it answered ${status}`, { status }));
    }
    const tooLarge = () => new OutboundError("too_large", `Cannot fetch from ${host}: the answer exceeds ${options.maxBytes} bytes`);
    const declared = Number(response.headers.get("content-length") ?? 0);
    if (declared > options.maxBytes) throw discard(response, tooLarge());
    const body = await readCapped(response, options.maxBytes, { expired, tooLarge, controller, host });
    return { status, headers: response.headers, body, text: () => utf8.decode(body) };
  } finally {
    finished = true;
    clearTimeout(timer);
  }
}

async function admit(url: string | URL, options: GuardedFetchOptions): Promise<URL> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new OutboundError("refused", "Cannot fetch: not an absolute URL");
  }
  const refuse = (why: string): OutboundError => new OutboundError("refused", `Cannot fetch from ${target.host}: ${why}`);
  if (target.username !== "" || target.password !== "") throw refuse("the URL holds credentials");
  const exempt = options.trusted === true || (options.allowOrigins ?? []).some((origin) => sameOrigin(origin, target));
  if (!exempt) {
    if (isPrivateHost(target.hostname)) {
      throw new OutboundError("private_host", `Cannot fetch from ${target.host}: the host is private`);
    }
    if (target.protocol !== "https:") throw refuse("only https URLs are fetched");
  } else if (target.protocol !== "https:" && target.protocol !== "http:") {
    throw refuse("only http and https URLs are fetched");
  }
  if (options.allowFetch && !(await options.allowFetch(target))) throw refuse("the allowFetch hook refused it");
  return target;
}

function sameOrigin(origin: string, target: URL): boolean {
  try {
    return new URL(origin).origin === target.origin;
  } catch {
    return false;
  }
}

/** Cancels an unread body (freeing the connection) and hands back the error to throw. */
function discard(response: Response, error: OutboundError): OutboundError {
  void response.body?.cancel().catch(() => {});
  return error;
}

/** Reads the body chunk by chunk, counting decoded bytes; stops and cancels at the cap or the deadline. */
async function readCapped(
  response: Response,
  maxBytes: number,
  { expired, tooLarge, controller, host }: {
    expired: Promise<never>;
    tooLarge: () => OutboundError;
    controller: AbortController;
    host: string;
  },
): Promise<Uint8Array> {
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), expired]);
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) throw tooLarge();
      chunks.push(value);
    }
  } catch (error) {
    void reader.cancel().catch(() => {});
    controller.abort(error);
    if (error instanceof OutboundError) throw error;
    throw new OutboundError("network", `Cannot fetch from ${host}: the answer broke off`, { cause: error });
  }
  if (chunks.length === 1) return chunks[0]!;
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}
