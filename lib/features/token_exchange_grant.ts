/**
 * The token exchange grant (RFC 8693 §2): a client trades a subject token (one of this server's access tokens,
 * opaque or JWT, or a JWT of a trusted issuer) for an access token of its own, for the audience it names and
 * within the subject token's scope. With an `actor_token` the new token is a delegation, and names the actor in
 * `act` (§4.1), nested over the subject token's own actor (a chain of delegations). A subject or actor token that
 * is invalid for any reason, or unacceptable by policy, is `invalid_request` (§2.2.2); a target this server
 * cannot issue for is `invalid_target`; a wider scope is `invalid_scope` (RFC 6749 §5.2).
 *
 * @module
 */
import type { Exchange } from "../core/exchange.ts";
import { defineGrant, type Grant } from "../core/grant.ts";
import { OAuthError } from "../errors.ts";
import { issueTokens } from "../issue_tokens.ts";
import { AssertionRefused, unverifiedClaims } from "../jwt_assertion.ts";
import { sha256 } from "../sha256.ts";
import type { AccessTokenRecord, ClientRecord } from "../storage/types.ts";
import { jwtAccessTokens } from "./jwt_access_tokens.ts";
import { jwtBearer } from "./jwt_bearer.ts";
import { offlineAccess } from "./offline_access.ts";
import { keySetsFeature } from "./private_key_jwt.ts";
import { profile } from "./profile.ts";
import { resourceIndicators } from "./resource_indicators.ts";
import { claimedResources, grantedResource, grantedScope, issuerOf, spendAssertion, type TrustContext, type TrustedAssertion, verifyTrusted } from "./trusted_issuers.ts";

/** RFC 8693 §2.1: the grant type. */
export const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
/** RFC 8693 §3: the token types this server reads and issues. */
export const TOKEN_TYPE = { access_token: "urn:ietf:params:oauth:token-type:access_token", jwt: "urn:ietf:params:oauth:token-type:jwt" } as const;

/** A party of an exchange (its subject or actor), as the policy hook sees it. */
export interface ExchangeParty {
  /** Who issued its token: this server's issuer, or a trusted issuer's. */
  issuer: string;
  /** Whom the token is for: a user of this server, a workload, or (a client_credentials token) the client. */
  subject: string;
  /** The client the token was issued to (this server's tokens only). */
  client_id?: string;
  /** The token's scope, space-delimited. */
  scope: string;
  /** The claims of a trusted issuer's JWT. */
  claims?: Readonly<Record<string, unknown>>;
}

/** What the policy hook decides on. */
export interface ExchangeRequest {
  /** The authenticated client that asks. */
  client: Readonly<ClientRecord>;
  /** Whose token is exchanged: the new token is for this subject. */
  subject: ExchangeParty;
  /** The actor of a delegation; absent for an impersonation. */
  actor?: ExchangeParty;
  /** The scope the new token would have. */
  scope: string;
  /** Its audience (RFC 8707), when bound. */
  resource?: readonly string[];
}

/** Decides whether a client may make this exchange; false is refused with `invalid_request` (RFC 8693 §2.2.2). */
export type ExchangePolicy = (request: ExchangeRequest) => boolean | Promise<boolean>;

/** A token resolved: this server's own record, or a trusted issuer's verified JWT. */
type Resolved =
  | { kind: "local"; record: AccessTokenRecord; party: ExchangeParty }
  | { kind: "trusted"; verified: TrustedAssertion; party: ExchangeParty };

