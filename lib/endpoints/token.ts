/**
 * The token endpoint (RFC 6749 §3.2; spec §4.2).
 *
 * @module
 */
import { authenticateClient, clientAuthFailed } from "../client_auth/authenticate.ts";
import { OAuthError } from "../errors.ts";
import { jsonTextResponse, printable, type ResponseParts, type Incoming } from "../http.ts";
import type { ServerContext } from "../options.ts";
import { tokenResponseJson } from "../tokens.ts";
import { readPostedForm } from "./form.ts";

/** Handles `POST token`: form, grant type, client authentication, then the grant itself. */
export async function tokenEndpoint(incoming: Incoming, context: ServerContext): Promise<ResponseParts> {
  const form = await readPostedForm(incoming, context);
  const grantType = form.get("grant_type");
  if (grantType === undefined) {
    throw new OAuthError("invalid_request", { description: "The grant_type parameter is required" });
  }
  const bound = context.grants.get(grantType);
  if (bound === undefined) {
    throw new OAuthError("unsupported_grant_type", { description: `The grant type ${printable(grantType)} is not supported` });
  }
  const { client, method } = await authenticateClient(incoming, form, context);
  if (bound.grant.confidentialOnly && method === "none") {
    throw clientAuthFailed("This grant requires client authentication", context);
  }
  if (!client.grant_types.includes(grantType)) {
    throw new OAuthError("unauthorized_client", { description: "The client may not use this grant type" });
  }
  return jsonTextResponse(200, tokenResponseJson(await bound.exchange(form, client, incoming)));
}
