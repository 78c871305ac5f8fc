/**
 * The jwt-bearer grant for identity assertions and workload JWTs (RFC 7523 §2.1; the ID-JAG draft §4.4; MCP
 * Enterprise-Managed Authorization and SEP-1933), and token exchange (RFC 8693). The suite stands in for the
 * identity provider (`{identity.origin}/idp`) and the workload platform (`{identity.origin}/workload`): it signs
 * their JWTs with keys it serves itself, which the target is configured to trust.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { expectError } from "../checks.ts";
import type { CaseContext } from "../context.ts";
import { GRANT } from "../features.ts";
import type { Reply } from "../http.ts";
import { jti, nowSeconds, signWith, suiteKeys, type SuiteKeys } from "../identity.ts";
import type { IdentityTarget } from "../target.ts";
import { IDENTITY_PROFILES } from "./private_key_jwt.ts";

const ID_JAG_PROFILE = "urn:ietf:params:oauth:grant-profile:id-jag";
const TOKEN_TYPE = { access_token: "urn:ietf:params:oauth:token-type:access_token", jwt: "urn:ietf:params:oauth:token-type:jwt" } as const;
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

type Jag = NonNullable<IdentityTarget["id_jag"]>;
type Workload = NonNullable<IdentityTarget["workload"]>;
type Exchanger = NonNullable<IdentityTarget["token_exchange"]>;

async function keysOf(ctx: CaseContext): Promise<SuiteKeys> {
  const host = ctx.keyHost ?? ctx.skip("The run serves no keys: the target file names no identity.origin, or the run passed no key host");
  return suiteKeys(host);
}
const roleOf = <K extends "id_jag" | "workload" | "token_exchange">(ctx: CaseContext, key: K): NonNullable<IdentityTarget[K]> =>
  ctx.target.identity?.[key] ?? ctx.skip(`The target file names no identity.${key}`);

/** An ID-JAG for the role's client and user, from the suite's identity provider; `claims` and `header` override. */
function idJag(ctx: CaseContext, keys: SuiteKeys, role: Jag, claims: Record<string, unknown> = {}, typ = "oauth-id-jag+jwt", pair = keys.idp): Promise<string> {
  const iat = nowSeconds();
  return signWith(pair, {
    iss: `${keys.origin}/idp`, sub: `conformance-${jti()}`, aud: ctx.target.issuer, client_id: role.client_id, jti: jti(), iat, exp: iat + 300,
    email: role.email, scope: role.scope, ...claims,
  }, { typ, kid: keys.idp.publicJwk.kid! });
}

/** A workload JWT for the role's subject, from the suite's platform (no typ, no jti: a service account token's shape). */
function workloadJwt(ctx: CaseContext, keys: SuiteKeys, role: Workload, claims: Record<string, unknown> = {}, pair = keys.workload): Promise<string> {
  const iat = nowSeconds();
  return signWith(pair, { iss: `${keys.origin}/workload`, sub: role.subject, aud: ctx.target.issuer, iat, exp: iat + 600, ...claims }, { kid: keys.workload.publicJwk.kid! });
}

const jwtBearer = (ctx: CaseContext, role: { client_id: string; client_secret?: string; scope: string }, assertion: string): Promise<Reply> =>
  ctx.token({ grant_type: GRANT.jwt_bearer, assertion, scope: role.scope, ...ctx.credentials(role) });

/** The valid assertion first (a control), then the forged one, which must get invalid_grant. */
async function jagRefused(ctx: CaseContext, what: string, forge: (keys: SuiteKeys, role: Jag) => Promise<string>): Promise<void> {
  const keys = await keysOf(ctx);
  const role = roleOf(ctx, "id_jag");
  await ctx.twin(await jwtBearer(ctx, role, await idJag(ctx, keys, role)), "a valid identity assertion");
  expectError(ctx, await jwtBearer(ctx, role, await forge(keys, role)), ["invalid_grant"], what);
}
async function workloadRefused(ctx: CaseContext, what: string, forge: (keys: SuiteKeys, role: Workload) => Promise<string>): Promise<void> {
  const keys = await keysOf(ctx);
  const role = roleOf(ctx, "workload");
  await ctx.twin(await jwtBearer(ctx, role, await workloadJwt(ctx, keys, role)), "a valid workload JWT");
  expectError(ctx, await jwtBearer(ctx, role, await forge(keys, role)), ["invalid_grant"], what);
}

