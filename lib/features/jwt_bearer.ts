/**
 * Trusted issuers and the JWT bearer grant (RFC 7523 §2.1): identity assertions (ID-JAG, MCP Enterprise-Managed
 * Authorization) and workload JWTs (MCP SEP-1933) exchanged for access tokens. On when `trustedIssuers` lists
 * at least one issuer; the grant then appears in the metadata, and with an `id-jag` issuer so does the ID-JAG
 * profile (`authorization_grant_profiles_supported`, the draft's §7.2). Token exchange accepts the same issuers'
 * JWTs as subjects and actors.
 *
 * @module
 */
import { JWK_SET_TYPE, jwksProblem, jwksUriProblem } from "../core/client_keys.ts";
import { defineFeature, type Feature } from "../core/feature.ts";
import { optionError, type OptionSpec } from "../core/option_table.ts";
import { JWT_BEARER, jwtBearerGrant } from "./jwt_bearer_grant.ts";
import type { LinkUser, TrustedIssuer, TrustedIssuerOptions, TrustedIssuers } from "./trusted_issuers.ts";

export { JWT_BEARER } from "./jwt_bearer_grant.ts";
export type { IssuerKind, LinkedIdentity, LinkUser, TrustedIssuerOptions } from "./trusted_issuers.ts";

/** The options this feature adds. */
export interface JwtBearerOptions {
  /**
   * The identity providers (`kind: "id-jag"`) and workload platforms (`kind: "workload"`) whose signed JWTs the
   * jwt-bearer grant and token exchange accept. Default none: no jwt-bearer grant.
   */
  trustedIssuers?: TrustedIssuerOptions[];
  /**
   * Links the user of an identity assertion (ID-JAG) to a user of this server: return the user id, or null to
   * refuse. Without it every identity assertion is refused (`invalid_grant`); the reference server links by
   * `email` against its users.
   */
  linkUser?: LinkUser;
}

/** The ID-JAG profile's identifier (draft-ietf-oauth-identity-assertion-authz-grant §7.2). */
export const ID_JAG_PROFILE = "urn:ietf:params:oauth:grant-profile:id-jag";

const strings = (key: string, doc: string, minItems = 0): OptionSpec => ({ key, type: { kind: "list", items: { kind: "string" }, minItems }, doc });
const fn = { kind: "value", expect: "a function", test: (v: unknown) => typeof v === "function" } as const;

/** The trusted issuers from the options, checked; null without any. */
function resolve(options: JwtBearerOptions, scopes: ReadonlyMap<string, string>): TrustedIssuers | null {
  const list = options.trustedIssuers ?? [];
  if (list.length === 0) return null;
  const byIssuer = new Map<string, TrustedIssuer>();
  for (const [i, entry] of list.entries()) {
    const at = (field: string) => `trustedIssuers[${i}].${field}`;
    if (!URL.canParse(entry.issuer)) throw optionError(at("issuer"), "must be an absolute URL (the issuer's `iss`)");
    if (byIssuer.has(entry.issuer)) throw optionError(at("issuer"), `names "${entry.issuer}" a second time`);
    if ((entry.jwks === undefined) === (entry.jwksUri === undefined)) throw optionError(at("jwks"), "or jwksUri: give exactly one");
    if (entry.jwks !== undefined) {
      const problem = jwksProblem(entry.jwks);
      if (problem !== undefined) throw optionError(at("jwks"), problem);
    }
    // The operator's own URL: fetched as it is, http and loopback included, as `allowOrigins` is for documents.
    const uriProblem = entry.jwksUri === undefined ? undefined : jwksUriProblem(entry.jwksUri, false);
    if (uriProblem !== undefined) throw optionError(at("jwksUri"), uriProblem);
    const unknown = entry.scopes.find((s) => !scopes.has(s));
    if (unknown !== undefined) throw optionError(at("scopes"), `names "${unknown}", which is not one of the server's scopes`);
    if (entry.kind === "id-jag" && entry.audiences !== undefined) {
      throw optionError(at("audiences"), "is for workload issuers: an identity assertion names this server's issuer alone");
    }
    byIssuer.set(entry.issuer, {
      issuer: entry.issuer,
      kind: entry.kind,
      jwksUri: entry.jwksUri,
      jwks: entry.jwks === undefined ? undefined : structuredClone(entry.jwks),
      clients: new Set(entry.clients),
      scopes: [...entry.scopes],
      audiences: entry.audiences === undefined ? undefined : [...entry.audiences],
    });
  }
  return { byIssuer, linkUser: options.linkUser };
}

/** The trusted issuers feature, with its jwt-bearer grant. */
export const jwtBearer: Feature<"jwt_bearer", TrustedIssuers | null, JwtBearerOptions> = defineFeature({
  name: "jwt_bearer",
  doc: "Trusted issuers' identity assertions (ID-JAG) and workload JWTs at the jwt-bearer grant (RFC 7523).",
  options: [
    {
      key: "trustedIssuers",
      type: {
        kind: "list",
        items: {
          kind: "object",
          required: ["issuer", "kind", "clients", "scopes"],
          fields: [
            { key: "issuer", type: { kind: "string" }, doc: "The issuer identifier, compared exactly with iss." },
            { key: "jwksUri", type: { kind: "string" }, doc: "Where its public keys are published (fetched as given, loopback included)." },
            { key: "jwks", type: JWK_SET_TYPE, doc: "Its public keys, inline; exactly one of jwks_uri and jwks." },
            { key: "kind", type: { kind: "string", enum: ["id-jag", "workload"] }, doc: '"id-jag" (identity assertions of users) or "workload" (platform JWTs).' },
            strings("clients", "The client_ids that may present its JWTs.", 1),
            strings("scopes", "The most its JWTs are granted (within the client's scopes and the JWT's own).", 1),
            strings("audiences", "Workloads: the aud values accepted; default the issuer and the token endpoint URL.", 1),
          ],
        },
      },
      doc: "Identity providers and workload platforms whose signed JWTs the jwt-bearer grant and token exchange accept.",
    },
    { key: "linkUser", type: fn, doc: "Links an identity assertion's user to a user id of this server, or null.", config: null },
  ],
  reads: ["scopes"],
  setup: (options, core): TrustedIssuers | null => resolve(options, core.scopes),
  grants: (state) => ({ [JWT_BEARER]: jwtBearerGrant(state) }),
  metadata: (state) => ([...state.byIssuer.values()].some((i) => i.kind === "id-jag") ? { authorization_grant_profiles_supported: [ID_JAG_PROFILE] } : {}),
});
