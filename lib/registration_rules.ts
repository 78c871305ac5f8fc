/**
 * Redirect URI rules for clients that register themselves (RFC 7591 §2, RFC 8252 §7, RFC 9700 §4.1): https; http
 * only on a loopback host; or a private-use scheme in reverse-domain form for native apps. Never a fragment,
 * and never a scheme that runs code or reads local files.
 *
 * @module
 */
import { LOOPBACK_HOSTS } from "./redirect_uri.ts";

const FORBIDDEN_SCHEMES = ["javascript:", "data:", "vbscript:", "file:", "blob:", "about:", "ftp:", "ws:", "wss:"];

/** Why a redirect URI is refused, or null when it is acceptable. `exempt` allows plain http (a listed origin). */
export function checkRedirectUriValue(uri: unknown, exempt = false): string | null {
  if (typeof uri !== "string" || uri === "") return "not a string";
  if (uri.length > 2000) return "too long";
  if (uri.includes("#")) return "has a fragment";
  if (/[\s\\<>"]/.test(uri)) return "holds characters a URI may not";
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "not an absolute URI";
  }
  if (url.protocol === "https:") return url.username || url.password ? "has userinfo" : null;
  if (url.protocol === "http:") {
    if (url.username || url.password) return "has userinfo";
    return exempt || LOOPBACK_HOSTS.includes(url.host.replace(/:\d+$/, "")) ? null : "uses http on a host that is not loopback";
  }
  if (FORBIDDEN_SCHEMES.includes(url.protocol)) return "uses a forbidden scheme";
  // RFC 8252 §7.1: a private-use scheme is a reverse domain name the app controls, e.g. com.example.app.
  return /^[a-z][a-z0-9+-]*(?:\.[a-z0-9+-]+)+:$/.test(url.protocol) ? null : "uses a scheme that is not a reverse domain name";
}
