/**
 * The JWT bearer grant (RFC 7523 §2.1, §3): `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` with an
 * `assertion` from a trusted issuer: an identity assertion (ID-JAG) becomes a token for the linked user, a
 * workload's platform JWT a token for the workload. Every refusal is `invalid_grant` (RFC 7521 §4.1.1), and every
 * decision an audit event. No refresh token: the client presents a fresh assertion instead (the ID-JAG draft
 * §4.4.3).
 *
 * @module
 */
import { defineGrant, type Grant } from "../core/grant.ts";
import { OAuthError } from "../errors.ts";
import { issueTokens } from "../issue_tokens.ts";
import { AssertionRefused, type AssertionFailure } from "../jwt_assertion.ts";
import { jwtAccessTokens } from "./jwt_access_tokens.ts";
import { offlineAccess } from "./offline_access.ts";
import { keySetsFeature } from "./private_key_jwt.ts";
import { profile } from "./profile.ts";
import { resourceIndicators } from "./resource_indicators.ts";
import {
  claimedResources, grantedResource, grantedScope, issuerOf, spendAssertion, type TrustedAssertion, type TrustedIssuers, verifyTrusted,
} from "./trusted_issuers.ts";

/** RFC 7523 §2.1: the grant type. */
export const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/** What the client is told for each refusal: short, and never the assertion. */
const DESCRIPTIONS: Partial<Record<AssertionFailure, string>> = {
  unknown_issuer: "The assertion's issuer is not trusted",
  client_mismatch: "The assertion is not for this client",
  unknown_user: "No user is linked to the assertion",
  replay: "The assertion was used before",
  expired: "The assertion has expired",
  typ: "The assertion is not of the expected type",
  audience: "The assertion is not for this server",
};

/** `invalid_grant` for a refused assertion. */
export function assertionGrantError(error: AssertionRefused): OAuthError {
  return new OAuthError("invalid_grant", { description: DESCRIPTIONS[error.reason] ?? "The assertion is invalid" });
}

/** The grant, over the server's trusted issuers. */
export function jwtBearerGrant(trusted: TrustedIssuers): Grant {
  return defineGrant({
    reads: ["clock", "storage", "issuer", "accessTokenTtl", "scopes"],
    uses: [keySetsFeature, profile, resourceIndicators, offlineAccess, jwtAccessTokens],
    clientFields: ["client_id", "scopes", "default_scope", "grant_types", "metadata"],
    // A workload authenticates with nothing but its platform JWT (SEP-1933: method none); an identity assertion
    // needs a confidential client, checked below.
    confidentialOnly: false,
    async exchange(exchange, form, client, view) {
      const assertion = form.get("assertion");
      if (assertion === undefined) throw new OAuthError("invalid_request", { description: "The assertion parameter is required" });
      const now = view.clock();
      const refuse = (error: AssertionRefused): OAuthError => {
        exchange.emit({ type: "assertion.refused", client_id: client.client_id, reason: error.reason });
        return assertionGrantError(error);
      };
      let verified: TrustedAssertion;
      try {
        const issuer = issuerOf(assertion, trusted);
        // The ID-JAG draft §8.1: for confidential clients only; a public client sends its users to /authorize.
        if (issuer.kind === "id-jag" && client.type !== "confidential") {
          exchange.emit({ type: "assertion.refused", client_id: client.client_id, reason: "public_client" });
          throw new OAuthError("unauthorized_client", { description: "Identity assertions need a confidential client" });
        }
        verified = await verifyTrusted(assertion, issuer, client, {
          trusted, keySets: view.features.private_key_jwt, serverIssuer: view.issuer, endpointUrl: new URL(view.issuer).origin + exchange.target, now,
        });
      } catch (error) {
        throw error instanceof AssertionRefused ? refuse(error) : error;
      }
      const { issuer, claims } = verified;
      const claimed = typeof claims.scope === "string" ? claims.scope.split(" ") : undefined;
      let scope: string;
      let resource: string[] | undefined;
      try {
        scope = grantedScope(
          form.get("scope"),
          claimed?.join(" "),
          issuer.scopes.filter((s) => claimed === undefined || claimed.includes(s)),
          client,
          { policy: view.features.profile.scopePolicy, known: view.scopes, offlineAccess: view.features.offline_access !== null },
        );
        resource = grantedResource(form.get("resource"), claimedResources(claims), view.features.resource_indicators);
      } catch (error) {
        if (error instanceof OAuthError) exchange.emit({ type: "assertion.refused", client_id: client.client_id, reason: error.code });
        throw error;
      }
      // Spent last, once everything else passed: a request refused for its scope may be retried with the same ID-JAG.
      if (!(await spendAssertion(verified, view.storage, now))) throw refuse(new AssertionRefused("replay", "The assertion was used before"));
      const act = claims.act;
      const { response, records } = await issueTokens({
        client_id: client.client_id,
        user_id: verified.subject,
        scope,
        resource,
        auth_time: typeof claims.auth_time === "number" ? claims.auth_time : undefined,
        // RFC 8693 §4.1 (and the ID-JAG's own act): who acts for the user stays visible in the token.
        act: typeof act === "object" && act !== null && !Array.isArray(act) ? act as Record<string, unknown> : undefined,
      }, client, view, now);
      await view.storage.saveTokens(records, now);
      exchange.emit({ type: "assertion.accepted", client_id: client.client_id, user_id: verified.subject, reason: issuer.kind });
      return response;
    },
  });
}
