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
