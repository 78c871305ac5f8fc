/**
 * Token introspection (RFC 7662), for resource servers that hold confidential client credentials.
 *
 * @module
 */
import { authenticateClient, clientAuthFailed } from "../client_auth/authenticate.ts";
import { sha256 } from "../sha256.ts";
import { OAuthError } from "../errors.ts";
import { jsonResponse, type ResponseParts, type Incoming } from "../http.ts";
import type { ServerContext } from "../options.ts";
import { readPostedForm } from "./form.ts";
import { findToken } from "./lookup.ts";

/**
 * Answers `{ "active": false }` for anything not live, so nothing else about such a token leaks (§2.2), and for
 * anything the caller may not see (§2.1, RFC 7662 §4): a client sees its own tokens only, unless it is a
 * resource server registered with `introspection: "all"`; a refresh token answers to its own client alone, so a
 * thief cannot learn whether it is live without spending it.
 */
export async function introspectEndpoint(incoming: Incoming, context: ServerContext): Promise<ResponseParts> {
  const form = await readPostedForm(incoming, context);
  const { client, method } = await authenticateClient(incoming, form, context);
  if (method === "none") {
    throw clientAuthFailed("Introspection requires client authentication", context);
  }
  const token = form.get("token");
  if (token === undefined) throw new OAuthError("invalid_request", { description: "The token parameter is required" });
  const found = await findToken(sha256(token), form.get("token_type_hint"), context);
  // A rotated refresh token is dead, whatever its expiry; an access token has no rotated_at.
  const live = found !== null && (found.record as { rotated_at?: number }).rotated_at === undefined;
  const own = found?.record.client_id === client.client_id;
  const visible = live && (own || (found.kind === "access_token" && client.introspection === "all"));
  const owner = visible ? (own ? client : await context.storage.getClient(found.record.client_id)) : null;
  if (!found || !owner?.active) return jsonResponse(200, { active: false });
  const { record } = found;
  return jsonResponse(200, {
    active: true,
    scope: record.scope,
    client_id: record.client_id,
    // Stryker disable next-line ConditionalExpression: `false` gives `sub: undefined`, which JSON leaves out as it leaves out none (equivalent); `true` drops sub, killed by test/routes.test.ts
    ...(record.user_id === undefined ? {} : { sub: record.user_id }),
    // RFC 7662 §2.2: token_type is an access token type (RFC 6749 §7.1); a refresh token has none.
    ...(found.kind === "access_token" ? { token_type: "Bearer" } : {}),
    exp: Math.floor(record.expires_at / 1000),
    // RFC 7662 §2.2, RFC 8707: the audience, a string when there is one.
    ...(record.resource === undefined ? {} : {
      // Stryker disable next-line ConditionalExpression: every grant binds at most one resource (requestedResource, narrowedResource), so `true` changes nothing (equivalent); `false` is killed by test/resource_indicators.test.ts
      aud: record.resource.length === 1 ? record.resource[0] : record.resource,
    }),
    iss: context.issuer,
  });
}
