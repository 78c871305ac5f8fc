/**
 * The resource-API guard: Bearer tokens in the Authorization header (RFC 6750 §2.1, §3; spec §4.3).
 *
 * @module
 */
import { sha256 } from "./crypto.ts";
import { OAuthError } from "./errors.ts";
import type { ServerContext } from "./options.ts";

/** What a valid access token grants. */
export interface AccessTokenInfo {
  client_id: string;
  /** The end user, for tokens from the authorization code flow. */
  user_id?: string;
  scope: string;
  /** Expiry, in seconds since the epoch (as `exp` in RFC 7662). */
  exp: number;
}

/** `Bearer <b64token>` (RFC 6750 §2.1), the scheme case-insensitive. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * Verifies the `Authorization` header of a resource request. Throws `OAuthError` carrying the status and the
 * `WWW-Authenticate` challenge to send: 401 with a bare challenge when no token was sent (RFC 6750 §3.1), 400
 * `invalid_request` for a malformed header, 401 `invalid_token` for a bad, expired or revoked token or a paused
 * client, 403 `insufficient_scope` when `requiredScope` is missing.
 */
export async function verifyBearer(
  authorization: string | null,
  requiredScope: string | undefined,
  context: ServerContext,
): Promise<AccessTokenInfo> {
  const realm = `Bearer realm="${context.issuer}"`;
  const challenge = (code: string, description: string, extra = "") =>
    `${realm}, error="${code}", error_description="${description}"${extra}`;
  if (authorization === null || !/^bearer(?: |$)/i.test(authorization)) {
    throw new OAuthError("invalid_token", {
      description: "An access token is required",
      headers: { "www-authenticate": realm },
    });
  }
  const match = BEARER.exec(authorization);
  if (!match) {
    const description = "The Authorization header is malformed";
    throw new OAuthError("invalid_request", {
      description,
      headers: { "www-authenticate": challenge("invalid_request", description) },
    });
  }
  const now = context.clock();
  const record = await context.storage.findAccessToken(await sha256(match[1]!), now);
  const client = record && await context.storage.getClient(record.client_id);
  if (!record || !client || !client.active) {
    const description = "The access token is invalid or has expired";
    throw new OAuthError("invalid_token", {
      description,
      headers: { "www-authenticate": challenge("invalid_token", description) },
    });
  }
  if (requiredScope !== undefined && !record.scope.split(" ").includes(requiredScope)) {
    const description = "The access token does not grant the required scope";
    throw new OAuthError("insufficient_scope", {
      description,
      headers: { "www-authenticate": challenge("insufficient_scope", description, `, scope="${requiredScope}"`) },
    });
  }
  const info: AccessTokenInfo = { client_id: record.client_id, scope: record.scope, exp: Math.floor(record.expires_at / 1000) };
  if (record.user_id !== undefined) info.user_id = record.user_id;
  return info;
}