const jag = { area: "identity", profiles: IDENTITY_PROFILES, features: ["jwt_bearer"], needs: ["ID-JAG-TOKEN"] } as const;
const wl = { area: "identity", profiles: IDENTITY_PROFILES, features: ["jwt_bearer"], needs: ["ID-WORKLOAD-TOKEN"] } as const;
const tx = { area: "identity", profiles: IDENTITY_PROFILES, features: ["token_exchange"], needs: ["ID-TX-TOKEN"] } as const;

/** A token exchange by the role's client; `fields` add the tokens. */
const exchange = (ctx: CaseContext, role: Exchanger, fields: Record<string, string | undefined>): Promise<Reply> =>
  ctx.token({ grant_type: GRANT.token_exchange, ...ctx.credentials(role), ...fields });

/** The public client's access token, from a full code flow. */
async function subjectToken(ctx: CaseContext): Promise<string> {
  return (await ctx.tokens("public")).access_token;
}

export const cases: CaseDef[] = [
  {
    id: "ID-JAG-TOKEN",
    title: "An identity assertion (ID-JAG) from the trusted identity provider gets an access token",
    area: "identity",
    ref: "draft-ietf-oauth-identity-assertion-authz-grant §4.4; RFC 7523 §2.1; MCP Enterprise-Managed Authorization",
    level: "MUST",
    profiles: IDENTITY_PROFILES,
    features: ["jwt_bearer"],
    positive: true,
    async run(ctx) {
      const keys = await keysOf(ctx);
      const role = roleOf(ctx, "id_jag");
      await ctx.twin(await jwtBearer(ctx, role, await idJag(ctx, keys, role)), "a valid identity assertion");
    },
  },
  {
    ...jag,
    id: "ID-JAG-NO-REFRESH",
    title: "The token response to an identity assertion carries no refresh token",
    ref: "draft-ietf-oauth-identity-assertion-authz-grant §4.4.3 (SHOULD NOT return a refresh token); RFC 6749 §5.1 (refresh_token OPTIONAL)",
    level: "SHOULD",
    async run(ctx) {
      const keys = await keysOf(ctx);
      const role = roleOf(ctx, "id_jag");
      const tokens = await ctx.twin(await jwtBearer(ctx, role, await idJag(ctx, keys, role)), "a valid identity assertion");
      ctx.check(tokens.refresh_token === undefined, "A refresh token was issued: the client should present a new ID-JAG instead", tokens.reply);
    },
  },
  {
    ...jag,
    id: "ID-JAG-REPLAY",
    title: "An identity assertion already exchanged is refused (its jti is spent)",
    ref: "draft-ietf-oauth-identity-assertion-authz-grant §3.1 (jti REQUIRED); RFC 7523 §3 item 7; MCP EMA (jti replay)",
    level: "MUST",
    security: true,
    async run(ctx) {
      const keys = await keysOf(ctx);
      const role = roleOf(ctx, "id_jag");
      const assertion = await idJag(ctx, keys, role);
      await ctx.twin(await jwtBearer(ctx, role, assertion), "the first use of the assertion");
      expectError(ctx, await jwtBearer(ctx, role, assertion), ["invalid_grant"], "the same assertion again");
    },
  },
  {
    ...jag,
    id: "ID-JAG-TYP",
    title: "An assertion typed JWT, not oauth-id-jag+jwt, is refused",
    ref: "draft-ietf-oauth-identity-assertion-authz-grant §4.4.1 (validate typ); RFC 8725 §3.11",
    level: "MUST",
    security: true,
    run: (ctx) => jagRefused(ctx, "typ JWT", (keys, role) => idJag(ctx, keys, role, {}, "JWT")),
  },
  {
    ...jag,
    id: "ID-JAG-AUDIENCE",
    title: "An identity assertion for another authorization server is refused",
    ref: "draft-ietf-oauth-identity-assertion-authz-grant §4.4.1 (aud is this issuer alone, else invalid_grant); RFC 7523 §3 item 3",
    level: "MUST",
    security: true,
    async run(ctx) {
      await jagRefused(ctx, "aud another server", (keys, role) => idJag(ctx, keys, role, { aud: "https://other-as.example.com" }));
      // An array must hold exactly this issuer: a second audience could replay the assertion there.
      const keys = await keysOf(ctx);
      const role = roleOf(ctx, "id_jag");
      const two = await idJag(ctx, keys, role, { aud: [ctx.target.issuer, "https://other-as.example.com"] });
      expectError(ctx, await jwtBearer(ctx, role, two), ["invalid_grant"], "aud this server and another");
    },
  },
  {
    ...jag,
    id: "ID-JAG-CLIENT",
    title: "An identity assertion issued for another client is refused",
    ref: "draft-ietf-oauth-identity-assertion-authz-grant §4.4.1 (client_id is the authenticated client, else invalid_grant); RFC 6749 §5.2",
    level: "MUST",
    security: true,
    run: (ctx) => jagRefused(ctx, "client_id another client", (keys, role) => idJag(ctx, keys, role, { client_id: `${role.client_id}-other` })),
  },
  {
    ...jag,
    id: "ID-JAG-EXPIRED",
    title: "An expired identity assertion is refused",
    ref: "RFC 7523 §3 item 4; draft-ietf-oauth-identity-assertion-authz-grant §3.1 (exp REQUIRED)",
    level: "MUST",
    run: (ctx) => jagRefused(ctx, "expired", (keys, role) => idJag(ctx, keys, role, { iat: nowSeconds() - 900, exp: nowSeconds() - 300 })),
  },
  {
    ...jag,
    id: "ID-JAG-UNTRUSTED-KEY",
    title: "An identity assertion signed by a key the identity provider never published is refused",
    ref: "RFC 7523 §3 item 9 (a valid signature by the issuer)",
    level: "MUST",
    security: true,
    run: (ctx) => jagRefused(ctx, "signed by an unpublished key", (keys, role) => idJag(ctx, keys, role, {}, undefined, keys.rogue)),
  },
  {
    ...jag,
    id: "ID-JAG-UNKNOWN-ISSUER",
    title: "An identity assertion from an issuer the server does not trust is refused",
    ref: "RFC 7523 §3 item 1 (iss identifies a trusted issuer); RFC 7521 §5.2",
    level: "MUST",
    security: true,
    run: (ctx) => jagRefused(ctx, "an untrusted issuer", (keys, role) => idJag(ctx, keys, role, { iss: `${keys.origin}/other-idp` })),
  },
  {
    ...jag,
    id: "ID-JAG-UNKNOWN-USER",
    title: "An identity assertion about a user the server cannot link is refused",
    ref: "draft-ietf-oauth-identity-assertion-authz-grant §3.1 (sub, email); RFC 7521 §5.2 (the subject must identify a known principal)",
    level: "SHOULD",
    run: (ctx) => jagRefused(ctx, "an unknown user", (keys, role) => idJag(ctx, keys, role, { email: `nobody-${jti()}@invalid.example` })),
  },
  {
    ...jag,
    id: "ID-JAG-PROFILE",
    title: "The metadata announces the ID-JAG grant profile",
    ref: "draft-ietf-oauth-identity-assertion-authz-grant §7.2 (authorization_grant_profiles_supported); RFC 8414 §2",
    level: "SHOULD",
    needs: ["META-DISCOVERY"],
    async run(ctx) {
      roleOf(ctx, "id_jag");
      const reply = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
      const profiles = isObj(reply.json) ? reply.json.authorization_grant_profiles_supported : undefined;
      ctx.check(Array.isArray(profiles) && profiles.includes(ID_JAG_PROFILE), `authorization_grant_profiles_supported does not list ${ID_JAG_PROFILE}`, reply);
    },
  },
  {
    id: "ID-WORKLOAD-TOKEN",
    title: "A workload JWT from the trusted platform gets an access token",
    area: "identity",
    ref: "RFC 7523 §2.1, §3; MCP SEP-1933 (workload identity federation)",
    level: "MUST",
    profiles: IDENTITY_PROFILES,
    features: ["jwt_bearer"],
    positive: true,
    async run(ctx) {
      const keys = await keysOf(ctx);
      const role = roleOf(ctx, "workload");
      await ctx.twin(await jwtBearer(ctx, role, await workloadJwt(ctx, keys, role)), "a valid workload JWT");
    },
  },
  {
    ...wl,
    id: "ID-WORKLOAD-AUDIENCE",
    title: "A workload JWT for another audience is refused",
    ref: "RFC 7523 §3 item 3 (aud); MCP SEP-1933",
    level: "MUST",
    security: true,
    run: (ctx) => workloadRefused(ctx, "aud another service", (keys, role) => workloadJwt(ctx, keys, role, { aud: "https://vault.example.com" })),
  },
  {
    ...wl,
    id: "ID-WORKLOAD-EXPIRED",
    title: "An expired workload JWT is refused",
    ref: "RFC 7523 §3 item 4 (exp)",
    level: "MUST",
    run: (ctx) => workloadRefused(ctx, "expired", (keys, role) => workloadJwt(ctx, keys, role, { iat: nowSeconds() - 7200, exp: nowSeconds() - 3600 })),
  },
  {
    ...wl,
    id: "ID-WORKLOAD-UNTRUSTED-KEY",
    title: "A workload JWT signed by a key the platform never published is refused",
    ref: "RFC 7523 §3 item 9",
    level: "MUST",
    security: true,
    run: (ctx) => workloadRefused(ctx, "signed by an unpublished key", (keys, role) => workloadJwt(ctx, keys, role, {}, keys.rogue)),
  },
  {
    ...wl,
    id: "ID-WORKLOAD-UNKNOWN-ISSUER",
    title: "A workload JWT from a platform the server does not trust is refused",
    ref: "RFC 7523 §3 item 1",
    level: "MUST",
    security: true,
    run: (ctx) => workloadRefused(ctx, "an untrusted platform", (keys, role) => workloadJwt(ctx, keys, role, { iss: `${keys.origin}/other-platform` })),
  },
  {
    id: "ID-TX-TOKEN",
    title: "A user's access token is exchanged for one of the client's own, with issued_token_type",
    area: "identity",
    ref: "RFC 8693 §2.1, §2.2.1 (issued_token_type REQUIRED)",
    level: "MUST",
    profiles: IDENTITY_PROFILES,
    features: ["token_exchange"],
    positive: true,
    async run(ctx) {
      const role = roleOf(ctx, "token_exchange");
      const reply = await exchange(ctx, role, { subject_token: await subjectToken(ctx), subject_token_type: TOKEN_TYPE.access_token, scope: role.scope });
      const tokens = await ctx.twin(reply, "a token exchange");
      ctx.check(typeof tokens.body.issued_token_type === "string", "The response has no issued_token_type (RFC 8693 §2.2.1)", reply);
    },
  },
  {
    ...tx,
    id: "ID-TX-ACT",
    title: "A delegation (an actor_token) shows its actor as act, in the JWT or at introspection",
    ref: "RFC 8693 §4.1 (act); §2.1 (actor_token); RFC 7662 §2.2",
    level: "SHOULD",
    async run(ctx) {
      const role = roleOf(ctx, "token_exchange");
      const actor = await ctx.twin(await ctx.clientCredentials(ctx.target.clients.client_credentials), "an actor token (client_credentials)");
      const reply = await exchange(ctx, role, {
        subject_token: await subjectToken(ctx), subject_token_type: TOKEN_TYPE.access_token, scope: role.scope,
        actor_token: actor.access_token, actor_token_type: TOKEN_TYPE.access_token,
      });
      const tokens = await ctx.twin(reply, "a delegation");
      const parts = tokens.access_token.split(".");
      let act: unknown;
      if (parts.length === 3) {
        try {
          act = (JSON.parse(atob(parts[1]!.replace(/-/g, "+").replace(/_/g, "/"))) as Record<string, unknown>).act;
        } catch {
          act = undefined;
        }
      }
      if (act === undefined) {
        const meta = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
        const url = isObj(meta.json) ? meta.json.introspection_endpoint : undefined;
        if (typeof url !== "string") return ctx.skip("The token is opaque and the server has no introspection endpoint to show act");
        const credentials = Object.entries(ctx.credentials(role)).filter((e): e is [string, string] => e[1] !== undefined);
        const seen = await ctx.http.send("POST", url, { form: [["token", tokens.access_token], ...credentials], headers: { accept: "application/json" } });
        act = isObj(seen.json) ? seen.json.act : undefined;
        ctx.check(isObj(act) && typeof act.sub === "string", "Introspection of the delegated token shows no act with a sub (RFC 8693 §4.1)", seen);
        return undefined;
      }
      ctx.check(isObj(act) && typeof act.sub === "string", "The delegated JWT has no act claim with a sub (RFC 8693 §4.1)", reply);
      return undefined;
    },
  },
  {
    ...tx,
    id: "ID-TX-SCOPE-WIDER",
    title: "An exchange asking for a scope the subject token does not have is refused",
    ref: "RFC 8693 §2.1 (scope), §5 (the new token must not exceed the subject's rights); RFC 6749 §5.2 (invalid_scope)",
    level: "MUST",
    security: true,
    async run(ctx) {
      const role = roleOf(ctx, "token_exchange");
      const subject = await subjectToken(ctx);
      await ctx.twin(await exchange(ctx, role, { subject_token: subject, subject_token_type: TOKEN_TYPE.access_token, scope: role.scope }), "an exchange within the subject's scope");
      // The public client's extra scope: one its token lacks but the exchanging client may have, so that only the
      // subject token bounds it; then a scope nobody has.
      const extra = ctx.target.clients.public.extra_scope;
      for (const more of extra === undefined || extra === role.scope ? [ctx.target.forbidden_scope] : [extra, ctx.target.forbidden_scope]) {
        const wider = await exchange(ctx, role, { subject_token: subject, subject_token_type: TOKEN_TYPE.access_token, scope: `${role.scope} ${more}` });
        expectError(ctx, wider, ["invalid_scope", "invalid_request"], `a scope wider than the subject token's (${more})`);
      }
    },
  },
  {
    ...tx,
    id: "ID-TX-REVOKED",
    title: "A revoked subject token is refused",
    ref: "RFC 8693 §2.2.2 (a subject_token invalid for any reason: invalid_request); RFC 7009 §2",
    level: "MUST",
    security: true,
    features: ["token_exchange", "revocation"],
    async run(ctx) {
      const role = roleOf(ctx, "token_exchange");
      const subject = await subjectToken(ctx);
      const meta = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
      const url = ctx.target.revocation_url ?? (isObj(meta.json) && typeof meta.json.revocation_endpoint === "string" ? meta.json.revocation_endpoint : ctx.skip("No revocation endpoint"));
      const revoked = await ctx.http.send("POST", url, { form: [["token", subject], ["token_type_hint", "access_token"], ["client_id", ctx.target.clients.public.client_id]] });
      ctx.check(revoked.status === 200, `Revoking the subject token answered ${revoked.status}`, revoked);
      expectError(ctx, await exchange(ctx, role, { subject_token: subject, subject_token_type: TOKEN_TYPE.access_token, scope: role.scope }), ["invalid_request"], "a revoked subject token");
    },
  },
  {
    ...tx,
    id: "ID-TX-INVALID-SUBJECT",
    title: "A subject token the server never issued is refused with invalid_request",
    ref: "RFC 8693 §2.2.2",
    level: "MUST",
    async run(ctx) {
      const role = roleOf(ctx, "token_exchange");
      await ctx.twin(await exchange(ctx, role, { subject_token: await subjectToken(ctx), subject_token_type: TOKEN_TYPE.access_token, scope: role.scope }), "a valid exchange");
      const forged = await exchange(ctx, role, { subject_token: `forged-${jti()}`, subject_token_type: TOKEN_TYPE.access_token, scope: role.scope });
      expectError(ctx, forged, ["invalid_request"], "a made-up subject token");
      const jwt = await exchange(ctx, role, { subject_token: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", subject_token_type: TOKEN_TYPE.jwt, scope: role.scope });
      expectError(ctx, jwt, ["invalid_request"], "an unsigned JWT as subject token");
    },
  },
];
