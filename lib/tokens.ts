/**
 * Minting tokens: fresh random values, their hashed records, and the JSON of spec §2 "Token response".
 *
 * @module
 */
import { randomToken } from "./crypto.ts";
import { sha256 } from "./sha256.ts";
import type { IssuedTokens } from "./storage/types.ts";

/** The token response (spec §2; RFC 6749 §5.1). */
export interface TokenResponse {
  /** The access token (RFC 6749 §5.1). */
  access_token: string;
  /** `Bearer` (RFC 6750), or `DPoP` for a token bound to the client's key (RFC 9449 §5). */
  token_type: "Bearer" | "DPoP";
  /** Seconds. */
  expires_in: number;
  /** A refresh token, when the grant issues one. */
  refresh_token?: string;
  /** The granted scope; RFC 6749 §5.1 makes it optional when equal to the request, it is always sent here. */
  scope: string;
  /** RFC 8693 §2.2.1: the type of the token a token exchange issued. */
  issued_token_type?: string;
}

/** What a grant asks to be minted. */
export interface MintRequest {
  client_id: string;
  user_id?: string | undefined;
  scope: string;
  /** The audience (RFC 8707) of the access token. */
  resource?: string[] | undefined;
  /** The refresh token's audience, when it differs from the access token's (a narrowed request). */
  refresh_resource?: string[] | undefined;
  /** The refresh token's scope, when it differs from the access token's (a narrowed refresh). */
  refresh_scope?: string | undefined;
  /** The grant the tokens join; required with a refresh token. */
  grant_id?: string | undefined;
  /** Expiry of the refresh token to issue, or undefined for none. */
  refresh_expires_at?: number | undefined;
  /** The DPoP key thumbprint the access token is bound to (RFC 9449 §6): `token_type` DPoP and the record's `jkt`. */
  jkt?: string | undefined;
  /** The DPoP key thumbprint the refresh token is bound to (RFC 9449 §5: public clients' refresh tokens). */
  refresh_jkt?: string | undefined;
  /** When the user authenticated, in seconds; `auth_time` of a JWT access token (RFC 9068 §2.2.1). */
  auth_time?: number | undefined;
  /**
   * Further claims of a JWT access token: `act` (token exchange, RFC 8693 §4.1), `cnf` (DPoP, RFC 9449 §6.1).
   * Opaque tokens ignore them; none may be a claim RFC 9068 §2.2 defines.
   */
  claims?: Readonly<Record<string, unknown>> | undefined;
  /** The actor of a delegation (RFC 8693 §4.1): the `act` claim of a JWT, kept in the opaque tokens' records. */
  act?: Record<string, unknown> | undefined;
}

/**
 * Mints an access token (and a refresh token when asked): the response to send and the records to store.
 * `accessToken` is the token already made (a JWT); default a random opaque one.
 */
export function mintTokens(
  request: MintRequest,
  accessTokenTtl: number,
  now: number,
  accessToken: string = randomToken(),
): { response: TokenResponse; records: IssuedTokens } {
  const response: TokenResponse = {
    access_token: accessToken,
    token_type: request.jkt === undefined ? "Bearer" : "DPoP",
    expires_in: Math.floor(accessTokenTtl / 1000),
    scope: request.scope,
  };
  const records: IssuedTokens = {
    access: { hash: sha256(accessToken), client_id: request.client_id, scope: request.scope, expires_at: now + accessTokenTtl },
  };
  if (request.user_id !== undefined) records.access.user_id = request.user_id;
  if (request.grant_id !== undefined) records.access.grant_id = request.grant_id;
  if (request.resource !== undefined) records.access.resource = request.resource;
  if (request.act !== undefined) records.access.act = request.act;
  if (request.auth_time !== undefined) records.access.auth_time = request.auth_time;
  if (request.jkt !== undefined) records.access.jkt = request.jkt;
  if (request.refresh_expires_at !== undefined &&
    // Stryker disable next-line ConditionalExpression: narrows the type
    request.grant_id !== undefined) {
    const refreshToken = randomToken();
    response.refresh_token = refreshToken;
    records.refresh = {
      hash: sha256(refreshToken),
      grant_id: request.grant_id,
      client_id: request.client_id,
      scope: request.refresh_scope ?? request.scope,
      expires_at: request.refresh_expires_at,
    };
    if (request.user_id !== undefined) records.refresh.user_id = request.user_id;
    if (request.refresh_jkt !== undefined) records.refresh.jkt = request.refresh_jkt;
    // Stryker disable next-line LogicalOperator: a narrowed audience equals the bound one
    const refreshResource = request.refresh_resource ?? request.resource;
    if (refreshResource !== undefined) records.refresh.resource = refreshResource;
    if (request.act !== undefined) records.refresh.act = request.act;
    if (request.auth_time !== undefined) records.refresh.auth_time = request.auth_time;
  }
  return { response, records };
}

/** Base64url, and the dots of a JWT's compact serialization: nothing JSON escapes. */
const BASE64URL = /^[A-Za-z0-9_.-]+$/;

/**
 * The token response as JSON, the same text `JSON.stringify` gives (members in the same order), written out
 * because it is the one body every token request returns: the tokens are base64url (a JWT: with dots), which never needs
 * escaping (checked, with `JSON.stringify` as the fallback), and the scope goes through `JSON.stringify`.
 */
export function tokenResponseJson(response: TokenResponse): string {
  const { access_token, refresh_token } = response;
  // Stryker disable next-line ConditionalExpression,LogicalOperator: the fallback gives the same text
  if (!BASE64URL.test(access_token) || (refresh_token !== undefined && !BASE64URL.test(refresh_token)) ||
    // Stryker disable next-line ConditionalExpression: the fallback is JSON.stringify itself
    Object.keys(response).length !== (refresh_token === undefined ? 4 : 5)) {
    return JSON.stringify(response);
  }
  const json = `{"access_token":"${access_token}","token_type":${JSON.stringify(response.token_type)},` +
    `"expires_in":${JSON.stringify(response.expires_in)},"scope":${JSON.stringify(response.scope)}`;
  return refresh_token === undefined ? json + "}" : `${json},"refresh_token":"${refresh_token}"}`;
}

/** A new grant identifier (the id of a token family; not a secret). */
export function newGrantId(): string {
  return randomToken().slice(0, 22);
}
