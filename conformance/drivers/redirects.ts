/**
 * Following redirects by hand, as a browser does, with a cookie jar: the piece every approval driver needs.
 * Exported for custom drivers.
 *
 * @module
 */
import type { FetchLike } from "../http.ts";
import type { CookieJar } from "./cookies.ts";
import { DriverError } from "./driver.ts";

/** Options of {@link followRedirects}. */
export interface FollowOptions {
  /** Cookies sent and stored on every hop. */
  jar?: CookieJar;
  /** Stop at (and return without requesting) the first redirect target for which this is true. */
  until?: (url: URL) => boolean;
  /** Most redirects followed. Default 10. */
  maxRedirects?: number;
  /** Extra headers on the first request (e.g. origin). */
  headers?: Record<string, string>;
  /** The first request comes from another site: only SameSite=None cookies go with it. */
  crossSite?: boolean;
}

/** Where {@link followRedirects} stopped. */
export type Followed =
  /** A redirect to a URL `until` accepted (not requested). */
  | { kind: "arrived"; url: URL }
  /** A response that is not a redirect: its URL and the response (body unread). */
  | { kind: "page"; url: URL; response: Response };

/**
 * Sends `method url` (with an optional form body) and follows redirects by hand: 307/308 repeat the request,
 * the others become a GET. Cookies go through `jar`. Throws {@link DriverError} after too many redirects.
 *
 * @example
 * ```ts
 * const jar = new CookieJar();
 * const end = await followRedirects(fetch, authorizeUrl, { jar, until: (u) => u.href.startsWith(redirectUri) });
 * if (end.kind === "arrived") console.log(end.url.searchParams.get("code"));
 * ```
 */
export async function followRedirects(
  fetch: FetchLike,
  url: URL,
  options: FollowOptions = {},
  method: "GET" | "POST" = "GET",
  body?: URLSearchParams,
): Promise<Followed> {
  const max = options.maxRedirects ?? 10;
  let next: { url: URL; method: "GET" | "POST"; body?: URLSearchParams | undefined } = { url, method, body };
  for (let redirects = 0;; redirects++) {
    const headers = new Headers({ accept: "text/html,application/xhtml+xml", ...(redirects === 0 ? options.headers : {}) });
    const cookie = options.jar?.header(next.url, { crossSite: redirects === 0 && options.crossSite === true }) ?? null;
    if (cookie !== null) headers.set("cookie", cookie);
    const init: RequestInit = { method: next.method, headers, redirect: "manual" };
    if (next.body !== undefined) {
      headers.set("content-type", "application/x-www-form-urlencoded");
      init.body = next.body.toString();
    }
    const response = await fetch(new Request(next.url, init));
    options.jar?.store(next.url, response.headers);
    const location = response.headers.get("location");
    if (response.status < 300 || response.status >= 400 || location === null) return { kind: "page", url: next.url, response };
    await response.body?.cancel();
    const target = new URL(location, next.url);
    if (options.until?.(target)) return { kind: "arrived", url: target };
    if (redirects >= max) throw new DriverError(`More than ${max} redirects, the last to ${target}`);
    next = response.status === 307 || response.status === 308 ? { ...next, url: target } : { url: target, method: "GET" };
  }
}
