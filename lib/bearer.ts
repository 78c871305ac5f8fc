/**
 * The resource-API guard: Bearer tokens in the Authorization header (RFC 6750 §2.1, §3; spec §4.3).
 *
 * @module
 */
import { sha256 } from "./sha256.ts";
import { OAuthError } from "./errors.ts";
import type { ServerContext } from "./options.ts";

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
  // Stryker disable next-line StringLiteral: any stand-in for a missing header that does not start with "bearer" does the same
  const header = authorization ?? "";
  if (!/^bearer(?: |$)/i.test(header)) {
    throw new OAuthError("invalid_token", {
      description: "An access token is required",
      headers: { "www-authenticate": `Bearer realm="${context.issuer}"` },
    });
  }
  const match = BEARER.exec(header);
  if (!match) throw refused("invalid_request", "The Authorization header is malformed", context);
  const now = context.clock();
  const record = await context.storage.findAccessToken(sha256(match[1]!), now);
  const client = record && await context.storage.getClient(record.client_id);
  if (!record || !client || !client.active) {
    throw refused("invalid_token", "The access token is invalid or has expired", context);
  }
  if (requiredScope !== undefined && !record.scope.split(" ").includes(requiredScope)) {
    throw refused("insufficient_scope", "The access token does not grant the required scope", context, `, scope="${requiredScope}"`);
  }
  const info: AccessTokenInfo = { client_id: record.client_id, scope: record.scope, exp: Math.floor(record.expires_at / 1000) };
  if (record.user_id !== undefined) info.user_id = record.user_id;
  if (record.resource !== undefined) info.aud = [...record.resource];
  return info;
}

/** The error, and its RFC 6750 §3 challenge naming the error code. */
function refused(
  code: "invalid_request" | "invalid_token" | "insufficient_scope",
  description: string,
  context: ServerContext,
  extra = "",
): OAuthError {
  const challenge = `Bearer realm="${context.issuer}", error="${code}", error_description="${description}"${extra}`;
  return new OAuthError(code, { description, headers: { "www-authenticate": challenge } });
}
