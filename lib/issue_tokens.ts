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

/** What a grant asks to be issued: a {@link MintRequest} that always says which DPoP key, if any, it proved. */
export type IssueRequest = MintRequest & {
  /** The key of the request's DPoP proof (`dpopKey(exchange)`), or undefined: every grant states it. */
  readonly jkt: string | undefined;
};

/**
 * Mints the tokens of a grant in the client's access-token format: an RFC 9068 JWT signed with the issuer's
 * current key, or an opaque token. Either way the access token's record is what `mintTokens` makes, stored by
 * hash, so revocation, a revoked grant, a paused client and introspection reach JWTs as they reach opaque tokens.
 * With a DPoP key, the access token is bound to it (`cnf.jkt`, RFC 9449 §6), and so is a public client's refresh
 * token (§5: a confidential client's is bound to its credentials already).
 */
export async function issueTokens(
  request: IssueRequest,
  client: Pick<ClientRecord, "metadata" | "type">,
  context: IssueContext,
  now: number,
): Promise<{ response: TokenResponse; records: IssuedTokens }> {
  const { jkt } = request;
  const refreshJkt = client.type === "public" ? jkt : undefined;
  const bound: MintRequest = jkt === undefined ? request : { ...request, claims: { ...request.claims, cnf: { jkt } }, refresh_jkt: refreshJkt };
  const jwt = context.features.jwt_access_tokens;
  const token = accessTokenFormat(jwt, client) === "jwt" ? await signAccessToken(bound, jwt, context.accessTokenTtl, now) : undefined;
  return mintTokens(bound, context.accessTokenTtl, now, token);
}
