/**
 * Checks of a request's head that every adapter makes before routing (RFC 9112 §3.2, RFC 9110 §7.2), so that
 * Node, Deno and Bun answer the same: exactly one `Host`, matching the URI authority grammar (no userinfo, a
 * port of at most 65535), and a request target in origin form with no dot segments, routed as received.
 * Absolute-form targets are refused too (`Bun.serve` alone cannot tell them apart: it rewrites them, and
 * resolves dot segments, before the handler runs; the reference server on Bun therefore serves through
 * `node:http`). Absolute URLs come from the configured issuer only, never from a request.
 *
 * @module
 */
import { errorJson } from "./core/render.ts";
import { OAuthError } from "./errors.ts";

// RFC 3986 §3.2.2: an IP-literal, or a reg-name / IPv4address of unreserved, pct-encoded and sub-delims.
const IP_LITERAL = /^\[(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{0,4}|\d{1,3}(?:\.\d{1,3}){3})\]$/;
const REG_NAME = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+$/;

/** Whether `value` is a valid `Host` header value: `host [":" port]`, no userinfo, a port of 1-5 digits ≤ 65535. */
export function validHost(value: string): boolean {
  // Every request is checked, so the usual shape (a name or IPv4 address, maybe a port) is recognised in one
  // scan without allocating; anything else (an IP literal, a percent-escape, a bad character) goes through the
  // grammar below, which decides.
  const n = value.length;
  let i = 0;
  for (; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c >= 128 || PLAIN_NAME[c] !== 1) break;
  }
  if (i > 0 && i === n) return n <= 255 + 6;
  if (i > 0 && value.charCodeAt(i) === 0x3a && n - i >= 2 && n - i <= 6) {
    let port = 0;
    for (let j = i + 1; j < n; j++) {
      const d = value.charCodeAt(j) - 0x30;
      if (d < 0 || d > 9) return hostGrammar(value);
      port = port * 10 + d;
    }
    if (port <= 65535 && n <= 255 + 6) return true;
  }
  return hostGrammar(value);
}

/** reg-name characters but "%": unreserved and sub-delims (RFC 3986 §3.2.2), by character code. */
const PLAIN_NAME = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=") PLAIN_NAME[c.charCodeAt(0)] = 1;

/** {@link validHost} by the grammar. */
function hostGrammar(value: string): boolean {
  if (value.length === 0 || value.length > 255 + 6) return false;
  let host = value;
  const colon = value.lastIndexOf(":");
  if (colon !== -1 && !value.endsWith("]")) {
    const port = value.slice(colon + 1);
    if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) return false;
    host = value.slice(0, colon);
  }
  return host.startsWith("[") ? IP_LITERAL.test(host) : REG_NAME.test(host);
}

/** Why a request target cannot be routed, or null when it is fine. `target` is origin form (see {@link originForm}). */
export function targetProblem(target: string): string | null {
  if (!target.startsWith("/")) return "The request target must be a path";
  // "//host/…" would read as an authority to anything resolving it against a base URL.
  if (target.startsWith("//")) return "The request target must not start with //";
  // One scan, segment by segment: only a segment of at most 6 characters that starts with "." or "%" can be a
  // dot segment (".", "..", "%2e", ".%2e", "%2e.", "%2e%2e" in any case), and only such a one is decoded.
  let start = 1;
  for (let i = 1; ; i++) {
    const c = i < target.length ? target.charCodeAt(i) : 0x3f;
    if (c === 0x2f || c === 0x3f || c === 0x23) { // "/", or the path ends at "?", "#" or the end
      const first = target.charCodeAt(start);
      if (i - start <= 6 && i > start && (first === 0x2e || first === 0x25)) {
        const decoded = target.slice(start, i).replace(/%2e/gi, ".");
        if (decoded === "." || decoded === "..") return "The request target must not hold dot segments";
      }
      if (c !== 0x2f) return null;
      start = i + 1;
    }
  }
}

/** The origin form of a target: an absolute-form `http(s)://authority/path?query` becomes `/path?query`. */
export function originForm(target: string): string {
  const match = /^https?:\/\/[^/?#]*(.*)$/i.exec(target);
  if (match === null) return target;
  const rest = match[1]!;
  return rest.startsWith("/") ? rest : `/${rest}`;
}

/**
 * The problem with a request's head, or null. `hosts` is every `Host` value received (an adapter that only sees
 * them joined passes the joined string, which then fails the grammar).
 */
export function requestHeadProblem(hosts: readonly string[], target: string): string | null {
  if (hosts.length === 0) return "The Host header is missing";
  if (hosts.length > 1) return "The Host header is repeated";
  if (!validHost(hosts[0]!)) return "The Host header is malformed";
  return targetProblem(target);
}

/** The plain 400 an adapter sends for a bad request head, before any routing: no body worth reading. */
export function badRequestHead(reason: string): Response {
  const parts = errorJson(new OAuthError("invalid_request", { description: reason, headers: { connection: "close" } }));
  return new Response(parts.body, parts);
}

/**
 * Checks a request as `Deno.serve` or `Bun.serve` hands it over, where the head is only seen through
 * `request.url` and the joined `Host`: the answer to send (400), or null to go on. Deno builds `request.url` by
 * pasting the `Host` value in front of the request target, unchecked, so the `Host` is checked before the URL
 * is trusted; after that, what follows the authority is the target as received (Deno resolves no dot
 * segments; Bun does, before anyone sees the request, so there a dot segment cannot be refused).
 */
export function checkFetchRequest(request: Request): Response | null {
  const host = request.headers.get("host");
  if (host === null) return badRequestHead("The Host header is missing");
  // A repeated Host reaches a fetch handler joined with ", ", which the grammar refuses.
  if (!validHost(host)) return badRequestHead("The Host header is malformed");
  const url = request.url;
  const scheme = /^https?:\/\//i.exec(url)?.[0] ?? "";
  // Deno: an origin-form request's URL is scheme + Host + target; anything else came in absolute form.
  if (!url.startsWith(scheme + host)) return badRequestHead("The request target must be a path");
  const target = url.slice(scheme.length + host.length);
  const problem = targetProblem(target === "" ? "/" : target);
  return problem === null ? null : badRequestHead(problem);
}
