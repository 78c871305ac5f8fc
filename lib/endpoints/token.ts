/**
 * The token endpoint (RFC 6749 §3.2; spec §4.2).
 *
 * @module
 */
import { AUTHENTICATION_READS, authenticateClient, clientAuthFailed } from "../client_auth/authenticate.ts";
import { defineEndpoint, type Endpoint } from "../core/endpoint.ts";
import { OAuthError } from "../errors.ts";
import { checkTokenProof, dpop } from "../features/dpop.ts";
import { jsonTextResponse, printable } from "../http.ts";
import { tokenResponseJson } from "../tokens.ts";

/** `POST token`: form, grant type, client authentication, then the grant itself. */
export const tokenEndpoint: Endpoint = defineEndpoint({
  name: "token",
  route: "/token",
  page: false,
  cors: true,
  reads: [...AUTHENTICATION_READS, "grants"],
  uses: [dpop],
  methods: {
    async POST(exchange, view) {
      const form = await exchange.form();
      const grantType = form.get("grant_type");
      if (grantType === undefined) {
        throw new OAuthError("invalid_request", { description: "The grant_type parameter is required" });
      }
      const bound = view.grants.get(grantType);
      if (bound === undefined) {
        throw new OAuthError("unsupported_grant_type", { description: `The grant type ${printable(grantType)} is not supported` });
      }
      const { client, method } = await authenticateClient(exchange, form, view);
      if (bound.grant.confidentialOnly && !view.clientAuth.get(method)!.confidential) {
        throw clientAuthFailed("This grant requires client authentication", view.issuer);
      }
      if (!client.grant_types.includes(grantType)) {
        throw new OAuthError("unauthorized_client", { description: "The client may not use this grant type" });
      }
      // RFC 9449 §5: the proof is checked before the grant spends anything, so a retry with a nonce finds the
      // code or refresh token as it was.
      const headers = await checkTokenProof(exchange, view.features.dpop, client, view);
      return jsonTextResponse(200, tokenResponseJson(await bound.exchange(exchange, form, client)), headers);
    },
  },
});
