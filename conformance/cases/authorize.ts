/**
 * Authorization endpoint: the parameter table of spec §4.1 and RFC 6749 §4.1.1-§4.1.2.1, RFC 7636 §4.3-§4.4.1
 * and RFC 9207. Redirect URI validation is in authorize_redirect.ts.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { ALL, BCP, CONTROL, SPEC } from "./profiles.ts";
import { expectRedirectError, expectTokens } from "../checks.ts";
import type { CaseContext, Fields } from "../context.ts";
import { makeVerifier, randomString, s256 } from "../pkce.ts";
import { ERROR_CHARS } from "./response.ts";

/** Authorization parameters of the public client with a valid S256 challenge. */
async function publicParams(ctx: CaseContext, scope?: string): Promise<Fields> {
  const client = ctx.target.clients.public;
  const params = ctx.authorizeParams(client, scope);
  return { ...params, code_challenge: await s256(makeVerifier()), code_challenge_method: "S256" };
}

/** An authorization request of the public client that must come back as an error redirect. */
async function expectAuthorizeError(ctx: CaseContext, change: Record<string, string | undefined>, codes: string[], what: string) {
  const params = { ...(await publicParams(ctx)), ...change };
  const outcome = await ctx.outcome(ctx.authorizeUrl(params));
  return expectRedirectError(ctx, outcome, codes, params.state, what);
}

