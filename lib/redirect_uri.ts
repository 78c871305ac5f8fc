/**
 * Matching a presented redirect URI against a client's registered ones: an exact string comparison (RFC 9700
 * §4.1.3), except that a loopback URI matches on any port (RFC 8252 §7.3, §8.3), because a native app binds
 * whatever port is free when it starts.
 *
 * @module
 */

/** The loopback hosts of RFC 8252 §7.3 and §8.3, as they appear in a URL's authority. */
export const LOOPBACK_HOSTS: readonly string[] = ["127.0.0.1", "[::1]", "localhost"];

// Read from the raw string, never a parsed URL: parsing normalises (case, dot segments, default ports), and a
// normalised comparison would let two different strings match.
const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(?::([0-9]{1,5}))?(?=[/?]|$)/;

/** The URI without its port when it is an http loopback URI with a valid (or no) port, else null. */
function withoutPort(uri: string): string | null {
  const match = LOOPBACK.exec(uri);
  if (!match) return null;
  const port = match[2];
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return null;
  return `http://${match[1]}${uri.slice(match[0].length)}`;
}

/**
 * Whether `presented` may be used as the redirect URI of a client registered with `registered`.
 *
 * @example
 * ```ts
 * redirectUriMatches(["http://127.0.0.1/callback"], "http://127.0.0.1:51234/callback"); // true
 * redirectUriMatches(["https://app.example/cb"], "https://app.example/cb/"); // false
 * ```
 */
export function redirectUriMatches(registered: readonly string[], presented: string): boolean {
  if (registered.includes(presented)) return true;
  const bare = withoutPort(presented);
  if (bare === null || bare.includes("#")) return false;
  return registered.some((uri) => withoutPort(uri) === bare);
}

/** Whether a URI's host is a loopback address (for the consent page's warning). */
export function isLoopbackUri(uri: string): boolean {
  return withoutPort(uri) !== null;
}
