/**
 * What the server says about itself against what it does: RFC 8414 metadata, RFC 7009 revocation and
 * RFC 9207's `iss`. Metadata is optional outside MCP: without it the metadata cases skip (except in the mcp
 * profile, where RFC 8414 is required).
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { expectError, expectTokens, summary } from "../checks.ts";
import type { CaseContext } from "../context.ts";
import { ALL, CONTROL } from "./profiles.ts";

type Metadata = Record<string, unknown>;

/** The server's RFC 8414 metadata; skips (fails in mcp) when there is none. */
async function metadata(ctx: CaseContext): Promise<Metadata> {
  const reply = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
  const body = reply.json;
  if (reply.status === 200 && typeof body === "object" && body !== null && !Array.isArray(body)) return body as Metadata;
  if (ctx.profile === "mcp") return ctx.fail(`No RFC 8414 metadata at ${ctx.target.metadata_url} (MCP requires it): ${summary(reply)}`, reply);
  return ctx.skip(`No RFC 8414 metadata at ${ctx.target.metadata_url} (${reply.status}); set "metadata_url" if it lives elsewhere`);
}

const list = (m: Metadata, key: string): string[] | undefined =>
  Array.isArray(m[key]) ? (m[key] as unknown[]).filter((v): v is string => typeof v === "string") : undefined;

/** The revocation endpoint: the target's, else the metadata's; skips without one. */
async function revocationUrl(ctx: CaseContext): Promise<string> {
  if (ctx.target.revocation_url !== undefined) return ctx.target.revocation_url;
  const reply = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
  const url = (reply.json as Metadata | undefined)?.revocation_endpoint;
  return typeof url === "string" ? url : ctx.skip("No revocation endpoint: none in the target file (revocation_url) nor in the metadata");
}

function revoke(ctx: CaseContext, url: string, token: string, client: { client_id: string; client_secret?: string }, hint?: string) {
  return ctx.http.send("POST", url, {
    form: { token, ...(hint ? { token_type_hint: hint } : {}), client_id: client.client_id, ...(client.client_secret ? { client_secret: client.client_secret } : {}) },
    headers: { accept: "application/json" },
  });
}

