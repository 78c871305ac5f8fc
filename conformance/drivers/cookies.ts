/**
 * A small cookie jar for the HTML-form driver (RFC 6265, the parts a login needs): Path, Max-Age, Expires,
 * Secure and SameSite are honoured; Domain is matched loosely, which is enough for one server under test.
 *
 * @module
 */

interface Cookie {
  name: string;
  value: string;
  host: string;
  /** The Domain attribute, lower-case without a leading dot, if any. */
  domain: string | undefined;
  path: string;
  secure: boolean;
  /** Milliseconds since the epoch, or undefined for a session cookie. */
  expires: number | undefined;
  /** SameSite; browsers treat a cookie without it as Lax. */
  sameSite: "strict" | "lax" | "none";
}

/** Options of {@link CookieJar.header}. */
export interface CookieOptions {
  /**
   * The request comes from another site (a forged form POST): only SameSite=None cookies go with it, as a
   * browser sends them.
   */
  crossSite?: boolean;
}

/** A cookie jar shared by the requests of one user agent. */
export class CookieJar {
  private cookies: Cookie[] = [];

  /** Stores the cookies of a response to `url`. */
  store(url: URL, headers: Headers): void {
    for (const line of setCookieLines(headers)) {
      const cookie = parse(line, url);
      if (!cookie) continue;
      this.cookies = this.cookies.filter(
        (c) => !(c.name === cookie.name && c.path === cookie.path && c.host === cookie.host),
      );
      if (cookie.expires === undefined || cookie.expires > Date.now()) this.cookies.push(cookie);
    }
  }

  /** The Cookie header value for a request to `url`, or null. */
  header(url: URL, options: CookieOptions = {}): string | null {
    const now = Date.now();
    const host = url.hostname.toLowerCase();
    const secureContext = url.protocol === "https:" || isLoopback(host);
    const matching = this.cookies
      .filter((c) => c.expires === undefined || c.expires > now)
      .filter((c) => c.host === host || (c.domain !== undefined && (host === c.domain || host.endsWith(`.${c.domain}`))))
      .filter((c) => pathMatches(url.pathname, c.path))
      .filter((c) => !c.secure || secureContext)
      .filter((c) => !options.crossSite || c.sameSite === "none")
      // RFC 6265 §5.4: longer paths first.
      .sort((a, b) => b.path.length - a.path.length);
    return matching.length === 0 ? null : matching.map((c) => `${c.name}=${c.value}`).join("; ");
  }

  /** Forgets every cookie. */
  clear(): void {
    this.cookies = [];
  }
}

function setCookieLines(headers: Headers): string[] {
  const h = headers as Headers & { getSetCookie?: () => string[] };
  if (typeof h.getSetCookie === "function") return h.getSetCookie();
  const joined = headers.get("set-cookie");
  // Without getSetCookie, split on commas that start a new "name=" (not the comma inside an Expires date).
  return joined === null ? [] : joined.split(/,(?=\s*[^;,=\s]+=)/);
}

function parse(line: string, url: URL): Cookie | undefined {
  const [pair = "", ...attributes] = line.split(";");
  const eq = pair.indexOf("=");
  if (eq <= 0) return undefined;
  const cookie: Cookie = {
    name: pair.slice(0, eq).trim(),
    value: pair.slice(eq + 1).trim(),
    host: url.hostname.toLowerCase(),
    domain: undefined,
    path: defaultPath(url.pathname),
    secure: false,
    expires: undefined,
    sameSite: "lax",
  };
  let maxAge: number | undefined;
  for (const attribute of attributes) {
    const i = attribute.indexOf("=");
    const key = (i === -1 ? attribute : attribute.slice(0, i)).trim().toLowerCase();
    const value = i === -1 ? "" : attribute.slice(i + 1).trim();
    if (key === "path" && value.startsWith("/")) cookie.path = value;
    else if (key === "domain" && value !== "") cookie.domain = value.replace(/^\./, "").toLowerCase();
    else if (key === "secure") cookie.secure = true;
    else if (key === "samesite" && /^(strict|lax|none)$/i.test(value)) cookie.sameSite = value.toLowerCase() as Cookie["sameSite"];
    else if (key === "max-age" && /^-?\d+$/.test(value)) maxAge = Number(value);
    else if (key === "expires") {
      const t = Date.parse(value);
      if (!Number.isNaN(t)) cookie.expires = t;
    }
  }
  // Max-Age wins over Expires (RFC 6265 §5.3 step 3).
  if (maxAge !== undefined) cookie.expires = maxAge <= 0 ? 0 : Date.now() + maxAge * 1000;
  return cookie;
}

/** RFC 6265 §5.1.4: the directory of the request path. */
function defaultPath(path: string): string {
  if (!path.startsWith("/")) return "/";
  const last = path.lastIndexOf("/");
  return last <= 0 ? "/" : path.slice(0, last);
}

function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true;
  if (!requestPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith("/") || requestPath.charAt(cookiePath.length) === "/";
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "127.0.0.1" || host === "[::1]" || host.endsWith(".localhost");
}
