/**
 * Resource identifiers (RFC 8707 §2, RFC 9728 §1.2): absolute URIs without a fragment, https, or http on a
 * loopback host as for the issuer.
 *
 * @module
 */
import { LOOPBACK_HOSTS } from "./redirect_uri.ts";

/** Parses a resource indicator; returns null for anything but an absolute https (or loopback http) URI without fragment. */
export function checkResourceUri(value: string): URL | null {
  if (value.includes("#")) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  const loopback = LOOPBACK_HOSTS.includes(url.hostname);
  if (url.protocol === "https:" || (url.protocol === "http:" && loopback)) return url;
  return null;
}

/** scheme "://" [userinfo "@"] host [":" port], then the rest (RFC 3986 §3). */
const AUTHORITY_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/((?:[^@/?#]*@)?)([^/?#]*)([\s\S]*)$/;

/**
 * The canonical form of a resource indicator: its scheme and host in lower case (RFC 3986 §6.2.2.1: they are
 * case-insensitive), every other character as sent. MCP clients send the server's URI as they were given it, and
 * MCP 2026-07-28 asks servers to accept an upper-case scheme or host; nothing else is normalised (no default
 * port, dot segment, percent-encoding or trailing slash), so a resource still has exactly one spelling that
 * matches. Null for anything {@link checkResourceUri} refuses, or not written `scheme://host…`.
 */
export function canonicalResource(value: string): string | null {
  if (checkResourceUri(value) === null) return null;
  const parts = AUTHORITY_FORM.exec(value);
  if (parts === null) return null;
  const [, scheme, userinfo, host, rest] = parts as unknown as [string, string, string, string, string];
  return `${scheme.toLowerCase()}://${userinfo}${host.toLowerCase()}${rest}`;
}
