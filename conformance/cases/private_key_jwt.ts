/**
 * `private_key_jwt` client authentication (RFC 7523 §2.2, §3; the MCP client-credentials extension, SEP-1046):
 * the suite signs the client's assertions with its own key, published at `{identity.origin}/client/jwks`, which
 * the target's client names as its `jwks_uri`. A valid assertion gets a client_credentials token; a forged,
 * expired, misdirected or replayed one gets `invalid_client`.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { expectError } from "../checks.ts";
import type { CaseContext } from "../context.ts";
import type { Reply } from "../http.ts";
import { jti, nowSeconds, signWith, suiteKeys, type SuiteKeys } from "../identity.ts";
import type { IdentityTarget } from "../target.ts";
import type { Profile } from "../types.ts";

/** RFC 7523 §2.2. */
export const CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/** The profiles whose rules include RFC 7523 and RFC 8693 (the spec's own profile has neither). */
export const IDENTITY_PROFILES: readonly Profile[] = ["rfc6749", "oauth2.1", "mcp"];
const FEATURES = ["private_key_jwt", "client_credentials"] as const;
const b64url = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");

type Role = NonNullable<IdentityTarget["private_key_jwt"]>;

/** The client role and the suite's keys; skips without either. */
async function setup(ctx: CaseContext): Promise<{ role: Role; keys: SuiteKeys }> {
  const role = ctx.target.identity?.private_key_jwt ?? ctx.skip("The target file names no identity.private_key_jwt client");
  const host = ctx.keyHost ?? ctx.skip("The run serves no keys: the target file names no identity.origin, or the run passed no key host");
  return { role, keys: await suiteKeys(host) };
}

/** A client assertion (RFC 7523 §3): valid for two minutes unless `claims` say otherwise. */
function assertion(ctx: CaseContext, keys: SuiteKeys, role: Role, claims: Record<string, unknown> = {}, header: { typ?: string; kid?: string } = {}, pair = keys.client): Promise<string> {
  const iat = nowSeconds();
  return signWith(pair, { iss: role.client_id, sub: role.client_id, aud: ctx.target.issuer, iat, exp: iat + 120, jti: jti(), ...claims }, header);
}

/** client_credentials with `token` as the client assertion (and no client_id, unless `extra` adds one). */
function request(ctx: CaseContext, role: Role, token: string, extra: Record<string, string> = {}): Promise<Reply> {
  return ctx.token({ grant_type: "client_credentials", scope: role.scope, client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: token, ...extra });
}

/** The valid twin first (a control), then the request under test, which must get invalid_client. */
async function refused(ctx: CaseContext, what: string, forge: (s: { role: Role; keys: SuiteKeys }) => Promise<string>, extra: Record<string, string> = {}): Promise<void> {
  const s = await setup(ctx);
  await ctx.twin(await request(ctx, s.role, await assertion(ctx, s.keys, s.role)), "a valid client assertion");
  expectError(ctx, await request(ctx, s.role, await forge(s), extra), ["invalid_client"], what);
}

const base = { area: "identity", profiles: IDENTITY_PROFILES, features: FEATURES, needs: ["ID-PKJWT-TOKEN"] } as const;

