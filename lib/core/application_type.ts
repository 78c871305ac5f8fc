/**
 * `application_type` (OpenID Connect Dynamic Client Registration 1.0 §2; MCP 2026-07-28, SEP-837): a `web`
 * application is served from a remote host, so its redirect URIs are https and not loopback; a `native` one runs
 * on the user's device, so its redirect URIs are loopback http, a private-use scheme (RFC 8252 §7.1, §7.3), or
 * a claimed https URI (RFC 8252 §7.2).
 *
 * @module
 */
import { isLoopbackUri } from "../redirect_uri.ts";

/** The application types a client may declare. */
export type ApplicationType = "web" | "native";

const LOOPBACK_HTTPS = /^https:\/\/(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d+)?(?:[/?]|$)/i;

/** Why the redirect URIs do not fit the declared type, or null when they do. `exempt` allows plain http. */
export function applicationTypeProblem(type: unknown, redirectUris: readonly string[], exempt = false): string | null {
  if (type !== "web" && type !== "native") return `application_type must be "web" or "native"`;
  for (const uri of redirectUris) {
    const https = uri.startsWith("https:");
    if (type === "web") {
      // OpenID DCR §2: a web client never redirects to localhost; a program on the device is a native one.
      if (isLoopbackUri(uri) || LOOPBACK_HTTPS.test(uri)) return `a web application cannot redirect to a loopback address (use application_type "native"): "${uri}"`;
      if (!https && !(exempt && uri.startsWith("http:"))) return `a web application redirects only to https URIs (use application_type "native" for a custom scheme): "${uri}"`;
    } else if (!https && !isLoopbackUri(uri) && !(exempt && uri.startsWith("http:")) && !/^[a-z][a-z0-9+-]*(?:\.[a-z0-9+-]+)+:/.test(uri)) {
      return `a native application redirects to loopback http, a private-use scheme or https: "${uri}"`;
    }
  }
  return null;
}

/**
 * The type a client that declares none is recorded with: `web`, the OpenID default that MCP 2026-07-28 names,
 * when its redirect URIs allow it (all https on a remote host, or none); else `native`. A server that is not an
 * OpenID provider "safely ignores the parameter" (MCP 2026-07-28, client registration), so nothing is refused
 * for its absence: clients written before SEP-837 keep registering.
 */
export function impliedApplicationType(redirectUris: readonly string[]): ApplicationType {
  return redirectUris.every((uri) => uri.startsWith("https:") && !LOOPBACK_HTTPS.test(uri)) ? "web" : "native";
}
