/**
 * Token introspection (RFC 7662), for resource servers that hold confidential client credentials.
 *
 * @module
 */
import { AUTHENTICATION_READS, authenticateClient, clientAuthFailed } from "../client_auth/authenticate.ts";
import { defineEndpoint, type Endpoint } from "../core/endpoint.ts";
import { OAuthError } from "../errors.ts";
import { jsonResponse } from "../http.ts";
import { sha256 } from "../sha256.ts";
import { findToken } from "./lookup.ts";

/**
 * Answers `{ "active": false }` for anything not live, so nothing else about such a token leaks (§2.2), and for
 * anything the caller may not see (§2.1, RFC 7662 §4): a client sees its own tokens only, unless it is a
 * resource server registered with `introspection: "all"`; a refresh token answers to its own client alone, so a
 * thief cannot learn whether it is live without spending it.
 */
export const introspectEndpoint: Endpoint = defineEndpoint({
  name: "introspect",
  route: "/introspect",
  page: false,
  cors: true,
  reads: AUTHENTICATION_READS,
  methods: {
    async POST(exchange, view) {
      const form = await exchange.form();
      const { client, method } = await authenticateClient(exchange, form, view);
      if (!view.clientAuth.get(method)!.confidential) {
        throw clientAuthFailed("Introspection requires client authentication", view.issuer);
      }
      const token = form.get("token");
      if (token === undefined) throw new OAuthError("invalid_request", { description: "The token parameter is required" });
      const found = await findToken(sha256(token), form.get("token_type_hint"), view.storage, view.clock());
      // A rotated refresh token is dead, whatever its expiry; an access token has no rotated_at.
      const live = found !== null && (found.record as { rotated_at?: number }).rotated_at === undefined;
      const own = found?.record.client_id === client.client_id;
      const visible = live && (own || (found.kind === "access_token" && client.introspection === "all"));
      const owner = visible ? (own ? client : await view.storage.getClient(found.record.client_id)) : null;
      if (!found || !owner?.active) return jsonResponse(200, { active: false });
      const { record } = found;
      return jsonResponse(200, {
        active: true,
        scope: record.scope,
        client_id: record.client_id,
        ...(record.user_id === undefined ? {} : { sub: record.user_id }),
        // RFC 7662 §2.2: token_type is an access token type (RFC 6749 §7.1); a refresh token has none.
        ...(found.kind === "access_token" ? { token_type: "Bearer" } : {}),
        exp: Math.floor(record.expires_at / 1000),
        // RFC 7662 §2.2, RFC 8707: the audience, a string when there is one.
        ...(record.resource === undefined ? {} : { aud: record.resource.length === 1 ? record.resource[0] : record.resource }),
        iss: view.issuer,
        // RFC 8693 §4.1, §2.2: the actor of a delegation, as in the JWT.
        ...(record.act === undefined ? {} : { act: record.act }),
      });
    },
  },
});
