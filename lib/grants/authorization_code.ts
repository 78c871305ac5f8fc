/**
 * The authorization_code grant (RFC 6749 §4.1.3, RFC 7636 §4.5-4.6; spec §4.2 columns 1-2).
 *
 * @module
 */
import { defineGrant, type Grant } from "../core/grant.ts";
import { jwtAccessTokens } from "../features/jwt_access_tokens.ts";
import { OAuthError } from "../errors.ts";
import { checkBoundKey, dpopKey } from "../features/dpop.ts";
import { offlineAccess } from "../features/offline_access.ts";
import { narrowedResource, resourceIndicators } from "../features/resource_indicators.ts";
import { CODE_VERIFIER, verifyPkce } from "../pkce.ts";
import { clientAllowsAll, grantsOfflineAccess } from "../scope.ts";
import { sha256 } from "../sha256.ts";
import type { ClientRecord, CodeRecord } from "../storage/types.ts";
import type { TokenResponse } from "../tokens.ts";
import { issueTokens } from "../issue_tokens.ts";
import { judgeFromCopy } from "../storage/issued_records.ts";

const invalidGrant = (description: string) => new OAuthError("invalid_grant", { description });
const missing = (name: string) => new OAuthError("invalid_request", { description: `The ${name} parameter is required` });

/** Whether the client authenticated itself: by its secret, or for a public client by the code's PKCE verifier. */
function proven(client: ClientRecord, verifier: string | undefined, challenge: string | undefined): boolean {
  if (client.type === "confidential") return true; // the token endpoint checked its secret
  return verifier !== undefined && challenge !== undefined && verifyPkce(verifier, challenge);
}

/** Exchanges a code for tokens. Everything is checked before the code is spent, so a bad try costs nothing. */
export const authorizationCode: Grant = defineGrant({
  reads: ["clock", "storage", "accessTokenTtl", "refreshTokenTtl"],
  uses: [resourceIndicators, offlineAccess, jwtAccessTokens],
  clientFields: ["client_id", "type", "scopes", "grant_types", "redirect_uris", "metadata"],
  confidentialOnly: false,
  userApproved: true,
  async exchange(exchange, form, client, context) {
    const code = form.get("code");
    if (code === undefined) throw missing("code");
    const redirectUri = form.get("redirect_uri");
    if (redirectUri === undefined) throw missing("redirect_uri");
    const verifier = form.get("code_verifier");
    if (verifier === undefined && client.type === "public") throw missing("code_verifier");
    if (verifier !== undefined && !CODE_VERIFIER.test(verifier)) {
      throw new OAuthError("invalid_request", { description: "The code_verifier is malformed" });
    }

    const { storage } = context;
    const now = context.clock();
    const hash = sha256(code);

    /**
     * Judges the exchange from `record`, and redeems the code. A `tentative` record may be out of date (the
     * issuing instance's own copy, `issuedRecords`): it answers null rather than act on a failed redemption.
     */
    const redeem = async (record: CodeRecord | null, tentative: boolean): Promise<TokenResponse | null> => {
      if (!record) throw invalidGrant("The authorization code is invalid or has expired");
      // The client check comes first: another client's try must neither work nor have any effect.
      if (record.client_id !== client.client_id) throw invalidGrant("The authorization code was issued to another client");
      // RFC 9449 §10: a code requested with dpop_jkt goes only to that key; a thief without it changes nothing.
      checkBoundKey(exchange, record.dpop_jkt, "authorization code");
      if (record.redeemed_at !== undefined) {
        // RFC 6749 §4.1.2 and RFC 9700 §4.5: a replayed code revokes every token issued from it, but only when the
        // code's own client proves itself (its secret, or the code's PKCE verifier). Else a leaked, spent code
        // plus any public client_id would let anyone kill the user's tokens.
        if (proven(client, verifier, record.code_challenge)) {
          await storage.revokeGrant(record.grant_id);
          exchange.emit({ type: "code.replayed", client_id: client.client_id, user_id: record.user_id, grant_id: record.grant_id });
        }
        throw invalidGrant("The authorization code was already used");
      }
      if (record.redirect_uri !== redirectUri) throw invalidGrant("The redirect_uri does not match the authorization request");
      if (record.code_challenge === undefined) {
        // RFC 9700 §2.1.1: a verifier for a code issued without a challenge is refused (PKCE downgrade).
        if (verifier !== undefined) {
          throw new OAuthError("invalid_request", { description: "A code_verifier was sent for a code issued without code_challenge" });
        }
      } else {
        if (verifier === undefined) throw missing("code_verifier");
        if (!verifyPkce(verifier, record.code_challenge)) throw invalidGrant("PKCE verification failed");
      }

      // The client's registration may have changed since the user approved.
      const offline = context.features.offline_access !== null;
      if (!clientAllowsAll(client, record.scope, offline)) {
        throw new OAuthError("invalid_scope", { description: "The scope is no longer allowed for this client" });
      }

      // RFC 8707 §2.2: the token request may narrow the audience bound at authorization, never change it.
      const resource = narrowedResource(form.get("resource"), record.resource, context.features.resource_indicators);
      // With offline_access on, a refresh token only for a grant the user gave offline access (MCP 2026-07-28).
      const refresh = client.grant_types.includes("refresh_token") && (!offline || grantsOfflineAccess(record.scope));
      const { response, records } = await issueTokens({
        client_id: client.client_id,
        user_id: record.user_id,
        scope: record.scope,
        resource,
        refresh_resource: record.resource,
        grant_id: record.grant_id,
        refresh_expires_at: refresh ? now + context.refreshTokenTtl : undefined,
        auth_time: record.auth_time,
        jkt: dpopKey(exchange),
      }, client, context, now);
      // The one atomic step: whoever loses a concurrent redemption is treated as a replay.
      if (!(await storage.redeemCode(hash, records, now))) {
        if (tentative) return null;
        await storage.revokeGrant(record.grant_id);
        exchange.emit({ type: "code.replayed", client_id: client.client_id, user_id: record.user_id, grant_id: record.grant_id });
        throw invalidGrant("The authorization code was already used");
      }
      exchange.emit({ type: "code.redeemed", client_id: client.client_id, user_id: record.user_id, grant_id: record.grant_id });
      return response;
    };

    // On the instance that issued the code, its own copy saves a read; only the store's redemption decides.
    return judgeFromCopy((read) => storage.findCode(hash, now, read), (record) => record.redeemed_at !== undefined, redeem);
  },
});
