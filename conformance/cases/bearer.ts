/**
 * The access token at the protected resource (spec §4.3; RFC 6750 §2.1, §3, §3.1). Skipped when the target
 * names no resource.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { ALL, BCP, CONTROL } from "./profiles.ts";
import type { CaseContext } from "../context.ts";
import type { Reply } from "../http.ts";
import { randomString } from "../pkce.ts";
import type { ResourceTarget, TokenRole } from "../target.ts";

function resource(ctx: CaseContext): ResourceTarget {
  const r = ctx.target.resource;
  return r ?? ctx.skip("The target names no resource");
}

/** An access token of `role` for `scope`. */
async function accessToken(ctx: CaseContext, role: TokenRole, scope: string): Promise<string> {
  if (role === "client_credentials") {
    const client = ctx.target.clients.client_credentials;
    return (await ctx.twin(await ctx.clientCredentials(client, { scope }), "client_credentials")).access_token;
  }
  return (await ctx.tokens(role, { scope })).access_token;
}

function call(ctx: CaseContext, url: string, authorization?: string): Promise<Reply> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (authorization !== undefined) headers.authorization = authorization;
  return ctx.http.send("GET", url, { headers });
}

/** The auth-params of the Bearer challenge in a WWW-Authenticate header, or undefined without one. */
function bearerChallenge(reply: Reply): string | undefined {
  const header = reply.headers.get("www-authenticate") ?? "";
  const m = /(?:^|,)\s*Bearer\b(.*)$/i.exec(header);
  return m ? m[1]! : undefined;
}

function expect401(ctx: CaseContext, reply: Reply, what: string): string {
  ctx.check(reply.status === 401, `${what}: expected 401, got ${reply.status}`, reply);
  const challenge = bearerChallenge(reply);
  if (challenge === undefined) return ctx.fail(`${what}: a 401 must carry WWW-Authenticate: Bearer (RFC 6750 §3)`, reply);
  return challenge;
}

export const cases: CaseDef[] = [
  {
    id: "BEARER-VALID",
    title: "A valid access token in the Authorization header is accepted",
    area: "bearer",
    ref: "spec §4.3; RFC 6750 §2.1",
    level: "MUST",
    profiles: ALL,
    positive: true,
    async run(ctx) {
      const r = resource(ctx);
      const reply = await call(ctx, r.url, `Bearer ${await accessToken(ctx, r.client, r.scope)}`);
      ctx.check(reply.status >= 200 && reply.status < 300, `Expected a 2xx answer, got ${reply.status}`, reply);
    },
  },
  {
    id: "BEARER-MISSING",
    title: "A request without a token gets 401 with a Bearer challenge",
    area: "bearer",
    ref: "RFC 6750 §3 (MUST include WWW-Authenticate)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.bearer],
    async run(ctx) {
      expect401(ctx, await call(ctx, resource(ctx).url), "no token");
    },
  },
  {
    id: "BEARER-INVALID",
    title: "An unknown token gets 401 with a Bearer challenge",
    area: "bearer",
    ref: "RFC 6750 §3, §3.1 (invalid_token: 401)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.bearer],
    async run(ctx) {
      expect401(ctx, await call(ctx, resource(ctx).url, `Bearer ${randomString()}`), "an unknown token");
    },
  },
  {
    id: "BEARER-INVALID-ERROR-CODE",
    title: "The challenge for an unknown token says error=\"invalid_token\"",
    area: "bearer",
    ref: "RFC 6750 §3 (SHOULD include the error attribute), §3.1",
    level: "SHOULD",
    profiles: ALL,
    needs: [CONTROL.bearer],
    async run(ctx) {
      const reply = await call(ctx, resource(ctx).url, `Bearer ${randomString()}`);
      const challenge = expect401(ctx, reply, "an unknown token");
      ctx.check(/\berror\s*=\s*"?invalid_token"?/.test(challenge), `The challenge has no error="invalid_token": ${JSON.stringify(challenge)}`, reply);
    },
  },
  {
    id: "BEARER-SCHEME-CASE",
    title: "The auth scheme is matched case-insensitively (\"bearer\")",
    area: "bearer",
    ref: "RFC 6750 §2.1; RFC 9110 §11.1 (auth schemes are case-insensitive)",
    level: "SHOULD",
    profiles: ALL,
    needs: [CONTROL.bearer],
    async run(ctx) {
      const r = resource(ctx);
      const reply = await call(ctx, r.url, `bearer ${await accessToken(ctx, r.client, r.scope)}`);
      ctx.check(reply.status >= 200 && reply.status < 300, `"bearer" in lower case was answered ${reply.status}`, reply);
    },
  },
  {
    id: "BEARER-INSUFFICIENT-SCOPE",
    title: "A token without the resource's scope gets 403 insufficient_scope",
    area: "bearer",
    ref: "RFC 6750 §3.1 (insufficient_scope: SHOULD respond 403)",
    level: "SHOULD",
    profiles: ALL,
    needs: [CONTROL.bearer],
    async run(ctx) {
      const r = resource(ctx);
      const insufficient = r.insufficient;
      if (!insufficient) return ctx.skip("resource.insufficient is not set");
      const token = await accessToken(ctx, insufficient.client, insufficient.scope);
      const reply = await call(ctx, r.url, `Bearer ${token}`);
      ctx.check(reply.status === 403, `Expected 403, got ${reply.status}`, reply);
      const challenge = bearerChallenge(reply) ?? "";
      ctx.check(/\berror\s*=\s*"?insufficient_scope"?/.test(challenge), `WWW-Authenticate should say error="insufficient_scope", got ${JSON.stringify(reply.headers.get("www-authenticate"))}`, reply);
    },
  },
  {
    id: "BEARER-QUERY-IGNORED",
    title: "An access token in the query string is not accepted",
    area: "bearer",
    ref: "RFC 9700 §4.3.2 (no tokens in URLs); OAuth 2.1 §5.2 (MUST NOT be sent in the query); RFC 6750 §2.3 made it optional",
    level: "MUST",
    profiles: BCP,
    needs: [CONTROL.bearer],
    security: true,
    async run(ctx) {
      const r = resource(ctx);
      const token = await accessToken(ctx, r.client, r.scope);
      const url = new URL(r.url);
      url.searchParams.set("access_token", token);
      const reply = await call(ctx, url.href);
      ctx.check(reply.status === 401 || reply.status === 400, `A valid token in the query was accepted: ${reply.status}`, reply);
    },
  },
];
