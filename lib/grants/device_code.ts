/**
 * The device_code grant (RFC 8628 §3.4-3.5): the device polls with its device code and learns, in this order,
 * that the code expired, was denied or already used, that it polls too fast, that the user has not decided
 * yet, or gets its tokens, exactly once.
 *
 * @module
 */
import { defineGrant, type Grant } from "../core/grant.ts";
import { OAuthError } from "../errors.ts";
import { dpopKey } from "../features/dpop.ts";
import { jwtAccessTokens } from "../features/jwt_access_tokens.ts";
import { offlineAccess } from "../features/offline_access.ts";
import { issueTokens } from "../issue_tokens.ts";
import { clientAllowsAll, grantsOfflineAccess } from "../scope.ts";
import { sha256 } from "../sha256.ts";

/** The grant type's wire name (RFC 8628 §3.4). */
export const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

// RFC 8628 §3.5: these are token endpoint errors (RFC 6749 §5.2), so 400 whatever the code's usual status.
const polling = (code: "authorization_pending" | "slow_down" | "access_denied" | "expired_token" | "invalid_grant", description: string) =>
  new OAuthError(code, { description, status: 400 });

/** Redeems an approved device authorization; every other state answers with its RFC 8628 error. */
export const deviceCode: Grant = defineGrant({
  reads: ["clock", "storage", "accessTokenTtl", "refreshTokenTtl"],
  uses: [offlineAccess, jwtAccessTokens],
  clientFields: ["client_id", "type", "grant_types", "scopes", "metadata"],
  confidentialOnly: false,
  userApproved: true,
  async exchange(exchange, form, client, context) {
    const code = form.get("device_code");
    if (code === undefined) throw new OAuthError("invalid_request", { description: "The device_code parameter is required" });
    const { storage } = context;
    const now = context.clock();
    const hash = sha256(code);
    // One write both records this poll and says whether it came too soon (RFC 8628 §3.5), for every instance.
    const poll = await storage.pollDeviceAuthorization(hash, now);
    if (poll === null || poll.record.client_id !== client.client_id) throw polling("invalid_grant", "The device_code is invalid");
    const { record } = poll;
    if (now >= record.codes_expire_at) throw polling("expired_token", "The device_code has expired; start again");
    if (record.status === "denied") throw polling("access_denied", "The user denied the request");
    // Also refused by the redemption below; answered here without minting tokens first.
    if (record.status === "redeemed") throw polling("invalid_grant", "The device_code was already used");
    if (poll.slow_down) throw polling("slow_down", `Polling too fast: wait ${record.interval / 1000} seconds between requests`);
    if (record.status === "pending") throw polling("authorization_pending", "The user has not decided yet");

    const offline = context.features.offline_access !== null;
    if (!clientAllowsAll(client, record.scope, offline)) {
      throw new OAuthError("invalid_scope", { description: "The scope is no longer allowed for this client" });
    }
    const refresh = client.grant_types.includes("refresh_token") && (!offline || grantsOfflineAccess(record.scope));
    const { response, records } = await issueTokens({
      client_id: client.client_id,
      user_id: record.user_id,
      scope: record.scope,
      resource: record.resource,
      grant_id: record.grant_id,
      refresh_expires_at: refresh ? now + context.refreshTokenTtl : undefined,
      auth_time: record.auth_time,
      // A DPoP proof on the poll binds the tokens to its key (RFC 9449), as for every grant.
      jkt: dpopKey(exchange),
    }, client, context, now);
    // The one atomic step: of two polls that both saw it approved, one gets the tokens.
    if (!(await storage.redeemDeviceAuthorization(hash, records, now))) {
      throw polling("invalid_grant", "The device_code was already used");
    }
    exchange.emit({ type: "code.redeemed", client_id: client.client_id, user_id: record.user_id!, grant_id: record.grant_id });
    return response;
  },
});
