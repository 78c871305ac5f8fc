/**
 * The token response table of spec §2 and RFC 6749 §5.1-§5.2: which fields are present, their types, when a
 * refresh_token appears, the scope, the media type and the caching headers.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { ALL, SPEC, CONTROL } from "./profiles.ts";
import { expectTokens, hasNoStore, type Tokens } from "../checks.ts";
import type { CaseContext } from "../context.ts";
import type { Reply } from "../http.ts";

/** The characters allowed in error, error_description and error_uri (RFC 6749 §5.2, §4.1.2.1). */
export const ERROR_CHARS: RegExp = /^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/;

/** Checks the fields every token response has (spec §2 table; RFC 6749 §5.1). */
function checkFields(ctx: CaseContext, t: Tokens, what: string): void {
  const type = t.reply.headers.get("content-type") ?? "";
  ctx.check(/^application\/json\b/i.test(type), `${what}: Content-Type must be application/json, got ${JSON.stringify(type)}`, t.reply);
  const e = t.body.expires_in;
  ctx.check(typeof e === "number" && Number.isInteger(e) && e > 0, `${what}: expires_in must be a positive integer (spec §2), got ${JSON.stringify(e)}`, t.reply);
  if ("refresh_token" in t.body) {
    ctx.check(typeof t.body.refresh_token === "string" && t.body.refresh_token !== "", `${what}: refresh_token must be a non-empty string`, t.reply);
  }
  if ("scope" in t.body) ctx.check(typeof t.body.scope === "string", `${what}: scope must be a string`, t.reply);
}

/** The successful replies of the three grants, for the header checks. */
async function successes(ctx: CaseContext): Promise<[string, Reply][]> {
  const code = await ctx.refreshToken("public");
  const refreshed = await ctx.refresh(code.grant.client, code.refresh_token);
  expectTokens(ctx, refreshed, "a refresh");
  const replies: [string, Reply][] = [["authorization_code", code.reply], ["refresh_token", refreshed]];
  // client_credentials where the server offers it (capability discovery).
  if (!ctx.feature("client_credentials").offered) return replies;
  const cc = await ctx.clientCredentials(ctx.target.clients.client_credentials);
  expectTokens(ctx, cc, "client_credentials");
  return [...replies, ["client_credentials", cc]];
}

