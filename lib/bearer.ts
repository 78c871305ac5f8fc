/**
 * Reading an access token from the `Authorization` header (RFC 6750 §2.1; RFC 9449 §7.1 for `DPoP`): the one
 * parser the resource guards and the registration endpoint share.
 *
 * @module
 */

/** What an `Authorization` header holds for a token scheme. */
export type PresentedToken =
  /** No header, or another scheme: the request carried no token of this scheme (RFC 6750 §3.1: no error code). */
  | { readonly kind: "absent" }
  /** The scheme, but not a single token68 after it. */
  | { readonly kind: "malformed" }
  | { readonly kind: "token"; readonly token: string };

const ABSENT: PresentedToken = Object.freeze({ kind: "absent" });
const MALFORMED: PresentedToken = Object.freeze({ kind: "malformed" });
/** `<scheme> <token68>` (RFC 9110 §11.4, RFC 6750 §2.1 b64token), the scheme case-insensitive. */
const TOKEN68 = /^ +([A-Za-z0-9\-._~+/]+=*) *$/;

/**
 * The token of an `Authorization` header of `scheme` (`Bearer`, or `DPoP`).
 *
 * @example
 * ```ts
 * presentedToken("Bearer mF_9.B5f-4.1JqM"); // { kind: "token", token: "mF_9.B5f-4.1JqM" }
 * presentedToken("Basic Zm9vOmJhcg==");     // { kind: "absent" }
 * ```
 */
export function presentedToken(header: string | null, scheme = "Bearer"): PresentedToken {
  if (header === null || header.length < scheme.length || header.slice(0, scheme.length).toLowerCase() !== scheme.toLowerCase()) {
    return ABSENT;
  }
  const rest = header.slice(scheme.length);
  if (rest !== "" && rest[0] !== " ") return ABSENT; // "Bearerx": another scheme
  const match = TOKEN68.exec(rest);
  return match === null ? MALFORMED : { kind: "token", token: match[1]! };
}

/** What a valid access token grants. */
export interface AccessTokenInfo {
  /** The client the token was issued to. */
  client_id: string;
  /** The end user, for tokens from the authorization code flow. */
  user_id?: string;
  /** The granted scopes, space-delimited. */
  scope: string;
  /** Expiry, in seconds since the epoch (as `exp` in RFC 7662). */
  exp: number;
  /** The resources the token was issued for (RFC 8707), as `aud` in introspection; absent when unbound. */
  aud?: string[];
  /**
   * The JWK SHA-256 thumbprint of the DPoP key the token is bound to (RFC 9449 §6, `cnf.jkt`); absent for a
   * bearer token. A guard that found it has checked the request's proof of that key.
   */
  jkt?: string;
}
