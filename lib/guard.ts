/**
 * The resource-API guard of a server's own process: Bearer tokens in the Authorization header (RFC 6750 §2.1,
 * §3; spec §4.3), looked up in the server's store, and the audience rule of `server.protect` (RFC 8707).
 *
 * @module
 */
import { type AccessTokenInfo, presentedToken } from "./bearer.ts";
import type { View } from "./core/view.ts";
import { OAuthError } from "./errors.ts";
import { canonicalResource } from "./resource_uri.ts";
import { sha256 } from "./sha256.ts";

/** The core fields the guard reads. */
export const GUARD_READS = ["issuer", "clock", "storage"] as const;

/**
 * Which tokens an API guarded by `server.protect` takes, by audience (RFC 8707). A token bound to resources (a
 * client asked for one with `resource`) was minted for those resources only: it opens this API only when
 * `audience` is one of them. A token bound to none (every client that never sends `resource`, as the spec's
 * clients) opens it unless `requireAudience` is set.
 */
export interface ProtectOptions {
  /**
   * This API's resource identifier, when it is one of the server's `resources` (compared in canonical form:
   * scheme and host in lower case). Default none: tokens bound to any resource are refused.
   */
  audience?: string;
  /** Refuse tokens bound to no resource as well. Default false. Needs `audience`. */
  requireAudience?: boolean;
}

/** An audience rule ready to apply: the canonical audience (or none), and whether unbound tokens are refused. */
export interface AudienceRule {
  readonly audience: string | undefined;
  readonly requireAudience: boolean;
}

/** Checks {@link ProtectOptions} once, when an API is guarded; throws `TypeError` for a bad one. */
export function audienceRule(options: ProtectOptions = {}): AudienceRule {
  if (typeof options !== "object" || options === null) throw new TypeError("Cannot protect resource: options must be an object");
  let audience: string | undefined;
  if (options.audience !== undefined) {
    const canonical = typeof options.audience === "string" ? canonicalResource(options.audience) : null;
    if (canonical === null) {
      throw new TypeError(`Cannot protect resource: "audience" must be an absolute https URL without fragment: "${String(options.audience)}"`);
    }
    audience = canonical;
  }
  const requireAudience = options.requireAudience === true;
  if (requireAudience && audience === undefined) throw new TypeError('Cannot protect resource: "requireAudience" needs "audience"');
  return { audience, requireAudience };
}

/**
 * Refuses a token whose audience does not fit `rule` with 401 `invalid_token` (RFC 6750 §3.1): a token minted
 * for another resource must never open this one (confused deputy, RFC 9700 §4.10).
 */
export function checkAudience(info: AccessTokenInfo, rule: AudienceRule, issuer: string): void {
  const fits = info.aud === undefined ? !rule.requireAudience : rule.audience !== undefined && info.aud.includes(rule.audience);
  if (!fits) throw refused("invalid_token", "The access token was not issued for this resource", issuer);
}

/**
 * Verifies the `Authorization` header of a resource request. Throws `OAuthError` carrying the status and the
 * `WWW-Authenticate` challenge to send: 401 with a bare challenge when no token was sent (RFC 6750 §3.1), 400
 * `invalid_request` for a malformed header, 401 `invalid_token` for a bad, expired or revoked token or a paused
 * client or a token that does not fit `audience` (when given), 403 `insufficient_scope` when `requiredScope`
 * is missing.
 */
export async function verifyBearer(
  authorization: string | null,
  requiredScope: string | undefined,
  view: View<(typeof GUARD_READS)[number], readonly []>,
  audience?: AudienceRule,
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
  const info: AccessTokenInfo = { client_id: record.client_id, scope: record.scope, exp: Math.floor(record.expires_at / 1000) };
  if (record.user_id !== undefined) info.user_id = record.user_id;
  if (record.resource !== undefined) info.aud = [...record.resource];
  // The audience before the scope: a token for another resource is no token here, whatever it grants.
  if (audience !== undefined) checkAudience(info, audience, view.issuer);
  if (requiredScope !== undefined && !record.scope.split(" ").includes(requiredScope)) {
    throw refused("insufficient_scope", "The access token does not grant the required scope", view.issuer, `, scope="${requiredScope}"`);
  }
  return info;
}

/** The error, and its RFC 6750 §3 challenge naming the error code. */
function refused(code: "invalid_request" | "invalid_token" | "insufficient_scope", description: string, issuer: string, extra = ""): OAuthError {
  const challenge = `Bearer realm="${issuer}", error="${code}", error_description="${description}"${extra}`;
  return new OAuthError(code, { description, headers: { "www-authenticate": challenge } });
}
