/**
 * Trusted issuers: the identity providers and workload platforms whose signed JWTs this server accepts, at the
 * jwt-bearer grant (RFC 7523 §2.1) and as token-exchange subjects and actors (RFC 8693). Two kinds:
 * - `id-jag`: an Identity Assertion JWT Authorization Grant (draft-ietf-oauth-identity-assertion-authz-grant
 *   §3, §4.4): `typ: oauth-id-jag+jwt`, `aud` this issuer alone, `client_id` the authenticated client, `jti` used
 *   once, the user linked by the `linkUser` hook. MCP Enterprise-Managed Authorization.
 * - `workload`: a platform's JWT for a workload (a Kubernetes service account token, a SPIFFE JWT-SVID, a cloud
 *   identity token; MCP SEP-1933): `sub` is the workload, `aud` one of an allow-list. Such a token is a reusable
 *   credential on its platform (a pod presents its token until the platform rotates it), so its `jti` is not
 *   spent: its short lifetime, bounded here, is what limits a stolen one.
 *
 * @module
 */
import type { ClientRecord, Storage } from "../storage/types.ts";
import type { JwtClaims } from "../jose/jwt.ts";
import { AssertionRefused, spendJti, unverifiedClaims, verifyAssertion } from "../jwt_assertion.ts";
import { canonicalResource } from "../resource_uri.ts";
import { OAuthError } from "../errors.ts";
import { clientAllows, knownScope, parseScope, type ScopeRules } from "../scope.ts";
import type { KeySets } from "./private_key_jwt.ts";
import type { ResourceIndicators } from "./resource_indicators.ts";

/** The kinds of trusted issuer. */
export type IssuerKind = "id-jag" | "workload";

/** A trusted issuer, as the options give it (`trustedIssuers`; config `trusted_issuers`). */
export interface TrustedIssuerOptions {
  /** The issuer identifier, compared exactly with the JWTs' `iss`. */
  issuer: string;
  /** Where its public keys are published; fetched as the operator gave it (loopback included). */
  jwksUri?: string;
  /** Its public keys, inline; exactly one of `jwksUri` and `jwks`. */
  jwks?: { keys: Record<string, unknown>[] };
  /** `"id-jag"`: identity assertions about users; `"workload"`: platform tokens of workloads. */
  kind: IssuerKind;
  /** The clients that may present its JWTs. */
  clients: string[];
  /** The most its JWTs may be granted: a token's scope is within these, the client's, and the JWT's own. */
  scopes: string[];
  /**
   * Workloads: the `aud` values accepted (one must be present). Default: this server's issuer identifier and the
   * URL the JWT is sent to. Identity assertions always name this server's issuer alone.
   */
  audiences?: string[];
}

/** What the `linkUser` hook is told: a verified identity assertion. */
export interface LinkedIdentity {
  /** The trusted issuer. */
  issuer: string;
  /** The user's identifier at the issuer (`sub`). */
  subject: string;
  /** The `email` claim, when the assertion has one and does not say it is unverified. */
  email?: string;
  /** Every claim of the assertion, verified. */
  claims: JwtClaims;
}

/**
 * Links the user of an identity assertion to a user of this server: the user id to issue the token for, or
 * null when there is none (the request is then refused with `invalid_grant`).
 */
export type LinkUser = (identity: LinkedIdentity) => string | null | undefined | Promise<string | null | undefined>;

/** A trusted issuer, resolved. */
export interface TrustedIssuer {
  readonly issuer: string;
  readonly kind: IssuerKind;
  readonly jwksUri: string | undefined;
  readonly jwks: unknown;
  readonly clients: ReadonlySet<string>;
  readonly scopes: readonly string[];
  readonly audiences: readonly string[] | undefined;
}

/** The trusted issuers of one server, and how users are linked. */
export interface TrustedIssuers {
  readonly byIssuer: ReadonlyMap<string, TrustedIssuer>;
  readonly linkUser: LinkUser | undefined;
}