export const cases: CaseDef[] = [
  {
    id: "ID-PKJWT-TOKEN",
    title: "A signed client assertion gets a client_credentials token, with or without client_id in the request",
    area: "identity",
    ref: "RFC 7523 §2.2, §3; RFC 7521 §4.2 (client_id optional); MCP ext-auth OAuth Client Credentials",
    level: "MUST",
    profiles: IDENTITY_PROFILES,
    features: FEATURES,
    positive: true,
    async run(ctx) {
      const { role, keys } = await setup(ctx);
      await ctx.twin(await request(ctx, role, await assertion(ctx, keys, role)), "client_credentials with a client assertion and no client_id");
      await ctx.twin(await request(ctx, role, await assertion(ctx, keys, role), { client_id: role.client_id }), "client_credentials with a client assertion and client_id");
    },
  },
  {
    ...base,
    id: "ID-PKJWT-ALG-NONE",
    title: "An assertion with alg none is refused",
    ref: "RFC 8725 §3.1, §2.1; RFC 7523 §3 item 9 (a valid signature)",
    level: "MUST",
    security: true,
    run: (ctx) => refused(ctx, "alg none", async (s) => {
      const [header, payload] = (await assertion(ctx, s.keys, s.role)).split(".");
      const plain = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(header!.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0))));
      return `${b64url(new TextEncoder().encode(JSON.stringify({ ...plain, alg: "none" })))}.${payload}.`;
    }),
  },
  {
    ...base,
    id: "ID-PKJWT-HMAC",
    title: "An assertion signed with HS256, keyed with the client's published public key, is refused",
    ref: "RFC 8725 §2.1, §3.1 (algorithm confusion); RFC 7523 §3 item 9",
    level: "MUST",
    security: true,
    run: (ctx) => refused(ctx, "HS256 keyed with the public JWK", async (s) => {
      const genuine = await assertion(ctx, s.keys, s.role);
      const [, payload] = genuine.split(".");
      const input = `${b64url(new TextEncoder().encode(JSON.stringify({ alg: "HS256", kid: s.keys.client.publicJwk.kid })))}.${payload}`;
      const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(JSON.stringify(s.keys.client.publicJwk)), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      return `${input}.${b64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(input))))}`;
    }),
  },
  {
    ...base,
    id: "ID-PKJWT-UNTRUSTED-KEY",
    title: "An assertion signed by a key the client never published, under the client's kid, is refused",
    ref: "RFC 7523 §3 item 9; RFC 7517 §4.5",
    level: "MUST",
    security: true,
    run: (ctx) => refused(ctx, "signed by an unpublished key", (s) => assertion(ctx, s.keys, s.role, {}, { kid: s.keys.client.publicJwk.kid! }, s.keys.rogue)),
  },
  {
    ...base,
    id: "ID-PKJWT-EXPIRED",
    title: "An expired assertion is refused",
    ref: "RFC 7523 §3 item 4 (exp)",
    level: "MUST",
    run: (ctx) => refused(ctx, "expired", (s) => assertion(ctx, s.keys, s.role, { iat: nowSeconds() - 600, exp: nowSeconds() - 300 })),
  },
  {
    ...base,
    id: "ID-PKJWT-AUDIENCE",
    title: "An assertion for another server is refused",
    ref: "RFC 7523 §3 item 3 (aud identifies the authorization server); draft-ietf-oauth-rfc7523bis",
    level: "MUST",
    security: true,
    run: (ctx) => refused(ctx, "aud another server", (s) => assertion(ctx, s.keys, s.role, { aud: "https://other-as.example.com" })),
  },
  {
    ...base,
    id: "ID-PKJWT-AUDIENCE-SOLE",
    title: "An assertion naming this server and another audience is refused",
    ref: "draft-ietf-oauth-rfc7523bis (the issuer identifier as the sole audience value); RFC 7523 §3 item 3",
    level: "SHOULD",
    security: true,
    run: (ctx) => refused(ctx, "aud this server and another", (s) => assertion(ctx, s.keys, s.role, { aud: [ctx.target.issuer, "https://other-as.example.com"] })),
  },
  {
    ...base,
    id: "ID-PKJWT-SUBJECT",
    title: "An assertion whose iss and sub are not the client is refused, also beside the client's client_id",
    ref: "RFC 7523 §3 items 1-2 (iss and sub are the client_id); §3.1",
    level: "MUST",
    security: true,
    async run(ctx) {
      const s = await setup(ctx);
      await ctx.twin(await request(ctx, s.role, await assertion(ctx, s.keys, s.role)), "a valid client assertion");
      const other = `${s.role.client_id}-other`;
      const forged = await assertion(ctx, s.keys, s.role, { iss: other, sub: other });
      expectError(ctx, await request(ctx, s.role, forged, { client_id: s.role.client_id }), ["invalid_client"], "iss and sub another client");
      const mixed = await assertion(ctx, s.keys, s.role, { sub: other });
      expectError(ctx, await request(ctx, s.role, mixed, { client_id: s.role.client_id }), ["invalid_client"], "sub another client");
    },
  },
  {
    ...base,
    id: "ID-PKJWT-REPLAY",
    title: "An assertion already used is refused (its jti is spent)",
    ref: "RFC 7523 §3 item 7 (jti); RFC 7521 §5.2; OpenID Connect Core §9",
    level: "SHOULD",
    security: true,
    async run(ctx) {
      const s = await setup(ctx);
      const token = await assertion(ctx, s.keys, s.role);
      await ctx.twin(await request(ctx, s.role, token), "the first use of the assertion");
      expectError(ctx, await request(ctx, s.role, token), ["invalid_client"], "the same assertion again");
    },
  },
  {
    ...base,
    id: "ID-PKJWT-LIFETIME",
    title: "An assertion valid for a day is refused",
    ref: "RFC 7523 §3 item 4 (the server may reject an exp unreasonably far in the future); RFC 7521 §5.2",
    level: "SHOULD",
    run: (ctx) => refused(ctx, "valid for a day", (s) => assertion(ctx, s.keys, s.role, { exp: nowSeconds() + 86_400 })),
  },
  {
    id: "ID-PKJWT-METADATA",
    title: "With private_key_jwt offered, the metadata lists its signing algorithms: never none, and HMAC only beside client_secret_jwt",
    area: "identity",
    ref: "MCP ext-auth OAuth Client Credentials (token_endpoint_auth_signing_alg_values_supported required); RFC 8414 §2 (none MUST NOT be used); RFC 8725 §3.1",
    level: "MUST",
    profiles: ["mcp"],
    features: ["private_key_jwt"],
    needs: ["META-DISCOVERY"],
    security: true,
    async run(ctx) {
      const reply = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
      const meta = (reply.json ?? {}) as Record<string, unknown>;
      const algs = meta.token_endpoint_auth_signing_alg_values_supported;
      ctx.check(Array.isArray(algs) && algs.length > 0, "token_endpoint_auth_signing_alg_values_supported is missing or empty", reply);
      // The list serves client_secret_jwt too (RFC 8414 §2): HMAC belongs there only when that method is offered.
      const methods = meta.token_endpoint_auth_methods_supported;
      const hmacOk = Array.isArray(methods) && methods.includes("client_secret_jwt");
      const bad = (algs as unknown[]).filter((a) => typeof a !== "string" || a.toLowerCase() === "none" || (!hmacOk && /^HS/.test(a)));
      ctx.check(bad.length === 0, `token_endpoint_auth_signing_alg_values_supported lists ${JSON.stringify(bad)}: none never, HMAC only for client_secret_jwt`, reply);
    },
  },
];
