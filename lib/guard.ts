/**
 * The resource-API guard of a server's own process: Bearer tokens in the Authorization header (RFC 6750 §2.1,
 * §3; spec §4.3), looked up in the server's store.
 *
 * @module
 */
import { type AccessTokenInfo, presentedToken } from "./bearer.ts";
import type { View } from "./core/view.ts";
import { OAuthError } from "./errors.ts";
import { sha256 } from "./sha256.ts";

/** The core fields the guard reads. */
export const GUARD_READS = ["issuer", "clock", "storage"] as const;

/**
 * Verifies the `Authorization` header of a resource request. Throws `OAuthError` carrying the status and the
 * `WWW-Authenticate` challenge to send: 401 with a bare challenge when no token was sent (RFC 6750 §3.1), 400
 * `invalid_request` for a malformed header, 401 `invalid_token` for a bad, expired or revoked token or a paused
 * client, 403 `insufficient_scope` when `requiredScope` is missing.
 */
export async function verifyBearer(
  authorization: string | null,
  requiredScope: string | undefined,
  view: View<(typeof GUARD_READS)[number], readonly []>,
): Promise<AccessTokenInfo> {
  const presented = presentedToken(authorization);
  if (presented.kind === "absent") {
    throw new OAuthError("invalid_token", {
      description: "An access token is required",
      headers: { "www-authenticate": `Bearer realm="${view.issuer}"` },
    });
  }
  if (presented.kind === "malformed") throw refused("invalid_request", "The Authorization header is malformed", view.issuer);
  const record = await view.storage.findAccessToken(sha256(presented.token), view.clock());
  const client = record && await view.storage.getClient(record.client_id);
  if (!record || !client || !client.active) {
    throw refused("invalid_token", "The access token is invalid or has expired", view.issuer);
  }
  if (requiredScope !== undefined && !record.scope.split(" ").includes(requiredScope)) {
    throw refused("insufficient_scope", "The access token does not grant the required scope", view.issuer, `, scope="${requiredScope}"`);
  }
  const info: AccessTokenInfo = { client_id: record.client_id, scope: record.scope, exp: Math.floor(record.expires_at / 1000) };
  if (record.user_id !== undefined) info.user_id = record.user_id;
  if (record.resource !== undefined) info.aud = [...record.resource];
  return info;
}

/** The error, and its RFC 6750 §3 challenge naming the error code. */
function refused(code: "invalid_request" | "invalid_token" | "insufficient_scope", description: string, issuer: string, extra = ""): OAuthError {
  const challenge = `Bearer realm="${issuer}", error="${code}", error_description="${description}"${extra}`;
  return new OAuthError(code, { description, headers: { "www-authenticate": challenge } });
}