/** A verified JWT of a trusted issuer, and whom it is for: a user of this server, or the workload. */
export interface TrustedAssertion {
  readonly issuer: TrustedIssuer;
  readonly claims: JwtClaims;
  readonly subject: string;
}

/** An ID-JAG lives minutes; an hour is far beyond any IdP's and bounds how long its spent jti is kept. */
const MAX_ID_JAG_LIFETIME = 3600;
/** A workload token may be reused, so it must be short-lived: a day is the longest a platform issues by default. */
const MAX_WORKLOAD_LIFETIME = 86_400;

/** The trusted issuer a JWT names in its `iss`, read unverified only to find the keys; throws `unknown_issuer`. */
export function issuerOf(token: string, trusted: TrustedIssuers | null): TrustedIssuer {
  const iss = unverifiedClaims(token)?.iss;
  const found = typeof iss === "string" ? trusted?.byIssuer.get(iss) : undefined;
  if (found === undefined) throw new AssertionRefused("unknown_issuer", "The assertion's issuer is not trusted");
  return found;
}

/** What verifying a trusted JWT needs of the server. */
export interface TrustContext {
  readonly trusted: TrustedIssuers;
  readonly keySets: KeySets;
  /** This server's issuer identifier. */
  readonly serverIssuer: string;
  /** The absolute URL the JWT was sent to (a workload's default audience beside the issuer). */
  readonly endpointUrl: string;
  readonly now: number;
}

/**
 * Verifies a JWT of `issuer` presented by `client` under its kind's rules, and links its subject (an ID-JAG's
 * user through `linkUser`; a workload is its `sub`). Does not spend the `jti`: see {@link spendAssertion}.
 * Throws {@link AssertionRefused}.
 */
export async function verifyTrusted(token: string, issuer: TrustedIssuer, client: ClientRecord, context: TrustContext): Promise<TrustedAssertion> {
  if (!issuer.clients.has(client.client_id)) throw new AssertionRefused("client_mismatch", "The issuer is not trusted for this client");
  const key = issuer.jwks !== undefined ? context.keySets.inline(issuer.jwks) : context.keySets.remote(issuer.jwksUri!, { trusted: true });
  const idJag = issuer.kind === "id-jag";
  const claims = await verifyAssertion(token, {
    key,
    // draft-ietf-oauth-identity-assertion-authz-grant §4.4.1; a workload token has no type, or a generic one.
    typ: idJag ? ["oauth-id-jag+jwt"] : [null, "jwt", "jose"],
    issuer: issuer.issuer,
    // §4.4.1: aud is this server's issuer identifier, a string or an array of exactly that one element.
    audiences: idJag ? [context.serverIssuer] : issuer.audiences ?? [context.serverIssuer, context.endpointUrl],
    singleAudience: idJag,
    maxLifetime: idJag ? MAX_ID_JAG_LIFETIME : MAX_WORKLOAD_LIFETIME,
    required: idJag ? ["sub", "aud", "client_id", "jti", "iat"] : ["sub", "aud"],
    now: context.now,
  });
  // The draft §3's claims have types: a scope that is not a string is a malformed grant, not "no scope".
  if (claims.scope !== undefined && typeof claims.scope !== "string") throw new AssertionRefused("claims", "The assertion's scope is malformed");
  if (claims.auth_time !== undefined && typeof claims.auth_time !== "number") throw new AssertionRefused("claims", "The assertion's auth_time is malformed");
  if (!idJag) return { issuer, claims, subject: claims.sub! };
  // §4.4.1: the client_id claim identifies the same client as the request's authentication.
  if (claims.client_id !== client.client_id) throw new AssertionRefused("client_mismatch", "The assertion was issued for another client");
  const email = typeof claims.email === "string" && claims.email_verified !== false ? claims.email : undefined;
  const identity: LinkedIdentity = { issuer: issuer.issuer, subject: claims.sub!, claims, ...(email === undefined ? {} : { email }) };
  const user = context.trusted.linkUser === undefined ? null : await context.trusted.linkUser(identity);
  if (typeof user !== "string" || user === "") throw new AssertionRefused("unknown_user", "No user of this server is linked to the assertion");
  return { issuer, claims, subject: user };
}

