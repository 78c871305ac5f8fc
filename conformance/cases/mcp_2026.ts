/**
 * What MCP authorization 2026-07-28 and the clients MCP hosts are built on ask of an authorization server beyond
 * the cases of `mcp.ts`: a request for more scopes than the client may have narrowed rather than refused, a
 * resource whose metadata and challenges fit it (no offline_access, a 403 naming the scope a call needs, step-up
 * to the union that a refresh keeps), offline_access and the prompt values the TypeScript SDK sends, resource
 * indicators whose scheme or host differ only in case, iss on every authorization response, and revocation
 * answers every common client library reads. All of them run without a person at a browser.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { expectTokens, summary, type Tokens } from "../checks.ts";
import type { CaseContext, Fields } from "../context.ts";
import { isRedirectTo } from "../drivers/driver.ts";
import type { Reply } from "../http.ts";
import { makeVerifier, s256 } from "../pkce.ts";
import { CONTROL, MCP } from "./profiles.ts";

const REV = "MCP authorization 2026-07-28";
const OFFLINE_ACCESS = "offline_access";

const tokensOf = (scope: string | undefined): string[] => (scope === undefined ? [] : scope.split(" ").filter((s) => s !== ""));
const sameScopes = (a: string | undefined, b: string): boolean => {
  const x = new Set(tokensOf(a)), y = new Set(tokensOf(b));
  return x.size === y.size && [...x].every((s) => y.has(s));
};
/** A challenge parameter of a `WWW-Authenticate: Bearer …` header (RFC 6750 §3). */
const challengeParam = (header: string | null, name: string): string | undefined =>
  header === null ? undefined : new RegExp(`\\b${name}="([^"]*)"`, "i").exec(header)?.[1];

/** The public client's authorization request for `scope` with PKCE (and the MCP resource when the target names one). */
async function publicRequest(ctx: CaseContext, scope: string, extra: Fields = {}): Promise<{ params: Fields; verifier: string }> {
  const verifier = makeVerifier();
  const resource = ctx.target.mcp.resource;
  const params: Fields = {
    ...ctx.authorizeParams(ctx.target.clients.public, scope),
    code_challenge: await s256(verifier),
    code_challenge_method: "S256",
    ...(resource === undefined ? {} : { resource }),
    ...extra,
  };
  return { params, verifier };
}

/** Redeems a code of the public client issued for `params`. */
function redeemPublic(ctx: CaseContext, code: string, request: { params: Fields; verifier: string }): Promise<Reply> {
  const { params, verifier } = request;
  return ctx.token({
    grant_type: "authorization_code", client_id: ctx.target.clients.public.client_id, redirect_uri: params.redirect_uri, code,
    code_verifier: verifier, ...(params.resource === undefined ? {} : { resource: params.resource }),
  });
}

/** How a request for the client's scope plus one it may not have ended. */
type Beyond =
  | { kind: "refused"; message: string }
  | { kind: "error"; error: string; url: URL }
  | { kind: "tokens"; tokens: Tokens; asked: string };

/** Asks, as the public client, for its scope and the target's forbidden scope (a scope the server knows). */
async function askBeyond(ctx: CaseContext): Promise<Beyond> {
  const asked = `${ctx.target.clients.public.scope} ${ctx.target.forbidden_scope}`;
  const request = await publicRequest(ctx, asked);
  const outcome = await ctx.outcome(ctx.authorizeUrl(request.params));
  if (outcome.kind === "refused") return { kind: "refused", message: outcome.message };
  const error = outcome.url.searchParams.get("error");
  if (error !== null) return { kind: "error", error, url: outcome.url };
  const code = outcome.url.searchParams.get("code");
  if (code === null) return ctx.fail(`Asking for "${asked}" ended in a redirect with neither code nor error: ${outcome.url.href}`, outcome.exchanges);
  return { kind: "tokens", tokens: expectTokens(ctx, await redeemPublic(ctx, code, request), `redeeming the code for "${asked}"`), asked };
}

/** The MCP endpoint and the step-up tool, or a skip. */
function stepUpTarget(ctx: CaseContext): { url: string; tool: string; scope: string } {
  const url = ctx.target.mcp.protected_url ?? ctx.skip('The target names no protected MCP endpoint ("mcp.protected_url")');
  const stepUp = ctx.target.mcp.step_up ?? ctx.skip('The target names no tool that needs more scope ("mcp.step_up": { "tool", "scope" })');
  return { url, ...stepUp };
}

