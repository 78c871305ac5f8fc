/**
 * Token revocation (RFC 7009).
 *
 * @module
 */
import { AUTHENTICATION_READS, authenticateClient } from "../client_auth/authenticate.ts";
import { defineEndpoint, type Endpoint } from "../core/endpoint.ts";
import { OAuthError } from "../errors.ts";
import { jsonTextResponse } from "../http.ts";
import { sha256 } from "../sha256.ts";
import { findToken } from "./lookup.ts";

/**
 * Revokes a refresh token (and with it the whole grant, as RFC 7009 §2.1 recommends) or an access token.
 * Answers 200 with `{}` as `application/json`, the same for tokens that are unknown or expired, so that the
 * endpoint tells no one whether a token exists (RFC 7009 §2.2). RFC 7009 lets clients ignore the body, but
 * they read it: simple-oauth2 refuses any answer that is not JSON, and @badgateway/oauth2-client parses any
 * JSON-labelled body, so an empty one fails it; `{}` is what both (and openid-client, oauth4webapi) accept. A live
 * token of another client is refused with `unauthorized_client`, as RFC 7009 §2.1 requires; only that
 * client's own credentials get this far, so it learns nothing it could not already use.
 */
export const revokeEndpoint: Endpoint = defineEndpoint({
  name: "revoke",
  route: "/revoke",
  page: false,
  cors: true,
  reads: AUTHENTICATION_READS,
  methods: {
    async POST(exchange, view) {
      const form = await exchange.form();
      const { client } = await authenticateClient(exchange, form, view);
      const token = form.get("token");
      if (token === undefined) throw new OAuthError("invalid_request", { description: "The token parameter is required" });
      const found = await findToken(sha256(token), form.get("token_type_hint"), view.storage, view.clock());
      if (found && found.record.client_id !== client.client_id) {
        throw new OAuthError("unauthorized_client", { description: "The token was not issued to this client" });
      }
      if (found?.kind === "refresh_token") await view.storage.revokeGrant(found.record.grant_id);
      else if (found) await view.storage.revokeAccessToken(found.record.hash);
      if (found) {
        const { record } = found;
        exchange.emit({ type: "token.revoked", client_id: client.client_id, user_id: record.user_id, grant_id: record.grant_id, reason: found.kind });
      }
      return jsonTextResponse(200, "{}");
    },
  },
});