/** Spends a verified JWT's `jti` where its kind is single-use (an ID-JAG); resolves false for a replay. */
export async function spendAssertion(verified: TrustedAssertion, storage: Pick<Storage, "markOnce">, now: number): Promise<boolean> {
  if (verified.issuer.kind !== "id-jag") return true;
  return spendJti(storage, "id_jag", verified.issuer.issuer, verified.claims, now);
}

const invalidScope = (description: string) => new OAuthError("invalid_scope", { description });
const invalidTarget = (description: string) => new OAuthError("invalid_target", { description });

/**
 * The scope to grant, within `ceiling` (the scopes the presented credential may carry) and what the client may
 * have. A requested scope (or the client's default) must fit; without either, the JWT's own `scope` claim, then
 * the whole ceiling, is asked for. Under the `single` policy one scope is granted; under `multiple` a request is
 * narrowed, as elsewhere, and answered with what was granted. Throws `invalid_scope`.
 */
export function grantedScope(
  requested: string | undefined,
  claimed: string | undefined,
  ceiling: readonly string[],
  client: Pick<ClientRecord, "scopes" | "grant_types" | "default_scope">,
  rules: ScopeRules,
): string {
  const allowed = (s: string) => ceiling.includes(s) && knownScope(s, rules) && clientAllows(client, s, rules.offlineAccess);
  const asked = requested ?? client.default_scope;
  if (asked === undefined) {
    const offered = (claimed?.split(" ") ?? ceiling).filter(allowed);
    if (offered.length === 0) throw invalidScope("No scope can be granted for this credential");
    if (rules.policy === "single" && offered.length > 1) throw invalidScope("Exactly one scope per request is allowed: name it");
    return offered.join(" ");
  }
  const tokens = parseScope(asked, rules.policy);
  if (!tokens.every((s) => knownScope(s, rules))) throw invalidScope("The scope names a scope this server does not know");
  const granted = tokens.filter(allowed);
  if (rules.policy === "single" ? granted.length !== 1 : granted.length === 0) throw invalidScope("The scope is wider than this credential allows");
  return granted.join(" ");
}

/**
 * The audience to bind (RFC 8707): the one `resource` asked for, which must be among `bound` when the credential
 * names resources; else the credential's own resources this server knows. Throws `invalid_target` for a
 * resource this server does not know, or outside the credential's.
 */
export function grantedResource(
  requested: string | undefined,
  bound: readonly string[] | undefined,
  state: ResourceIndicators | null,
): string[] | undefined {
  if (bound !== undefined && state === null) throw invalidTarget("This server binds tokens to no resource");
  if (state === null) return undefined;
  if (requested !== undefined) {
    const resource = canonicalResource(requested);
    if (resource === null || !state.resources.includes(resource)) throw invalidTarget("The resource is not known to this server");
    if (bound !== undefined && !bound.includes(resource)) throw invalidTarget("The resource is not one the credential names");
    return [resource];
  }
  if (bound === undefined) return undefined;
  const known = bound.filter((r) => state.resources.includes(r));
  if (known.length === 0) throw invalidTarget("The credential names no resource this server knows");
  return known;
}

/** A JWT's `resource` claim (a URI or a list of URIs) in canonical form, or undefined without one. */
export function claimedResources(claims: JwtClaims): string[] | undefined {
  const value = claims.resource;
  if (value === undefined) return undefined;
  const list = Array.isArray(value) ? value : [value];
  const resources = list.map((r) => (typeof r === "string" ? canonicalResource(r) : null));
  if (resources.length === 0 || resources.some((r) => r === null)) throw invalidTarget("The credential's resource claim is malformed");
  return resources as string[];
}
