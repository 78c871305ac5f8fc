/**
 * Minting tokens: fresh random values, their hashed records, and the JSON of spec §2 "Token response".
 *
 * @module
 */
import { randomToken, sha256 } from "./crypto.ts";
import type { ServerContext } from "./options.ts";
import type { IssuedTokens } from "./storage/types.ts";

/** The token response (spec §2; RFC 6749 §5.1). */
export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  /** Seconds. */
  expires_in: number;
  refresh_token?: string;
  /** The granted scope; RFC 6749 §5.1 makes it optional when equal to the request, it is always sent here. */
  scope: string;
}

/** What a grant asks to be minted. */
export interface MintRequest {
  client_id: string;
  user_id?: string | undefined;
  scope: string;
  /** The grant the tokens join; required with a refresh token. */
  grant_id?: string | undefined;
  /** Expiry of the refresh token to issue, or undefined for none. */
  refresh_expires_at?: number | undefined;
}

/** Mints an access token (and a refresh token when asked): the response to send and the records to store. */
export async function mintTokens(
  request: MintRequest,
  context: ServerContext,
  now: number,
): Promise<{ response: TokenResponse; records: IssuedTokens }> {
  const accessToken = randomToken();
  const refreshToken = request.refresh_expires_at === undefined ? undefined : randomToken();
  const [accessHash, refreshHash] = await Promise.all([
    sha256(accessToken),
    refreshToken === undefined ? undefined : sha256(refreshToken),
  ]);
  const response: TokenResponse = {
    access_token: accessToken,
    token_type: "Bearer",
    expires_in: Math.floor(context.accessTokenTtl / 1000),
    scope: request.scope,
  };
  const records: IssuedTokens = {
    access: { hash: accessHash, client_id: request.client_id, scope: request.scope, expires_at: now + context.accessTokenTtl },
  };
  if (request.user_id !== undefined) records.access.user_id = request.user_id;
  if (request.grant_id !== undefined) records.access.grant_id = request.grant_id;
  if (refreshToken !== undefined && refreshHash !== undefined && request.grant_id !== undefined) {
    response.refresh_token = refreshToken;
    records.refresh = {
      hash: refreshHash,
      grant_id: request.grant_id,
      client_id: request.client_id,
      scope: request.scope,
      expires_at: request.refresh_expires_at!,
    };
    if (request.user_id !== undefined) records.refresh.user_id = request.user_id;
  }
  return { response, records };
}

/** A new grant identifier (the id of a token family; not a secret). */
export function newGrantId(): string {
  return randomToken().slice(0, 22);
}