export const cases: CaseDef[] = [
  {
    id: "AUTHZ-CODE-ISSUED",
    title: "After approval the server redirects to the redirect_uri with a code",
    area: "authorize",
    ref: "spec §4.1 behaviour 2; RFC 6749 §4.1.2",
    level: "MUST",
    profiles: ALL,
    positive: true,
    async run(ctx) {
      const grant = await ctx.code("public");
      ctx.check(!grant.redirect.searchParams.has("error"), `The redirect carries both a code and an error: ${grant.redirect.href}`);
    },
  },
  {
    id: "AUTHZ-STATE-PASSTHROUGH",
    title: "state comes back unchanged in the redirect",
    area: "authorize",
    ref: "spec §4.1 (state returned unchanged); RFC 6749 §4.1.2",
    level: "MUST",
    profiles: ALL,
    positive: true,
    async run(ctx) {
      // Every VSCHAR class that needs encoding (RFC 6749 Appendix A.5).
      const state = `st-${randomString(6)} /+&=?%~!#"`;
      const redirect = await ctx.approve(ctx.authorizeUrl({ ...(await publicParams(ctx)), state }));
      const got = redirect.searchParams.get("state");
      ctx.check(got === state, `Sent state ${JSON.stringify(state)}, got ${JSON.stringify(got)}`);
    },
  },
  {
    id: "AUTHZ-DENY-ACCESS_DENIED",
    title: "When the user denies, the redirect carries error=access_denied and the state",
    area: "authorize",
    ref: "RFC 6749 §4.1.2.1 (access_denied)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      if (!ctx.target.approval.deny) ctx.skip("approval.deny is false: the driver cannot deny");
      const params = await publicParams(ctx);
      const redirect = await ctx.approve(ctx.authorizeUrl(params), true);
      const outcome = { kind: "redirect" as const, url: redirect, exchanges: ctx.http.exchanges.slice(-1) };
      expectRedirectError(ctx, outcome, ["access_denied"], params.state, "denying");
    },
  },
  {
    id: "AUTHZ-ISS",
    title: "The iss parameter, when sent, is the issuer identifier",
    area: "authorize",
    ref: "RFC 9207 §2",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      const grant = await ctx.code("public");
      const iss = grant.redirect.searchParams.get("iss");
      if (iss === null) ctx.skip("The server sends no iss parameter (RFC 9207 is optional)");
      ctx.check(iss === ctx.target.issuer, `iss is ${JSON.stringify(iss)}, expected the issuer ${JSON.stringify(ctx.target.issuer)}`);
    },
  },
  {
    id: "AUTHZ-RESPONSE_TYPE-MISSING",
    title: "A request without response_type is refused by redirect with invalid_request",
    area: "authorize",
    ref: "spec §4.1 (response_type: fixed code); RFC 6749 §4.1.2.1",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      // unsupported_response_type is accepted too: an absent value is "not supported" to some readings.
      await expectAuthorizeError(ctx, { response_type: undefined }, ["invalid_request", "unsupported_response_type"], "no response_type");
    },
  },
  {
    id: "AUTHZ-RESPONSE_TYPE-UNSUPPORTED",
    title: "An unknown response_type is refused by redirect with unsupported_response_type",
    area: "authorize",
    ref: "RFC 6749 §4.1.2.1 (unsupported_response_type)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      await expectAuthorizeError(ctx, { response_type: "x_conformance_unknown" }, ["unsupported_response_type"], "response_type x_conformance_unknown");
    },
  },
  {
    id: "AUTHZ-SCOPE-NOT-ALLOWED",
    title: "A scope the client is not allowed is refused by redirect with invalid_scope",
    area: "authorize",
    ref: "spec §4.2 rule 1, §8; RFC 6749 §4.1.2.1 (invalid_scope)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      await expectAuthorizeError(ctx, { scope: ctx.target.forbidden_scope }, ["invalid_scope"], `scope "${ctx.target.forbidden_scope}"`);
    },
  },
  {
    id: "AUTHZ-SCOPE-TWO",
    title: "Two scopes in one request are refused, even when the client is allowed both",
    area: "authorize",
    ref: "spec §4.1 (exactly one scope per request), §8; RFC 6749 §3.3 (several scopes allowed: hence spec only)",
    level: "MUST",
    profiles: SPEC,
    needs: [CONTROL.authorize],
    async run(ctx) {
      const client = ctx.target.clients.public;
      if (client.extra_scope === undefined) ctx.skip("clients.public.extra_scope is not set");
      const scope = `${client.scope} ${client.extra_scope}`;
      await expectAuthorizeError(ctx, { scope }, ["invalid_scope", "invalid_request"], `scope "${scope}"`);
    },
  },
  {
    id: "AUTHZ-SCOPE-MISSING",
    title: "A request without scope is refused (one scope per request)",
    area: "authorize",
    ref: "spec §4.1 (exactly one scope per request); RFC 6749 §3.3 allows a default instead",
    level: "SHOULD",
    profiles: SPEC,
    needs: [CONTROL.authorize],
    async run(ctx) {
      await expectAuthorizeError(ctx, { scope: undefined }, ["invalid_scope", "invalid_request"], "no scope");
    },
  },
  {
    id: "AUTHZ-PKCE-METHOD-UNSUPPORTED",
    title: "An unsupported code_challenge_method is refused by redirect with invalid_request",
    area: "authorize",
    ref: "RFC 7636 §4.4.1",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      await expectAuthorizeError(ctx, { code_challenge_method: "x-conformance-S512" }, ["invalid_request"], "code_challenge_method x-conformance-S512");
    },
  },
  {
    id: "AUTHZ-PKCE-PLAIN-REFUSED",
    title: "code_challenge_method=plain is refused (the spec fixes S256)",
    area: "authorize",
    ref: "spec §2 PKCE values, §4.1 (code_challenge_method fixed S256); RFC 7636 §4.4.1; RFC 9700 §2.1.1",
    level: "SHOULD",
    profiles: SPEC,
    needs: [CONTROL.authorize],
    async run(ctx) {
      const verifier = makeVerifier();
      await expectAuthorizeError(ctx, { code_challenge: verifier, code_challenge_method: "plain" }, ["invalid_request"], "code_challenge_method plain");
    },
  },
  {
    id: "AUTHZ-PARAM-REPEATED",
    title: "A parameter sent twice is refused with invalid_request",
    area: "authorize",
    ref: "RFC 6749 §3.1 (parameters MUST NOT be included more than once), §4.1.2.1",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      const params = await publicParams(ctx);
      const pairs = Object.entries(params).filter((p): p is [string, string] => p[1] !== undefined);
      const outcome = await ctx.outcome(ctx.authorizeUrl([...pairs, ["scope", params.scope!]]));
      // Refusing without a redirect is fine too: with a parameter repeated, the request as a whole is suspect.
      if (outcome.kind === "refused") return `Refused without a redirect (${outcome.message})`;
      expectRedirectError(ctx, outcome, ["invalid_request"], params.state, "scope sent twice");
    },
  },
  {
    id: "AUTHZ-PARAM-UNKNOWN-IGNORED",
    title: "Unrecognized request parameters are ignored",
    area: "authorize",
    ref: "RFC 6749 §3.1 (MUST ignore unrecognized request parameters)",
    level: "MUST",
    profiles: ALL,
    positive: true,
    async run(ctx) {
      const grant = await ctx.code("public", { params: { x_conformance_extra: "1" } });
      expectTokens(ctx, await ctx.redeem(grant), "redeeming the code");
    },
  },
  {
    id: "AUTHZ-ERROR-FORMAT",
    title: "Error redirects use only the allowed characters in error_description, and iss (if sent) is the issuer",
    area: "authorize",
    ref: "RFC 6749 §4.1.2.1 (error_description: %x20-21 / %x23-5B / %x5D-7E); RFC 9207 §2",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      const probes: [string, Fields][] = [
        ["a scope the client is not allowed", { scope: ctx.target.forbidden_scope }],
        ["an unsupported code_challenge_method", { code_challenge_method: "x-conformance-S512" }],
        ["no response_type", { response_type: undefined }],
      ];
      for (const [what, change] of probes) {
        const url = await expectAuthorizeError(ctx, change, ["invalid_scope", "invalid_request", "unsupported_response_type"], what);
        const params = url.searchParams.has("error") ? url.searchParams : new URLSearchParams(url.hash.slice(1));
        for (const field of ["error_description", "error_uri"]) {
          const v = params.get(field);
          if (v !== null) ctx.check(ERROR_CHARS.test(v), `${what}: ${field} ${JSON.stringify(v)} has characters outside %x20-21 / %x23-5B / %x5D-7E`);
        }
        const iss = params.get("iss");
        if (iss !== null) ctx.check(iss === ctx.target.issuer, `${what}: iss is ${JSON.stringify(iss)}, expected ${JSON.stringify(ctx.target.issuer)}`);
      }
    },
  },
  {
    id: "AUTHZ-IMPLICIT-REFUSED",
    title: "The implicit grant (response_type=token) issues no access token",
    area: "authorize",
    ref: "RFC 9700 §2.1.2 (SHOULD NOT use the implicit grant); OAuth 2.1 §10.1 (removed); spec §4.1 (response_type fixed code)",
    level: "MUST",
    profiles: BCP,
    needs: [CONTROL.authorize],
    security: true,
    async run(ctx) {
      const params: Fields = { ...(await publicParams(ctx)), response_type: "token" };
      const outcome = await ctx.outcome(ctx.authorizeUrl(params));
      // Every Location of the attempt is searched: a token in any fragment or query is a failure.
      const leaked = outcome.exchanges.find((e) => /[#?&]access_token=/.test(e.response?.headers.location ?? ""));
      ctx.check(leaked === undefined, "The server issued an access token by redirect (implicit grant)", leaked);
      if (outcome.kind === "refused") return `Refused without a redirect (${outcome.message})`;
      expectRedirectError(ctx, outcome, ["unsupported_response_type", "unauthorized_client", "invalid_request"], params.state, "response_type=token");
    },
  },
];
