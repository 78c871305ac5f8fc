/**
 * The refresh_token grant with rotation (RFC 6749 §6, RFC 9700 §4.14; spec §4.2 columns 3-4).
 *
 * @module
 */
import { defineGrant, type Grant } from "../core/grant.ts";
import { jwtAccessTokens } from "../features/jwt_access_tokens.ts";
import { OAuthError } from "../errors.ts";
import { checkBoundKey, dpopKey } from "../features/dpop.ts";
import { offlineAccess } from "../features/offline_access.ts";
import { profile } from "../features/profile.ts";
import { refreshGrace } from "../features/refresh_grace.ts";
import { openSuccessor, sealSuccessor } from "../features/refresh_grace_seal.ts";
import { narrowedResource, resourceIndicators } from "../features/resource_indicators.ts";
import { clientAllowsAll, refreshScope } from "../scope.ts";
import { sha256 } from "../sha256.ts";
import { issueTokens } from "../issue_tokens.ts";
import { judgeFromCopy } from "../storage/issued_records.ts";
import type { RefreshTokenRecord } from "../storage/types.ts";
import type { TokenResponse } from "../tokens.ts";

const invalidGrant = (description: string) => new OAuthError("invalid_grant", { description });

/** Rotates a refresh token: the old one is spent, a new pair is issued in the same grant, with the same scope. */
export const refreshToken: Grant = defineGrant({
  reads: ["clock", "storage", "accessTokenTtl"],
  uses: [profile, refreshGrace, resourceIndicators, offlineAccess, jwtAccessTokens],
  clientFields: ["client_id", "type", "scopes", "grant_types", "metadata"],
  confidentialOnly: false,
  userApproved: true,
  async exchange(exchange, form, client, context) {
    const token = form.get("refresh_token");
    if (token === undefined) {
      throw new OAuthError("invalid_request", { description: "The refresh_token parameter is required" });
    }
    const { storage } = context;
    const now = context.clock();
    const hash = sha256(token);
    // Inside the grace window the store decides whether this is the immediate predecessor's one retry.
    const graceMs = context.features.refresh_grace?.ms ?? 0;

    /**
     * Judges the refresh from `record`, and rotates the token. A `tentative` record may be out of date (the
     * issuing instance's own copy, `issuedRecords`): it answers null rather than act on a failed rotation.
     */
    const rotate = async (record: RefreshTokenRecord | null, tentative: boolean): Promise<TokenResponse | null> => {
      if (!record) throw invalidGrant("The refresh token is invalid, expired or revoked");
      if (record.client_id !== client.client_id) throw invalidGrant("The refresh token was issued to another client");
      // RFC 9449 §5: a bound refresh token works only with its key. Checked before reuse is judged, so a thief
      // without the key cannot revoke the grant by replaying it.
      checkBoundKey(exchange, record.jkt, "refresh token");
      if (record.rotated_at !== undefined && !(graceMs > 0 && now - record.rotated_at < graceMs)) {
        // RFC 9700 §4.14.2: reuse of a rotated refresh token means one of two parties stole it; revoke the grant.
        await storage.revokeGrant(record.grant_id);
        exchange.emit({ type: "refresh.reuse_detected", client_id: client.client_id, user_id: record.user_id, grant_id: record.grant_id });
        throw invalidGrant("The refresh token was already used");
      }
      // RFC 6749 §6: the access token's scope may narrow, never widen; with one scope per token, it may only repeat.
      const scope = refreshScope(form.get("scope"), record.scope, context.features.profile.scopePolicy);
      // A refresh keeps the grant's audience; the access token's may narrow (RFC 8707 §2.2).
      const resource = narrowedResource(form.get("resource"), record.resource, context.features.resource_indicators);
      if (!clientAllowsAll(client, record.scope, context.features.offline_access !== null)) {
        throw new OAuthError("invalid_scope", { description: "The scope is no longer allowed for this client" });
      }

      const { response, records } = await issueTokens({
        client_id: client.client_id,
        user_id: record.user_id,
        scope,
        // RFC 6749 §6: the new refresh token keeps the scope of the one it replaces.
        refresh_scope: record.scope,
        resource,
        refresh_resource: record.resource,
        grant_id: record.grant_id,
        // The grant's lifetime is fixed at authorization: rotation does not extend it.
        refresh_expires_at: record.expires_at,
        // The sign-in behind the grant, not the refresh (RFC 9068 §2.2.1).
        auth_time: record.auth_time,
        jkt: dpopKey(exchange),
      }, client, context, now);
      // With a grace window the store keeps the successor sealed under this token, for a retry to get the same one.
      if (graceMs > 0 && response.refresh_token !== undefined) records.sealed = await sealSuccessor(token, response.refresh_token);
      const rotated = await storage.rotateRefreshToken(hash, records, now, graceMs);
      // A grace retry answers with the successor already issued (the store kept none of this call's refresh token).
      const successor = rotated?.rotated_at === undefined ? undefined
        : await openSuccessor(token, rotated.successor ?? "", rotated.replaced_by);
      if (!rotated || successor === null) {
        // A tentative try leaves the verdict to a fresh read, also for a grace retry whose seal does not open.
        if (tentative) return null;
        await storage.revokeGrant(record.grant_id);
        exchange.emit({ type: "refresh.reuse_detected", client_id: client.client_id, user_id: record.user_id, grant_id: record.grant_id });
        throw invalidGrant("The refresh token was already used");
      }
      if (successor !== undefined) response.refresh_token = successor;
      exchange.emit({
        type: "token.refreshed", client_id: client.client_id, user_id: record.user_id, grant_id: record.grant_id,
      });
      return response;
    };

    // On the instance that issued the token, its own copy saves a read; only the store's rotation decides.
    return judgeFromCopy((read) => storage.findRefreshToken(hash, now, read), (record) => record.rotated_at !== undefined, rotate);
  },
});