export const cases: CaseDef[] = [
  {
    id: "RESP-AUTHORIZATION_CODE",
    title: "Code responses have access_token, token_type Bearer, integer expires_in and a refresh_token",
    area: "response",
    ref: "spec §2 token response table; RFC 6749 §5.1",
    level: "MUST",
    profiles: SPEC,
    positive: true,
    async run(ctx) {
      for (const role of ["public", "confidential"] as const) {
        const t = await ctx.tokens(role);
        checkFields(ctx, t, `a ${role} client's code response`);
        ctx.check(t.refresh_token !== undefined, `a ${role} client's code response has no refresh_token (spec §2: present)`, t.reply);
      }
    },
  },
  {
    id: "RESP-CLIENT_CREDENTIALS",
    title: "client_credentials responses have the fields, and no refresh_token unless the client is configured for it",
    area: "response",
    ref: "spec §2 token response table; RFC 6749 §4.4.3, §5.1",
    level: "MUST",
    profiles: ALL,
    positive: true,
    features: ["client_credentials"],
    async run(ctx) {
      const t = expectTokens(ctx, await ctx.clientCredentials(ctx.target.clients.client_credentials), "client_credentials");
      checkFields(ctx, t, "the client_credentials response");
      ctx.check(!("refresh_token" in t.body), "A refresh_token was issued to a client_credentials client not configured for it", t.reply);
    },
  },
  {
    id: "RESP-REFRESH_TOKEN",
    title: "Refresh responses have the fields, and the scope is the one granted",
    area: "response",
    ref: "spec §2 token response table; RFC 6749 §5.1, §6 (scope identical when omitted)",
    level: "MUST",
    profiles: ALL,
    positive: true,
    async run(ctx) {
      const first = await ctx.refreshToken("confidential");
      const t = expectTokens(ctx, await ctx.refresh(first.grant.client, first.refresh_token), "a refresh");
      checkFields(ctx, t, "the refresh response");
      if (t.scope !== undefined) ctx.check(t.scope === first.grant.scope, `The refreshed scope is "${t.scope}", granted was "${first.grant.scope}"`, t.reply);
    },
  },
  {
    id: "RESP-SCOPE",
    title: "The scope in a token response, when present, is the requested scope",
    area: "response",
    ref: "spec §4.2 rule 1, §8; RFC 6749 §5.1 (scope)",
    level: "MUST",
    profiles: SPEC,
    features: ["client_credentials"],
    positive: true,
    async run(ctx) {
      const code = await ctx.tokens("public");
      const cc = expectTokens(ctx, await ctx.clientCredentials(ctx.target.clients.client_credentials), "client_credentials");
      for (const [t, requested] of [[code, code.grant.scope], [cc, ctx.target.clients.client_credentials.scope]] as const) {
        if (t.scope !== undefined) ctx.check(t.scope === requested, `Requested scope "${requested}", the response says "${t.scope}"`, t.reply);
      }
    },
  },
  {
    id: "RESP-NO-STORE",
    title: "Token responses carry Cache-Control: no-store",
    area: "response",
    ref: "RFC 6749 §5.1 (MUST include Cache-Control: no-store)",
    level: "MUST",
    profiles: ALL,
    positive: true,
    async run(ctx) {
      for (const [grant, reply] of await successes(ctx)) {
        ctx.check(hasNoStore(reply.headers), `The ${grant} response lacks Cache-Control: no-store (got ${JSON.stringify(reply.headers.get("cache-control"))})`, reply);
      }
    },
  },
  {
    id: "RESP-PRAGMA-NO-CACHE",
    title: "Token responses carry Pragma: no-cache",
    area: "response",
    ref: "RFC 6749 §5.1 (Pragma: no-cache; obsoleted by RFC 9111 §5.4, hence SHOULD here)",
    level: "SHOULD",
    profiles: ALL,
    positive: true,
    async run(ctx) {
      for (const [grant, reply] of await successes(ctx)) {
        ctx.check(/no-cache/i.test(reply.headers.get("pragma") ?? ""), `The ${grant} response lacks Pragma: no-cache`, reply);
      }
    },
  },
  {
    id: "RESP-ERROR-FORMAT",
    title: "Error responses are JSON, and error and error_description use only the allowed characters",
    area: "response",
    ref: "RFC 6749 §5.2",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.clientCredentials],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials;
      const probes: [string, () => Promise<Reply>][] = [
        ["an unknown grant_type", () => ctx.clientCredentials(client, { grant_type: "urn:example:conformance:unknown-grant" })],
        ["a scope the client is not allowed", () => ctx.clientCredentials(client, { scope: ctx.target.forbidden_scope })],
        ["a repeated parameter", () => ctx.token([["grant_type", "client_credentials"], ["client_id", client.client_id], ["client_secret", client.client_secret], ["scope", client.scope], ["scope", client.scope]])],
      ];
      for (const [what, send] of probes) {
        const reply = await send();
        ctx.check(reply.status >= 400, `${what}: expected an error, got ${reply.status}`, reply);
        const type = reply.headers.get("content-type") ?? "";
        ctx.check(/^application\/json\b/i.test(type), `${what}: Content-Type must be application/json, got ${JSON.stringify(type)}`, reply);
        const body = (reply.json ?? {}) as Record<string, unknown>;
        ctx.check(typeof body.error === "string" && ERROR_CHARS.test(body.error), `${what}: "error" must be a string of %x20-21 / %x23-5B / %x5D-7E characters`, reply);
        for (const field of ["error_description", "error_uri"]) {
          if (body[field] === undefined) continue;
          const v = body[field];
          ctx.check(typeof v === "string" && ERROR_CHARS.test(v), `${what}: ${field} ${JSON.stringify(v)} has characters outside %x20-21 / %x23-5B / %x5D-7E`, reply);
        }
      }
    },
  },
  {
    id: "RESP-ERROR-NO-STORE",
    title: "Error responses carry Cache-Control: no-store",
    area: "response",
    ref: "RFC 6749 §5.1 (no-store on any response with sensitive information)",
    level: "SHOULD",
    profiles: ALL,
    needs: [CONTROL.clientCredentials],
    async run(ctx) {
      // Not a failed client authentication: servers that throttle those have enough of them from other cases.
      const reply = await ctx.clientCredentials(ctx.target.clients.client_credentials, { scope: ctx.target.forbidden_scope });
      ctx.check(reply.status >= 400, `Expected an error, got ${reply.status}`, reply);
      ctx.check(hasNoStore(reply.headers), "The error response lacks Cache-Control: no-store", reply);
    },
  },
];