export const cases: CaseDef[] = [
  {
    id: "META-DISCOVERY",
    title: "RFC 8414 metadata names the issuer and the endpoints the suite uses",
    area: "metadata",
    ref: "RFC 8414 §2, §3.3 (issuer identical to the one used to build the URL); MCP authorization (RFC 8414 required)",
    level: "MUST",
    profiles: ALL,
    positive: true,
    async run(ctx) {
      const m = await metadata(ctx);
      const t = ctx.target;
      ctx.check(m.issuer === t.issuer, `metadata issuer is ${JSON.stringify(m.issuer)}, expected ${JSON.stringify(t.issuer)}`);
      // The endpoints may be other addresses than the target's, as long as they work.
      const authz = m.authorization_endpoint;
      if (typeof authz !== "string" || !URL.canParse(authz)) return ctx.fail(`authorization_endpoint is ${JSON.stringify(authz)}`);
      if (authz !== t.authorize_url) {
        const url = new URL(authz);
        for (const [k, v] of new URL(ctx.authorizeUrl(ctx.authorizeParams(t.clients.public))).searchParams) url.searchParams.append(k, v);
        const reply = await ctx.http.send("GET", url, { headers: { accept: "text/html" } });
        ctx.check(reply.status < 400 || reply.status === 401, `authorization_endpoint ${authz} answers ${reply.status}`, reply);
      }
      const token = m.token_endpoint;
      if (typeof token !== "string" || !URL.canParse(token)) return ctx.fail(`token_endpoint is ${JSON.stringify(token)}`);
      if (token !== t.token_url) {
        const c = t.clients.client_credentials;
        const form = { grant_type: "client_credentials", client_id: c.client_id, client_secret: c.client_secret, scope: c.scope };
        const reply = await ctx.http.send("POST", token, { form, headers: { accept: "application/json" } });
        expectTokens(ctx, reply, `client_credentials at the metadata's token_endpoint ${token}`);
      }
    },
  },
  {
    id: "META-CLAIMS-MATCH-BEHAVIOUR",
    title: "The metadata lists what the server does: response type code, S256, the grants and client authentications in use",
    area: "metadata",
    ref: "RFC 8414 §2 (response_types_supported REQUIRED; grant_types, code_challenge_methods, token_endpoint_auth_methods)",
    level: "MUST",
    profiles: ALL,
    needs: ["META-DISCOVERY", CONTROL.codePublic, CONTROL.clientCredentials, CONTROL.basic],
    async run(ctx) {
      const m = await metadata(ctx);
      const problems: string[] = [];
      const types = list(m, "response_types_supported");
      if (!types?.includes("code")) problems.push(`response_types_supported ${JSON.stringify(m.response_types_supported)} lacks "code"`);
      const methods = list(m, "code_challenge_methods_supported");
      if (methods !== undefined && !methods.includes("S256")) problems.push(`code_challenge_methods_supported lacks "S256", which works`);
      // Default per RFC 8414 §2: ["authorization_code", "implicit"].
      const grants = list(m, "grant_types_supported") ?? ["authorization_code", "implicit"];
      for (const g of ["authorization_code", "client_credentials", "refresh_token"]) {
        if (!grants.includes(g)) problems.push(`grant_types_supported lacks "${g}", which works`);
      }
      if (ctx.profile !== "rfc6749") {
        for (const g of ["implicit", "password"]) if (grants.includes(g)) problems.push(`grant_types_supported lists "${g}" (OAuth 2.1, RFC 9700 §2.1.2, §2.4)`);
      }
      // Default per RFC 8414 §2: ["client_secret_basic"].
      const auth = list(m, "token_endpoint_auth_methods_supported") ?? ["client_secret_basic"];
      for (const a of ["client_secret_basic", "client_secret_post"]) {
        if (!auth.includes(a)) problems.push(`token_endpoint_auth_methods_supported lacks "${a}", which works`);
      }
      ctx.check(problems.length === 0, `The metadata contradicts the behaviour: ${problems.join("; ")}`);
    },
  },
  {
    id: "META-ISS-CONSISTENT",
    title: "iss in authorization responses matches the metadata's authorization_response_iss_parameter_supported",
    area: "metadata",
    ref: "RFC 9207 §2 (iss MUST be the issuer), §3 (authorization_response_iss_parameter_supported)",
    level: "MUST",
    profiles: ALL,
    needs: ["META-DISCOVERY", CONTROL.authorize],
    security: true,
    async run(ctx) {
      const m = await metadata(ctx);
      const grant = await ctx.code("public");
      const iss = grant.redirect.searchParams.get("iss");
      const claimed = m.authorization_response_iss_parameter_supported === true;
      if (claimed) ctx.check(iss === ctx.target.issuer, `The metadata promises iss, and the redirect carries ${JSON.stringify(iss)}, not ${JSON.stringify(ctx.target.issuer)}`);
      else ctx.check(iss === null || iss === ctx.target.issuer, `iss is ${JSON.stringify(iss)}, expected the issuer`);
      if (!claimed && iss !== null) return "iss is sent but not announced in the metadata (RFC 9207 §3 says to announce it)";
      if (ctx.profile === "mcp" || ctx.profile === "oauth2.1") {
        ctx.check(claimed && iss !== null, "OAuth 2.1 and MCP expect RFC 9207 iss: it is neither sent nor announced");
      }
    },
  },
  {
    id: "REVOKE-REFRESH-TOKEN",
    title: "A revoked refresh token can no longer be used",
    area: "metadata",
    ref: "RFC 7009 §2.1 (invalidate the token), §2.2 (200 on success)",
    level: "MUST",
    profiles: ALL,
    features: ["revocation"],
    needs: [CONTROL.refreshConfidential],
    security: true,
    async run(ctx) {
      const url = await revocationUrl(ctx);
      const t = await ctx.refreshToken("confidential");
      const client = t.grant.client;
      const reply = await revoke(ctx, url, t.refresh_token, client, "refresh_token");
      ctx.check(reply.status === 200, `Revocation answered ${summary(reply)}, expected 200`, reply);
      expectError(ctx, await ctx.refresh(client, t.refresh_token), ["invalid_grant"], "a revoked refresh token");
    },
  },
  {
    id: "REVOKE-UNKNOWN-TOKEN-200",
    title: "Revoking a token the server never issued answers 200",
    area: "metadata",
    ref: "RFC 7009 §2.2 (invalid tokens do not cause an error: 200)",
    level: "MUST",
    profiles: ALL,
    features: ["revocation"],
    needs: [CONTROL.refreshConfidential],
    async run(ctx) {
      const url = await revocationUrl(ctx);
      const reply = await revoke(ctx, url, "x-conformance-never-issued", ctx.target.clients.confidential);
      ctx.check(reply.status === 200, `Revoking an unknown token answered ${summary(reply)}, expected 200`, reply);
    },
  },
  {
    id: "REVOKE-OTHER-CLIENT",
    title: "A client cannot revoke another client's token",
    area: "metadata",
    ref: "RFC 7009 §2.1 (verify the token was issued to the client making the request)",
    level: "MUST",
    profiles: ALL,
    features: ["revocation"],
    needs: [CONTROL.refreshConfidential],
    security: true,
    async run(ctx) {
      const url = await revocationUrl(ctx);
      const t = await ctx.refreshToken("confidential");
      await revoke(ctx, url, t.refresh_token, ctx.target.clients.second, "refresh_token");
      // The token must still work: here a failed refresh is the failure, not a control.
      expectTokens(ctx, await ctx.refresh(t.grant.client, t.refresh_token), `the refresh token after "${ctx.target.clients.second.client_id}" tried to revoke it`);
    },
  },
];
