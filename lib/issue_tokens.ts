/**
 * Minting in the client's access-token format: the one function every grant calls. Apart from `tokens.ts`, which
 * the core's types read, so that the core never reaches the JWT feature through it.
 *
 * @module
 */
import { accessTokenFormat, type JwtAccessTokens } from "./features/jwt_access_tokens.ts";
import { signAccessToken } from "./jwt_access_token.ts";
import type { ClientRecord, IssuedTokens } from "./storage/types.ts";
import { type MintRequest, mintTokens, type TokenResponse } from "./tokens.ts";

/** What minting reads of a grant's view: the lifetime, and the JWT feature's state. */
export interface IssueContext {
  readonly accessTokenTtl: number;
  readonly features: { readonly jwt_access_tokens: JwtAccessTokens };
}

/**
 * Mints the tokens of a grant in the client's access-token format: an RFC 9068 JWT signed with the issuer's
 * current key, or an opaque token. Either way the access token's record is what `mintTokens` makes, stored by
 * hash, so revocation, a revoked grant, a paused client and introspection reach JWTs as they reach opaque tokens.
 */
export async function issueTokens(
  request: MintRequest,
  client: Pick<ClientRecord, "metadata">,
  context: IssueContext,
  now: number,
): Promise<{ response: TokenResponse; records: IssuedTokens }> {
  const jwt = context.features.jwt_access_tokens;
  const token = accessTokenFormat(jwt, client) === "jwt" ? await signAccessToken(request, jwt, context.accessTokenTtl, now) : undefined;
  return mintTokens(request, context.accessTokenTtl, now, token);
}