/** The grant, with the policy that decides who may exchange what. */
export function tokenExchangeGrant(policy: ExchangePolicy): Grant {
  return defineGrant({
    reads: ["clock", "storage", "issuer", "accessTokenTtl", "scopes"],
    uses: [jwtBearer, keySetsFeature, profile, resourceIndicators, offlineAccess, jwtAccessTokens],
    clientFields: ["client_id", "scopes", "grant_types", "metadata"],
    // A delegation is asked for by a service that proves who it is (RFC 8693 §2.1 leaves it to the server).
    confidentialOnly: true,
    async exchange(exchange, form, client, view) {
      const now = view.clock();
      const refuse = (reason: string, error: OAuthError): OAuthError => {
        exchange.emit({ type: "token_exchange.refused", client_id: client.client_id, reason });
        return error;
      };
      const required = (name: string): string => {
        const value = form.get(name);
        if (value === undefined) throw refuse("malformed", new OAuthError("invalid_request", { description: `The ${name} parameter is required` }));
        return value;
      };
      const requested = form.get("requested_token_type");
      if (requested !== undefined && requested !== TOKEN_TYPE.access_token) {
        throw refuse("token_type", new OAuthError("invalid_request", { description: "This server issues access tokens only" }));
      }
      if (form.has("actor_token_type") && !form.has("actor_token")) {
        throw refuse("malformed", new OAuthError("invalid_request", { description: "actor_token_type needs an actor_token" }));
      }
      const context: TrustContext & { exchange: Exchange; client: ClientRecord } = {
        trusted: view.features.jwt_bearer ?? { byIssuer: new Map(), linkUser: undefined },
        keySets: view.features.private_key_jwt,
        serverIssuer: view.issuer,
        endpointUrl: new URL(view.issuer).origin + exchange.target,
        now,
        exchange,
        client,
      };
      const resolve = async (role: "subject" | "actor"): Promise<Resolved> => {
        const token = required(`${role}_token`);
        const type = required(`${role}_token_type`);
        try {
          return await resolveToken(token, type, view, context);
        } catch (error) {
          if (error instanceof AssertionRefused) throw refuse(`${role}_${error.reason}`, unacceptable(`The ${role} token is not accepted`));
          if (error instanceof OAuthError) throw refuse(`${role}_invalid`, error);
          throw error;
        }
      };
      const subject = await resolve("subject");
      const actor = form.has("actor_token") ? await resolve("actor") : undefined;

      let scope: string;
      let resource: string[] | undefined;
      try {
        const ceiling = subject.party.scope.split(" ");
        const rules = { policy: view.features.profile.scopePolicy, known: view.scopes, offlineAccess: view.features.offline_access !== null };
        // Only ever narrower than the subject token (RFC 8693 §2.1 "scope"): a wider request is refused, never narrowed.
        const asked = form.get("scope");
        if (asked !== undefined && !asked.split(" ").every((s) => ceiling.includes(s))) {
          throw new OAuthError("invalid_scope", { description: "The scope is wider than the subject token's" });
        }
        // Without a scope asked for, the subject's (within the client's): not the client's default, which may be wider.
        scope = grantedScope(asked, undefined, ceiling, { scopes: client.scopes, grant_types: client.grant_types }, rules);
        const audience = form.get("audience");
        const target = form.get("resource") ?? audience;
        if (audience !== undefined && target !== audience) throw new OAuthError("invalid_target", { description: "resource and audience name different targets" });
        const bound = subject.kind === "local" ? subject.record.resource : claimedResources(subject.verified.claims);
        resource = grantedResource(target, target === undefined ? bound : undefined, view.features.resource_indicators);
      } catch (error) {
        if (error instanceof OAuthError) throw refuse(error.code === "invalid_scope" ? "scope" : "target", error);
        throw error;
      }
      const request: ExchangeRequest = { client, subject: subject.party, scope, ...(actor ? { actor: actor.party } : {}), ...(resource ? { resource } : {}) };
      if (!(await policy(request))) throw refuse("policy", unacceptable("This client may not exchange this token"));
      for (const party of [subject, actor]) {
        if (party?.kind === "trusted" && !(await spendAssertion(party.verified, view.storage, now))) {
          throw refuse("replay", unacceptable("The token was used before"));
        }
      }
      const prior = subject.kind === "local" ? subject.record.act : actOf(subject.verified.claims);
      const act = actor === undefined ? prior : { ...actorClaim(actor), ...(prior === undefined ? {} : { act: prior }) };
      const local = subject.kind === "local" ? subject.record : undefined;
      const { response, records } = await issueTokens({
        client_id: client.client_id,
        user_id: local ? local.user_id : subject.party.subject,
        scope,
        resource,
        // The subject's grant: revoking it (the user's "connected apps", a refresh-token reuse) revokes this too.
        grant_id: local?.grant_id,
        auth_time: local?.auth_time,
        act,
      }, client, view, now);
      await view.storage.saveTokens(records, now);
      exchange.emit({ type: "token.exchanged", client_id: client.client_id, user_id: records.access.user_id, grant_id: local?.grant_id, reason: actor ? "delegation" : "impersonation" });
      return { ...response, issued_token_type: TOKEN_TYPE.access_token };
    },
  });
}

/** RFC 8693 §2.2.2: a subject or actor token invalid for any reason, or unacceptable by policy. */
const unacceptable = (description: string): OAuthError => new OAuthError("invalid_request", { description });

/** What resolving a token reads of the grant's view. */
interface ResolveView {
  readonly issuer: string;
  readonly clock: () => number;
  readonly storage: {
    findAccessToken(hash: string, now: number): Promise<AccessTokenRecord | null>;
    getClient(id: string): Promise<ClientRecord | null>;
  };
}

/**
 * A subject or actor token: one of this server's access tokens (by its hash: a revoked or expired one, or one
 * whose client was paused, is not found), or a trusted issuer's JWT, verified under its kind's rules.
 */
async function resolveToken(token: string, type: string, view: ResolveView, context: TrustContext & { client: ClientRecord }): Promise<Resolved> {
  if (type !== TOKEN_TYPE.access_token && type !== TOKEN_TYPE.jwt) {
    throw new OAuthError("invalid_request", { description: "The token type is not supported" });
  }
  const iss = type === TOKEN_TYPE.jwt ? unverifiedClaims(token)?.iss : undefined;
  if (type === TOKEN_TYPE.access_token || iss === view.issuer) {
    const record = await view.storage.findAccessToken(sha256(token), context.now);
    const owner = record && await view.storage.getClient(record.client_id);
    if (!record || !owner?.active) throw unacceptable("The token is invalid, expired or revoked");
    return {
      kind: "local",
      record,
      party: { issuer: view.issuer, subject: record.user_id ?? record.client_id, client_id: record.client_id, scope: record.scope },
    };
  }
  const verified = await verifyTrusted(token, issuerOf(token, context.trusted), context.client, context);
  const claimed = typeof verified.claims.scope === "string" ? verified.claims.scope.split(" ") : undefined;
  const scope = verified.issuer.scopes.filter((s) => claimed === undefined || claimed.includes(s)).join(" ");
  return { kind: "trusted", verified, party: { issuer: verified.issuer.issuer, subject: verified.subject, scope, claims: verified.claims } };
}

/** The `act` claim naming an actor (RFC 8693 §4.1): its subject, and its issuer when that is not this server. */
function actorClaim(actor: Resolved): Record<string, unknown> {
  return actor.kind === "local" ? { sub: actor.party.subject } : { sub: actor.verified.claims.sub, iss: actor.party.issuer };
}

/** A trusted JWT's own `act`, when it is an object. */
function actOf(claims: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
  const act = claims.act;
  return typeof act === "object" && act !== null && !Array.isArray(act) ? act as Record<string, unknown> : undefined;
}