/** A JSON-RPC `tools/call` of `tool` at the MCP endpoint, with a Bearer token. */
function callTool(ctx: CaseContext, url: string, token: string, tool: string): Promise<Reply> {
  return ctx.http.send("POST", url, {
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool, arguments: {} } }),
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
  });
}

/** A code and tokens for the public client and `scope`; fails (not blocks) when the server refuses. */
async function publicTokens(ctx: CaseContext, scope: string, extra: Fields, what: string): Promise<Tokens> {
  const request = await publicRequest(ctx, scope, extra);
  const back = await ctx.approve(ctx.authorizeUrl(request.params));
  const code = back.searchParams.get("code");
  if (code === null) return ctx.fail(`${what}: no code, got ${back.searchParams.get("error") ?? back.href}`);
  return expectTokens(ctx, await redeemPublic(ctx, code, request), `${what}: redeeming the code`);
}

/** `resource` with its scheme and host in capitals (the rest as it is). */
const shout = (resource: string): string =>
  resource.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)/, (_, scheme: string, host: string) => scheme.toUpperCase() + host.toUpperCase());

/** The revocation endpoint: the target's, else the metadata's; skips without one. */
async function revocationUrl(ctx: CaseContext): Promise<string> {
  if (ctx.target.revocation_url !== undefined) return ctx.target.revocation_url;
  const reply = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
  const url = (reply.json as Record<string, unknown> | undefined)?.revocation_endpoint;
  return typeof url === "string" ? url : ctx.skip("No revocation endpoint: none in the target file (revocation_url) nor in the metadata");
}

