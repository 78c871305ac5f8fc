/**
 * Token revocation (RFC 7009).
 *
 * @module
 */
import { audit } from "../audit.ts";
import { authenticateClient } from "../client_auth/authenticate.ts";
import { sha256 } from "../sha256.ts";
import { OAuthError } from "../errors.ts";
import type { ResponseParts, Incoming } from "../http.ts";
import type { ServerContext } from "../options.ts";
import { readPostedForm } from "./form.ts";
import { findToken } from "./lookup.ts";

/**
 * Revokes a refresh token (and with it the whole grant, as RFC 7009 §2.1 recommends) or an access token.
 * Answers 200 with an empty body (and no content type: some clients parse any JSON-labelled body) for tokens
 * that are unknown or expired, so that the endpoint tells no one whether a token exists (RFC 7009 §2.2). A live
 * token of another client is refused with `unauthorized_client`, as RFC 7009 §2.1 requires; only that
 * client's own credentials get this far, so it learns nothing it could not already use.
 */
export async function revokeEndpoint(incoming: Incoming, context: ServerContext): Promise<ResponseParts> {
  const form = await readPostedForm(incoming, context);
  const { client } = await authenticateClient(incoming, form, context);
  const token = form.get("token");
  if (token === undefined) throw new OAuthError("invalid_request", { description: "The token parameter is required" });
  const found = await findToken(sha256(token), form.get("token_type_hint"), context);
  if (found && found.record.client_id !== client.client_id) {
    throw new OAuthError("unauthorized_client", { description: "The token was not issued to this client" });
  }
  if (found?.kind === "refresh_token") await context.storage.revokeGrant(found.record.grant_id);
  else if (found) await context.storage.revokeAccessToken(found.record.hash);
  if (found) {
    const { record } = found;
    audit(context, incoming, {
      type: "token.revoked",
      client_id: client.client_id,
      // Stryker disable next-line ConditionalExpression: `false` passes `user_id: undefined`, which audit() drops as it drops none (equivalent); `true` drops a known user_id, killed by test/audit.test.ts
      ...(record.user_id === undefined ? {} : { user_id: record.user_id }),
      // Stryker disable next-line ConditionalExpression: `false` passes `grant_id: undefined`, which audit() drops as it drops none (equivalent); `true` drops a known grant_id, killed by test/audit.test.ts
      ...(record.grant_id === undefined ? {} : { grant_id: record.grant_id }),
      reason: found.kind,
    });
  }
  return { status: 200, headers: [["cache-control", "no-store"]], body: null };
}
