/**
 * The JWT access token of RFC 9068: its header and claims, signed with the issuer's current key.
 *
 * @module
 */
import { randomToken } from "./crypto.ts";
import type { JwtAccessTokens } from "./features/jwt_access_tokens.ts";
import { type JwtClaims, signJwt } from "./jose/jwt.ts";

/** The claims RFC 9068 §2.2 defines and this module sets; a grant's extra claims may not replace them. */
const REGISTERED = new Set(["iss", "exp", "aud", "sub", "client_id", "iat", "jti", "scope", "auth_time", "nbf"]);

/** What a JWT access token says. */
export interface AccessTokenClaims {
  client_id: string;
  /** The user; absent for client_credentials, whose tokens act for the client. */
  user_id?: string | undefined;
  scope: string;
  /** The bound resources (RFC 8707); the server's default audience when absent. */
  resource?: readonly string[] | undefined;
  /** When the user authenticated, in seconds (RFC 9068 §2.2.1), where known. */
  auth_time?: number | undefined;
  /** Further claims (`act` of token exchange, `cnf` of DPoP); none may be a registered claim. */
  claims?: Readonly<Record<string, unknown>> | undefined;
  /** The actor of a delegation (RFC 8693 §4.1), as the `act` claim. */
  act?: Record<string, unknown> | undefined;
}

/**
 * Signs an access token (RFC 9068 §2): header `typ: at+jwt` and the current key's `kid`; claims iss, exp, aud,
 * sub, client_id, iat, jti, scope, and auth_time where known. `sub` is the user, or for client_credentials the
 * client itself (§2.2).
 */
export async function signAccessToken(token: AccessTokenClaims, state: JwtAccessTokens, ttlMs: number, now: number): Promise<string> {
  const audience = token.resource !== undefined && token.resource.length > 0 ? token.resource : [state.audience];
  const claims: JwtClaims = {
    iss: state.issuer,
    exp: Math.floor((now + ttlMs) / 1000),
    aud: audience.length === 1 ? audience[0]! : [...audience],
    sub: token.user_id ?? token.client_id,
    client_id: token.client_id,
    iat: Math.floor(now / 1000),
    jti: randomToken().slice(0, 22),
    scope: token.scope,
  };
  if (token.auth_time !== undefined) claims.auth_time = token.auth_time;
  if (token.act !== undefined) claims.act = token.act;
  for (const [name, value] of Object.entries(token.claims ?? {})) {
    if (REGISTERED.has(name)) throw new TypeError(`Cannot mint: the claim "${name}" is set by the server`);
    claims[name] = value;
  }
  const key = await state.keys.signingKey();
  return signJwt(claims, { alg: key.alg, key: key.key, kid: key.kid, typ: "at+jwt" });
}
