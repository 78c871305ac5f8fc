/**
 * `private_key_jwt`: the client proves itself with a JWT signed by its own private key (RFC 7523 §2.2, §3;
 * RFC 7521 §4.2; OpenID Connect Core §9). The server holds only public keys: the client's `jwks`, or those
 * published at its `jwks_uri`.
 *
 * @module
 */
import { defineClientAuth, type ClientAuthMethod, type PresentedCredentials } from "../core/client_auth.ts";
import { OAuthError } from "../errors.ts";
import { clientMetadataDocumentsFeature } from "../features/client_metadata_documents.ts";
import { keySetsFeature } from "../features/private_key_jwt.ts";
import { AssertionRefused, spendJti, unverifiedClaims, verifyAssertion } from "../jwt_assertion.ts";

/** RFC 7523 §2.2: the `client_assertion_type` of a JWT client assertion. */
export const CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/** Longest client assertion lifetime accepted, in seconds: the MCP SDK signs for 300 s, openid-client for 60 s. */
export const MAX_CLIENT_ASSERTION_LIFETIME = 600;
/**
 * The `typ`s a client assertion may carry: none (RFC 7523), `JWT` (the MCP SDK sends it), and
 * `client-authentication+jwt` (draft-ietf-oauth-rfc7523bis). Any other type is a JWT made for something else.
 */
const TYPES = [null, "jwt", "client-authentication+jwt"];

const malformed = (description: string) => new OAuthError("invalid_client", { description });

/**
 * Reads a client assertion: the client is the form's `client_id`, or, when the request names none (RFC 7521
 * §4.2 makes it optional; the MCP SDK's `PrivateKeyJwtProvider` sends none), the assertion's `sub`, read here
 * unverified only to find whose keys verify it.
 */
function read(form: Map<string, string>): PresentedCredentials | null {
  const type = form.get("client_assertion_type");
  const assertion = form.get("client_assertion");
  if (type === undefined && assertion === undefined) return null;
  if (type !== CLIENT_ASSERTION_TYPE) throw malformed("The client_assertion_type is not supported");
  if (assertion === undefined) throw malformed("The client_assertion parameter is missing");
  const subject = unverifiedClaims(assertion)?.sub;
  const clientId = form.get("client_id") ?? (typeof subject === "string" ? subject : undefined);
  if (clientId === undefined || clientId === "" || clientId.length > 255) throw malformed("The client assertion names no client");
  return { method: "private_key_jwt", client_id: clientId, proof: true, material: assertion };
}

/** The `private_key_jwt` method. */
export const privateKeyJwt: ClientAuthMethod = defineClientAuth({
  confidential: true,
  reads: ["issuer", "clock", "storage"],
  uses: [keySetsFeature, clientMetadataDocumentsFeature],
  read: (_, form) => read(form),
  async verify(presented, client, exchange, view) {
    if (client === null || client.metadata?.token_endpoint_auth_method !== "private_key_jwt") return false;
    const keys = view.features.private_key_jwt.ofClient(client, view.features.client_metadata_documents?.allowOrigins ?? []);
    if (keys === null) return false;
    const now = view.clock();
    try {
      const claims = await verifyAssertion(presented.material!, {
        key: keys,
        typ: TYPES,
        issuer: client.client_id,
        // rfc7523bis: the audience is this server's issuer identifier, and only that. The URL of the endpoint the
        // assertion is sent to (the token endpoint, as RFC 7523 §3 and OpenID Connect Core §9 tell clients to
        // name it) is accepted too: it is this server, and clients written to those texts send it. The attack the
        // draft closes needs a client that takes the endpoint from a hostile server's metadata; an assertion for
        // several audiences stays refused.
        audiences: [view.issuer, new URL(view.issuer).origin + exchange.target],
        singleAudience: true,
        maxLifetime: MAX_CLIENT_ASSERTION_LIFETIME,
        required: ["sub", "aud", "jti"],
        now,
      });
      // RFC 7523 §3 items 1-2: iss and sub are both the client_id.
      if (claims.sub !== client.client_id) throw new AssertionRefused("claims", "The assertion's sub is not the client");
      // RFC 7523 §3 item 7: one use per jti, on every instance, until the assertion could no longer pass.
      if (!(await spendJti(view.storage, "client_assertion", client.client_id, claims, now))) {
        throw new AssertionRefused("replay", "The client assertion was used before");
      }
      return true;
    } catch (error) {
      if (!(error instanceof AssertionRefused)) throw error;
      exchange.emit({ type: "client_assertion.refused", client_id: client.client_id, reason: error.reason });
      return false;
    }
  },
});
