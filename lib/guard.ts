/**
 * The resource-API guard of a server's own process: Bearer tokens in the Authorization header (RFC 6750 §2.1,
 * §3; spec §4.3) and, where the server offers DPoP, DPoP-bound ones with their proofs (RFC 9449 §7), looked up
 * in the server's store, and the audience rule of `server.protect` (RFC 8707).
 *
 * @module
 */
import type { AccessTokenInfo } from "./bearer.ts";
import type { View } from "./core/view.ts";
import { OAuthError } from "./errors.ts";
import { challenge, checkBinding, presentation, quoted, type ResourceDpop, type Scheme } from "./features/dpop_resource.ts";
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
 * Whether a token's audience fits `rule`: a token minted for another resource must never open this one (confused
 * deputy, RFC 9700 §4.10); one bound to none only unless `requireAudience`.
 */
export function fitsAudience(info: AccessTokenInfo, rule: AudienceRule): boolean {
  return info.aud === undefined ? !rule.requireAudience : rule.audience !== undefined && info.aud.includes(rule.audience);
}

/** How `server.protect` and `verifyAccessToken` take tokens: the audience rule, and DPoP when the server offers it. */
export interface GuardPolicy {
  readonly audience?: AudienceRule | undefined;
  /** DPoP-bound tokens and their proofs (RFC 9449 §7); null: Bearer only. */
  readonly dpop: ResourceDpop | null;
}

/**
 * What a live access token grants, with the key it is bound to (`jkt`); null when it is unknown, expired or
 * revoked, or its client is paused. No scheme, proof, audience or scope check.
 */
export async function tokenInfo(token: string, view: View<(typeof GUARD_READS)[number], readonly []>): Promise<AccessTokenInfo | null> {
  const record = await view.storage.findAccessToken(sha256(token), view.clock());
  const client = record && await view.storage.getClient(record.client_id);
  if (!record || !client || !client.active) return null;
  const info: AccessTokenInfo = { client_id: record.client_id, scope: record.scope, exp: Math.floor(record.expires_at / 1000) };
  if (record.user_id !== undefined) info.user_id = record.user_id;
  if (record.resource !== undefined) info.aud = [...record.resource];
  if (record.jkt !== undefined) info.jkt = record.jkt;
  return info;
}

/**
 * Verifies the `Authorization` header of a resource request. Throws `OAuthError` carrying the status and the
 * `WWW-Authenticate` challenge to send: 401 with a bare challenge when no token was sent (RFC 6750 §3.1), 400
 * `invalid_request` for a malformed header, 401 `invalid_token` for a bad, expired or revoked token or a paused
 * client or a token that does not fit `audience` (when given), 403 `insufficient_scope` when `requiredScope`
 * is missing. With DPoP on, a bound token needs the DPoP scheme and a valid proof of its key for `request`
 * (401 `invalid_dpop_proof` otherwise, RFC 9449 §7.1), and is refused as a Bearer token (§7.2).
 */
export async function verifyToken(
  authorization: string | null,
  request: Request | undefined,
  requiredScope: string | undefined,
  view: View<(typeof GUARD_READS)[number], readonly []>,
  policy: GuardPolicy,
): Promise<AccessTokenInfo> {
  const { dpop, audience } = policy;
  const presented = presentation(authorization, dpop);
  if (presented.kind === "absent") {
    const base = [`realm="${view.issuer}"`];
    throw new OAuthError("invalid_token", { description: "An access token is required", headers: { "www-authenticate": challenge(base, dpop) } });
  }
  if (presented.kind === "malformed") {
    throw refused(view, dpop, new OAuthError("invalid_request", { description: "The Authorization header is malformed" }), presented.scheme);
  }
  const info = await tokenInfo(presented.token, view);
  if (info === null) {
    throw refused(view, dpop, new OAuthError("invalid_token", { description: "The access token is invalid or has expired" }), presented.scheme);
  }
  // An unbound token presented as Bearer needs no proof: the common case skips the binding check's await.
  if (presented.scheme !== "Bearer" || info.jkt !== undefined) {
    try {
      // The API's origin: its audience's, else the issuer's (the process serves both), never the request's Host.
      await checkBinding(presented, info.jkt, request, new URL(audience?.audience ?? view.issuer).origin, dpop, view.clock());
    } catch (error) {
      throw error instanceof OAuthError ? refused(view, dpop, error, presented.scheme) : error;
    }
  }
  // The audience before the scope: a token for another resource is no token here, whatever it grants.
  if (audience !== undefined && !fitsAudience(info, audience)) {
    throw refused(view, dpop, new OAuthError("invalid_token", { description: "The access token was not issued for this resource" }), presented.scheme);
  }
  if (requiredScope !== undefined && !hasScope(info.scope, requiredScope)) {
    const error = new OAuthError("insufficient_scope", { description: "The access token does not grant the required scope" });
    throw refused(view, dpop, error, presented.scheme, [`scope=${quoted(requiredScope)}`]);
  }
  return info;
}

/** A refusal carrying the `WWW-Authenticate` challenge of the scheme the request used (RFC 6750 §3, RFC 9449 §7.1). */
function refused(
  view: View<(typeof GUARD_READS)[number], readonly []>,
  dpop: ResourceDpop | null,
  error: OAuthError,
  scheme: Scheme | undefined,
  extra: string[] = [],
): OAuthError {
  const description = error.description ?? error.code;
  const params = [`error="${error.code}"`, `error_description=${quoted(description)}`, ...extra];
  const header = challenge([`realm="${view.issuer}"`], dpop, { scheme, params });
  return new OAuthError(error.code, { description, status: error.status, headers: { "www-authenticate": header } });
}

/** Whether the space-delimited `scope` holds `wanted`, without splitting it. */
function hasScope(scope: string, wanted: string): boolean {
  if (wanted === "") return scope.split(" ").includes(""); // as a split would say; indexOf("") never moves on
  for (let at = scope.indexOf(wanted); at !== -1; at = scope.indexOf(wanted, at + 1)) {
    const end = at + wanted.length;
    if ((at === 0 || scope.charCodeAt(at - 1) === 32) && (end === scope.length || scope.charCodeAt(end) === 32)) return true;
  }
  return false;
}