export const cases: CaseDef[] = [
  {
    id: "MCP-SCOPE-NARROWED",
    title: "A request for more scopes than the client may have is narrowed to the allowed ones, not refused",
    area: "mcp",
    ref: `RFC 6749 §3.3 (the server may grant less, and says so), §5.1 (scope); ${REV} (scope selection: clients ask for every scope the resource lists)`,
    level: "SHOULD",
    profiles: MCP,
    needs: [CONTROL.codePublic],
    async run(ctx) {
      const result = await askBeyond(ctx);
      const client = ctx.target.clients.public;
      if (result.kind === "refused") return ctx.fail(`Asking for the client's scope plus "${ctx.target.forbidden_scope}" was refused without a redirect (${result.message})`);
      if (result.kind === "error") {
        return ctx.fail(`Asking for "${client.scope} ${ctx.target.forbidden_scope}" answered error=${result.error}: an MCP host asks for every scope the resource lists, and a client registered with fewer then gets nothing; RFC 6749 §3.3 lets the server grant the allowed part`);
      }
      ctx.check(sameScopes(result.tokens.scope, client.scope), `Granted scope ${JSON.stringify(result.tokens.scope)}, expected the client's own "${client.scope}"`, result.tokens.reply);
    },
  },
  {
    id: "MCP-SCOPE-NEVER-WIDER",
    title: "Whatever a request for more scopes ends in, no token carries a scope the client may not have, and a narrowed grant says so",
    area: "mcp",
    ref: "RFC 6749 §3.3, §5.1 (scope REQUIRED when it differs from the request); RFC 9700 §2.3 (least privilege)",
    level: "MUST",
    profiles: MCP,
    needs: [CONTROL.codePublic],
    security: true,
    async run(ctx) {
      const result = await askBeyond(ctx);
      if (result.kind !== "tokens") return result.kind === "error" ? `Refused with error=${result.error}: nothing granted` : `Refused without a redirect: nothing granted`;
      const granted = result.tokens.scope;
      ctx.check(granted !== undefined, `The token response for "${result.asked}" has no scope: either "${ctx.target.forbidden_scope}" was granted, or the grant was narrowed without saying so (RFC 6749 §5.1)`, result.tokens.reply);
      ctx.check(!tokensOf(granted).includes(ctx.target.forbidden_scope), `The token carries "${ctx.target.forbidden_scope}", a scope the client may not have: ${JSON.stringify(granted)}`, result.tokens.reply);
    },
  },
  {
    id: "MCP-PRM-NO-OFFLINE-ACCESS",
    title: "The MCP endpoint's resource metadata and its 401 challenge do not list offline_access",
    area: "mcp",
    ref: `${REV} (refresh tokens: resource servers SHOULD NOT include offline_access in scopes_supported or in WWW-Authenticate); RFC 9728 §2`,
    level: "SHOULD",
    profiles: MCP,
    needs: ["MCP-PRM-CHALLENGE"],
    async run(ctx) {
      const url = ctx.target.mcp.protected_url!;
      const reply = await ctx.http.send("POST", url, { body: "{}", headers: { "content-type": "application/json", accept: "application/json" } });
      const header = reply.headers.get("www-authenticate");
      ctx.check(!tokensOf(challengeParam(header, "scope")).includes(OFFLINE_ACCESS), `The 401 challenge asks for offline_access: ${JSON.stringify(header)}`, reply);
      const link = challengeParam(header, "resource_metadata")!;
      const prm = await ctx.http.send("GET", new URL(link, url), { headers: { accept: "application/json" } });
      const listed = (prm.json as { scopes_supported?: unknown } | undefined)?.scopes_supported;
      ctx.check(!(Array.isArray(listed) && listed.includes(OFFLINE_ACCESS)), `The resource metadata lists offline_access in scopes_supported: ${JSON.stringify(listed)}`, prm);
    },
  },
  {
    id: "MCP-STEP-UP",
    title: "A call that needs more scope gets 403 naming it; the union of old and new scopes is then granted, works, and survives a refresh",
    area: "mcp",
    ref: `RFC 6750 §3.1 (insufficient_scope, scope); ${REV} (runtime insufficient scope errors; step-up authorization, SEP-2350); RFC 6749 §6 (a refresh keeps the scope)`,
    level: "SHOULD",
    profiles: MCP,
    features: ["resource_indicators"],
    needs: ["MCP-PRM-CHALLENGE", "MCP-RESOURCE-ISSUED"],
    async run(ctx) {
      const { url, tool, scope: needed } = stepUpTarget(ctx);
      const client = ctx.target.clients.public;
      const first = await ctx.control(() => publicTokens(ctx, client.scope, {}, `a token for "${client.scope}"`));
      const refused = await callTool(ctx, url, first.access_token, tool);
      const header = refused.headers.get("www-authenticate");
      ctx.check(refused.status === 403 && challengeParam(header, "error") === "insufficient_scope", `Calling ${tool} without "${needed}" answered ${summary(refused)} with ${JSON.stringify(header)}, expected 403 insufficient_scope`, refused);
      const named = challengeParam(header, "scope");
      ctx.check(tokensOf(named).includes(needed), `The 403 challenge names scope ${JSON.stringify(named)}, which lacks "${needed}": the client cannot tell what to ask for`, refused);
      // SEP-2350: the client asks for the union of what it was granted and what the challenge names.
      const union = [...new Set([...tokensOf(first.scope ?? client.scope), ...tokensOf(named)])].join(" ");
      const second = await publicTokens(ctx, union, {}, `the step-up authorization for "${union}"`);
      ctx.check(second.scope === undefined || sameScopes(second.scope, union), `The step-up grant is ${JSON.stringify(second.scope)}, expected "${union}"`, second.reply);
      const allowed = await callTool(ctx, url, second.access_token, tool);
      ctx.check(allowed.status >= 200 && allowed.status < 300, `Calling ${tool} with a token for "${union}" answered ${summary(allowed)}`, allowed);
      if (second.refresh_token === undefined) return "No refresh token with the step-up grant: the refresh was not checked";
      const resource = ctx.target.mcp.resource;
      const refreshed = expectTokens(ctx, await ctx.refresh(client, second.refresh_token, resource === undefined ? {} : { resource }), "refreshing the step-up grant");
      ctx.check(refreshed.scope === undefined || sameScopes(refreshed.scope, union), `The refresh narrowed the grant to ${JSON.stringify(refreshed.scope)}, expected "${union}"`, refreshed.reply);
      const again = await callTool(ctx, url, refreshed.access_token, tool);
      ctx.check(again.status >= 200 && again.status < 300, `Calling ${tool} with the refreshed token answered ${summary(again)}`, again);
    },
  },
  {
    id: "MCP-OFFLINE-ACCESS",
    title: "offline_access with prompt=consent, as the MCP TypeScript SDK asks for it, gives a refresh token",
    area: "mcp",
    ref: `${REV} (refresh tokens, SEP-2207: offline_access listed in scopes_supported); OpenID Connect Core §11, §3.1.2.1 (prompt=consent); RFC 6749 §1.5`,
    level: "SHOULD",
    profiles: MCP,
    features: ["offline_access"],
    needs: [CONTROL.codePublic],
    async run(ctx) {
      const scope = `${ctx.target.clients.public.scope} ${OFFLINE_ACCESS}`;
      const t = await publicTokens(ctx, scope, { prompt: "consent" }, `"${scope}" with prompt=consent`);
      ctx.check(t.refresh_token !== undefined, `"${scope}" was granted (${JSON.stringify(t.scope)}) without a refresh token`, t.reply);
      ctx.check(t.scope === undefined || tokensOf(t.scope).includes(OFFLINE_ACCESS), `The grant ${JSON.stringify(t.scope)} leaves out offline_access`, t.reply);
    },
  },
  {
    id: "MCP-PROMPT-CONSENT",
    title: "An authorization request with prompt=consent (the MCP TypeScript SDK sends it with offline_access) gets a code",
    area: "mcp",
    ref: "OpenID Connect Core §3.1.2.1 (prompt); MCP TypeScript SDK (prompt=consent with offline_access); RFC 6749 §3.1 (unknown parameters are ignored)",
    level: "SHOULD",
    profiles: MCP,
    positive: true,
    async run(ctx) {
      const grant = await ctx.code("public", { params: { prompt: "consent" } });
      expectTokens(ctx, await ctx.redeem(grant), "redeeming a code of a prompt=consent request");
    },
  },
  {
    id: "MCP-PROMPT-NONE",
    title: "prompt=none without a session shows no page: login_required (or interaction_required) by redirect",
    area: "mcp",
    ref: "OpenID Connect Core §3.1.2.1 (prompt=none: no user interface), §3.1.2.6 (login_required, interaction_required, consent_required); RFC 6749 §4.1.2.1",
    level: "SHOULD",
    profiles: MCP,
    needs: [CONTROL.authorize],
    async run(ctx) {
      const request = await publicRequest(ctx, ctx.target.clients.public.scope, { prompt: "none" });
      // Straight to the server, without the approval driver: there is no session, and there must be no page.
      const reply = await ctx.http.send("GET", ctx.authorizeUrl(request.params), { headers: { accept: "text/html" } });
      if (reply.location === undefined || !isRedirectTo(reply.location, request.params.redirect_uri!)) {
        return ctx.fail(`prompt=none answered ${reply.status}${reply.location ? ` (to ${reply.location.origin})` : ""}, expected a redirect to the client with login_required`, reply);
      }
      const params = reply.location.searchParams;
      ctx.check(!params.has("code"), "prompt=none without a session issued a code", reply);
      const error = params.get("error");
      ctx.check(error === "login_required" || error === "interaction_required" || error === "consent_required", `prompt=none answered error=${error}, expected login_required`, reply);
      ctx.check(params.get("state") === request.params.state, "The prompt=none error did not return state", reply);
    },
  },
  {
    id: "MCP-RESOURCE-CANONICAL",
    title: "A resource whose scheme and host differ only in case is the same resource, and its token opens the MCP endpoint",
    area: "mcp",
    ref: `${REV} (canonical server URI: servers SHOULD accept uppercase scheme and host); RFC 3986 §6.2.2.1; RFC 8707 §2`,
    level: "SHOULD",
    profiles: MCP,
    features: ["resource_indicators"],
    needs: ["MCP-RESOURCE-ISSUED"],
    async run(ctx) {
      const configured = ctx.target.mcp.resource ?? ctx.skip('The target names no MCP resource ("mcp.resource")');
      const resource = shout(configured);
      const request = await publicRequest(ctx, ctx.target.clients.public.scope, { resource });
      const outcome = await ctx.outcome(ctx.authorizeUrl(request.params));
      const code = outcome.kind === "redirect" ? outcome.url.searchParams.get("code") : null;
      if (code === null) {
        const detail = outcome.kind === "redirect" ? `error=${outcome.url.searchParams.get("error")}` : outcome.message;
        return ctx.fail(`The resource ${resource} (${configured} with scheme and host in capitals) was refused: ${detail}`, outcome.exchanges);
      }
      const t = expectTokens(ctx, await redeemPublic(ctx, code, request), `redeeming a code for ${resource}`);
      const url = ctx.target.mcp.protected_url;
      if (url === undefined) return "No MCP endpoint named: the token's audience was not checked";
      const call = await ctx.http.send("POST", url, {
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
        headers: { authorization: `Bearer ${t.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      });
      ctx.check(call.status !== 401 && call.status !== 403, `The MCP endpoint refused the token for ${resource} (${summary(call)}): its audience is not ${configured}`, call);
    },
  },
  {
    id: "MCP-ISS-EVERY-RESPONSE",
    title: "Every authorization response, the code and each error sent back, carries iss equal to the issuer",
    area: "mcp",
    ref: `RFC 9207 §2 (iss in the authorization response, errors included); ${REV} (authorization response validation, SEP-2468)`,
    level: "SHOULD",
    profiles: MCP,
    needs: [CONTROL.authorize],
    async run(ctx) {
      const grant = await ctx.control(() => ctx.code("public"));
      const answers: [string, URL][] = [["the code", grant.redirect]];
      const client = ctx.target.clients.public;
      const probes: [string, Fields][] = [
        ["error=invalid_scope", { scope: ctx.target.forbidden_scope }],
        ["error=unsupported_response_type", { response_type: "x_conformance_unknown" }],
        ["prompt=none", { prompt: "none" }],
      ];
      if (ctx.feature("resource_indicators").offered && ctx.target.mcp.resource !== undefined) {
        probes.push(["error=invalid_target", { resource: "https://unknown-resource.example/mcp" }]);
      }
      for (const [what, change] of probes) {
        const request = await publicRequest(ctx, client.scope, change);
        const reply = await ctx.http.send("GET", ctx.authorizeUrl(request.params), { headers: { accept: "text/html" } });
        if (reply.location !== undefined && isRedirectTo(reply.location, client.redirect_uri)) answers.push([what, reply.location]);
      }
      const wrong = answers.filter(([, url]) => url.searchParams.get("iss") !== ctx.target.issuer);
      ctx.check(wrong.length === 0, `Without iss equal to ${JSON.stringify(ctx.target.issuer)}: ${wrong.map(([what, url]) => `${what} (iss ${JSON.stringify(url.searchParams.get("iss"))})`).join(", ")}`);
      return `${answers.length} authorization responses checked: ${answers.map(([what]) => what).join(", ")}`;
    },
  },
  {
    id: "MCP-REVOKE-JSON",
    title: "The revocation endpoint answers 200 with a JSON body labelled application/json, which every common client library reads",
    area: "mcp",
    ref: "RFC 7009 §2.2 (200; the client ignores the body); interop: simple-oauth2 refuses a body that is not JSON, @badgateway/oauth2-client an empty one labelled JSON",
    level: "SHOULD",
    profiles: MCP,
    features: ["revocation", "client_credentials"],
    needs: [CONTROL.clientCredentials],
    async run(ctx) {
      const url = await revocationUrl(ctx);
      const client = ctx.target.clients.client_credentials;
      const t = expectTokens(ctx, await ctx.clientCredentials(client), "a client_credentials token to revoke");
      const reply = await ctx.http.send("POST", url, {
        form: { token: t.access_token, token_type_hint: "access_token", client_id: client.client_id, client_secret: client.client_secret },
        headers: { accept: "application/json" },
      });
      ctx.check(reply.status === 200, `Revocation answered ${summary(reply)}, expected 200`, reply);
      const type = reply.headers.get("content-type") ?? "";
      ctx.check(/^application\/(?:[\w.+-]+\+)?json\b/i.test(type), `The revocation answer is labelled ${JSON.stringify(type)}: simple-oauth2 refuses anything that is not JSON`, reply);
      ctx.check(reply.json !== undefined, `The revocation answer ${JSON.stringify(reply.text.slice(0, 40))} does not parse as JSON: @badgateway/oauth2-client fails on it`, reply);
    },
  },
];
