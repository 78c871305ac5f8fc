/**
 * The refresh_token grant with rotation (RFC 6749 §6, RFC 9700 §4.14; spec §4.2 columns 3-4).
 *
 * @module
 */
import { sha256 } from "../crypto.ts";
import { OAuthError } from "../errors.ts";
import { mintTokens } from "../tokens.ts";
import type { Grant } from "./types.ts";

const invalidGrant = (description: string) => new OAuthError("invalid_grant", { description });

/** Rotates a refresh token: the old one is spent, a new pair is issued in the same grant, with the same scope. */
export const refreshToken: Grant = {
  confidentialOnly: false,
  async exchange(form, client, context) {
    const token = form.get("refresh_token");
    if (token === undefined) {
      throw new OAuthError("invalid_request", { description: "The refresh_token parameter is required" });
    }
    const { storage } = context;
    const now = context.clock();
    const hash = sha256(token);
    const record = await storage.findRefreshToken(hash, now);
    if (!record) throw invalidGrant("The refresh token is invalid, expired or revoked");
    if (record.client_id !== client.client_id) throw invalidGrant("The refresh token was issued to another client");
    if (record.rotated_at !== undefined) {
      // RFC 9700 §4.14.2: reuse of a rotated refresh token means one of two parties stole it; revoke the grant.
      await storage.revokeGrant(record.grant_id);
      throw invalidGrant("The refresh token was already used");
    }
    const scope = form.get("scope");
    // RFC 6749 §6: the scope may narrow, never widen; with one scope per token, it may only repeat.
    if (scope !== undefined && scope !== record.scope) {
      throw new OAuthError("invalid_scope", { description: "A refresh cannot change the scope" });
    }
    if (!client.scopes.includes(record.scope)) {
      throw new OAuthError("invalid_scope", { description: "The scope is no longer allowed for this client" });
    }

    const { response, records } = mintTokens({
      client_id: client.client_id,
      user_id: record.user_id,
      scope: record.scope,
      grant_id: record.grant_id,
      // The grant's lifetime is fixed at authorization: rotation does not extend it.
      refresh_expires_at: record.expires_at,
    }, context, now);
    if (!(await storage.rotateRefreshToken(hash, records, now))) {
      await storage.revokeGrant(record.grant_id);
      throw invalidGrant("The refresh token was already used");
    }
    return response;
  },
};
