/**
 * The client_credentials grant (RFC 6749 §4.4; spec §4.2 column 5).
 *
 * @module
 */
import { defineGrant, type Grant } from "../core/grant.ts";
import { dpopKey } from "../features/dpop.ts";
import { jwtAccessTokens } from "../features/jwt_access_tokens.ts";
import { offlineAccess } from "../features/offline_access.ts";
import { profile } from "../features/profile.ts";
import { requestedResource, resourceIndicators } from "../features/resource_indicators.ts";
import { requestedScope } from "../scope.ts";
import { issueTokens } from "../issue_tokens.ts";
import { newGrantId } from "../tokens.ts";

/** Issues a token to the client itself; a refresh token only when the client is configured for one. */
export const clientCredentials: Grant = defineGrant({
  reads: ["clock", "storage", "accessTokenTtl", "refreshTokenTtl", "scopes"],
  uses: [profile, resourceIndicators, offlineAccess, jwtAccessTokens],
  clientFields: ["client_id", "type", "scopes", "default_scope", "grant_types", "client_credentials_refresh_token", "metadata"],
  confidentialOnly: true,
  async exchange(exchange, form, client, context) {
    // Under the multiple policy a request is narrowed to the client's scopes, as at /authorize (RFC 6749 §3.3).
    const scope = requestedScope(form.get("scope"), client, {
      policy: context.features.profile.scopePolicy,
      known: context.scopes,
      offlineAccess: context.features.offline_access !== null,
    });
    // No user consents here: the client may name any configured resource (RFC 8707 §2).
    const resource = requestedResource(form.get("resource"), context.features.resource_indicators);
    const now = context.clock();
    // RFC 6749 §4.4.3 says a refresh token SHOULD NOT be included; the spec lets configuration allow it.
    const refresh = client.client_credentials_refresh_token && client.grant_types.includes("refresh_token");
    const { response, records } = await issueTokens({
      client_id: client.client_id,
      scope,
      resource,
      grant_id: refresh ? newGrantId() : undefined,
      refresh_expires_at: refresh ? now + context.refreshTokenTtl : undefined,
      jkt: dpopKey(exchange),
    }, client, context, now);
    await context.storage.saveTokens(records, now);
    exchange.emit({ type: "token.issued", client_id: client.client_id, grant_id: records.refresh?.grant_id });
    return response;
  },
});
