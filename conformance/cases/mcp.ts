/**
 * The MCP authorization profile beyond OAuth 2.1: resource indicators (RFC 8707), protected-resource metadata
 * and its challenge (RFC 9728), PKCE announced in the metadata, dynamic client registration (RFC 7591) and
 * CORS for browser-based clients, and Client ID Metadata Documents (served by the suite itself, at the origin the
 * target file names). Cases whose feature the target does not describe or offer skip and say why.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { expectError, expectRedirectError, summary } from "../checks.ts";
import type { CaseContext, DocumentHost, Fields } from "../context.ts";
import type { Reply } from "../http.ts";
import { makeVerifier, randomString, s256 } from "../pkce.ts";
import { CONTROL, MCP } from "./profiles.ts";

const UNKNOWN_RESOURCE = "https://unknown-resource.example/mcp";

/** The RFC 8414 metadata, or a skip. */
async function metadata(ctx: CaseContext): Promise<Record<string, unknown>> {
  const reply = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
  const body = reply.json;
  if (reply.status !== 200 || typeof body !== "object" || body === null) {
    return ctx.fail(`No RFC 8414 metadata at ${ctx.target.metadata_url} (MCP clients discover the server there): ${summary(reply)}`, reply);
  }
  return body as Record<string, unknown>;
}

function resourceOf(ctx: CaseContext): string {
  return ctx.target.mcp.resource ?? ctx.skip('The target names no MCP resource ("mcp.resource")');
}

/** A token of the public client bound to `resource` (none: unbound). */
async function tokenFor(ctx: CaseContext, resource: string | undefined): Promise<string> {
  const params = resource === undefined ? {} : { resource };
  const grant = await ctx.code("public", { params });
  const t = await ctx.twin(await ctx.redeem(grant, params), `redeeming a code for ${resource ?? "no resource"}`);
  return t.access_token;
}

/** A dynamic registration of a public loopback client. */
function register(ctx: CaseContext, endpoint: string, redirect: string): Promise<Reply> {
  const body = JSON.stringify({
    client_name: "Conformance MCP client",
    redirect_uris: [redirect],
    token_endpoint_auth_method: "none",
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    // MCP 2026-07-28 (SEP-837): clients send it; a loopback redirect URI is a native app's (RFC 8252 §7.3).
    application_type: "native",
    scope: ctx.target.clients.public.scope,
  });
  return ctx.http.send("POST", endpoint, { body, headers: { "content-type": "application/json", accept: "application/json" } });
}

async function registrationEndpoint(ctx: CaseContext): Promise<string> {
  const reply = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
  // No metadata at all is MCP-METADATA-PKCE's and META-DISCOVERY's failure; here it means no registration.
  const m = reply.status === 200 && typeof reply.json === "object" && reply.json !== null ? reply.json as Record<string, unknown> : {};
  const endpoint = m.registration_endpoint;
  return typeof endpoint === "string" ? endpoint : ctx.skip("The metadata names no registration_endpoint (dynamic registration is optional in MCP)");
}

/** The draft revision whose section numbers the CIMD cases cite (-02 renumbered them; the rules are the same). */
const CIMD = "draft-ietf-oauth-client-id-metadata-document-01";

/** The suite's document host, or a skip when the target names none or the server does not advertise support. */
async function documentHost(ctx: CaseContext): Promise<DocumentHost> {
  const host = ctx.documents;
  if (host === undefined || ctx.target.client_metadata_documents === undefined) {
    return ctx.skip('The target names no origin where the suite may serve client metadata documents ("client_metadata_documents.origin")');
  }
  return host;
}

/** A fresh document URL on the suite's host (a new path per use: no server-side cache can answer it). */
function documentUrl(host: DocumentHost): string {
  return `${host.origin}/cimd/${randomString(12)}/client.json`;
}

/** A client metadata document for `clientId` (a public client: auth method none). */
function document(ctx: CaseContext, clientId: string, redirect: string): Record<string, unknown> {
  return {
    client_id: clientId,
    client_name: "Conformance CIMD client",
    redirect_uris: [redirect],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    scope: ctx.target.clients.public.scope,
  };
}

/** Serves `body` as JSON at `url`. */
function serveJson(host: DocumentHost, url: string, body: unknown): void {
  host.serve(new URL(url).pathname, () => Response.json(body, { headers: { "cache-control": "no-store" } }));
}

/** The authorization request of a document client, with PKCE. */
async function documentRequest(ctx: CaseContext, clientId: string, redirect: string): Promise<{ url: URL; verifier: string; state: string }> {
  const verifier = makeVerifier();
  const params = { ...ctx.authorizeParams({ client_id: clientId, redirect_uri: redirect, scope: ctx.target.clients.public.scope }) };
  params.code_challenge = await s256(verifier);
  params.code_challenge_method = "S256";
  return { url: ctx.authorizeUrl(params), verifier, state: params.state! };
}

/** The code flow with PKCE as the client a valid document at a fresh URL describes; fails unless it gets tokens. */
async function documentFlow(ctx: CaseContext, host: DocumentHost): Promise<void> {
  const clientId = documentUrl(host);
  const redirect = ctx.target.clients.public.redirect_uri;
  serveJson(host, clientId, document(ctx, clientId, redirect));
  const request = await documentRequest(ctx, clientId, redirect);
  const back = await ctx.approve(request.url);
  const code = back.searchParams.get("code");
  if (code === null) return ctx.fail(`The client of a valid metadata document got no code: ${back.href}`);
  const tokens = await ctx.token({ grant_type: "authorization_code", client_id: clientId, redirect_uri: redirect, code, code_verifier: request.verifier });
  ctx.check(tokens.status === 200, `The document client's code was not redeemed (auth method none, client_id the URL): ${summary(tokens)}`, tokens);
}

/**
 * Expects the authorization request to be refused without a redirect: the redirect_uri of an unverified client
 * is unverified. The valid twin (a fresh, valid document) runs first so that a server that refuses every
 * document does not pass.
 */
async function expectDocumentRefused(ctx: CaseContext, host: DocumentHost, url: URL, what: string): Promise<string> {
  await ctx.control(() => documentFlow(ctx, host));
  const outcome = await ctx.outcome(url);
  if (outcome.kind === "redirect") {
    const code = outcome.url.searchParams.get("code");
    return ctx.fail(`${what}, yet the server redirected to ${outcome.url.origin}${outcome.url.pathname}${code === null ? "" : " with a code"}`, outcome.exchanges);
  }
  return `Refused without a redirect (${outcome.message})`;
}

export const cases: CaseDef[] = [
  {
    id: "MCP-RESOURCE-ISSUED",
    title: "A code and tokens are issued for the MCP server's resource (RFC 8707)",
    area: "mcp",
    ref: "RFC 8707 §2 (resource at the authorization and token endpoints); MCP authorization (resource parameter MUST be sent)",
    level: "MUST",
    profiles: MCP,
    features: ["resource_indicators"],
    positive: true,
    async run(ctx) {
      await tokenFor(ctx, resourceOf(ctx));
    },
  },
  {
    id: "MCP-RESOURCE-UNKNOWN",
    title: "An authorization request for a resource the server does not serve is refused with invalid_target",
    area: "mcp",
    ref: "RFC 8707 §2 (invalid_target); MCP authorization (tokens only for the intended resource)",
    level: "MUST",
    profiles: MCP,
    features: ["resource_indicators"],
    needs: ["MCP-RESOURCE-ISSUED"],
    security: true,
    async run(ctx) {
      const client = ctx.target.clients.public;
      const params: Fields = { ...ctx.authorizeParams(client), code_challenge: await s256(makeVerifier()), code_challenge_method: "S256", resource: UNKNOWN_RESOURCE };
      const outcome = await ctx.outcome(ctx.authorizeUrl(params));
      if (outcome.kind === "refused") return `Refused without a redirect (${outcome.message})`;
      expectRedirectError(ctx, outcome, ["invalid_target"], params.state, `resource ${UNKNOWN_RESOURCE}`);
    },
  },
  {
    id: "MCP-RESOURCE-TOKEN-BOUND",
    title: "A code issued for one resource is not exchanged for a token for another",
    area: "mcp",
    ref: "RFC 8707 §2.2 (the token request may only narrow the resources of the grant); MCP authorization (audience)",
    level: "MUST",
    profiles: MCP,
    features: ["resource_indicators"],
    needs: ["MCP-RESOURCE-ISSUED"],
    security: true,
    async run(ctx) {
      const resource = resourceOf(ctx);
      const grant = await ctx.code("public", { params: { resource } });
      expectError(ctx, await ctx.redeem(grant, { resource: UNKNOWN_RESOURCE }), ["invalid_target", "invalid_grant"], `a code for ${resource} redeemed for ${UNKNOWN_RESOURCE}`);
    },
  },
  {
    id: "MCP-PRM-CHALLENGE",
    title: "The MCP endpoint answers 401 with resource_metadata, and that metadata names the resource and this server",
    area: "mcp",
    ref: "RFC 9728 §5.1 (WWW-Authenticate resource_metadata), §2, §3; MCP authorization (protected resource metadata)",
    level: "MUST",
    profiles: MCP,
    positive: true,
    async run(ctx) {
      const url = ctx.target.mcp.protected_url ?? ctx.skip('The target names no protected MCP endpoint ("mcp.protected_url")');
      const reply = await ctx.http.send("POST", url, { body: "{}", headers: { "content-type": "application/json", accept: "application/json" } });
      ctx.check(reply.status === 401, `Without a token the MCP endpoint answered ${reply.status}, expected 401`, reply);
      const header = reply.headers.get("www-authenticate") ?? "";
      const link = /resource_metadata="([^"]+)"/i.exec(header)?.[1];
      if (link === undefined) return ctx.fail(`The 401 has no resource_metadata in WWW-Authenticate: ${JSON.stringify(header)}`, reply);
      const prm = await ctx.http.send("GET", new URL(link, url), { headers: { accept: "application/json" } });
      const body = prm.json as { resource?: unknown; authorization_servers?: unknown } | undefined;
      ctx.check(prm.status === 200 && body !== undefined, `The protected resource metadata at ${link} answered ${summary(prm)}`, prm);
      if (ctx.target.mcp.resource !== undefined) {
        ctx.check(body!.resource === ctx.target.mcp.resource, `The metadata's resource is ${JSON.stringify(body!.resource)}, expected ${ctx.target.mcp.resource}`, prm);
      }
      const servers = body!.authorization_servers;
      ctx.check(Array.isArray(servers) && servers.includes(ctx.target.issuer), `authorization_servers ${JSON.stringify(servers)} does not name ${ctx.target.issuer}`, prm);
    },
  },
  {
    id: "MCP-PRM-AUDIENCE",
    title: "The MCP endpoint takes a token issued for it, and refuses one issued for no resource",
    area: "mcp",
    ref: "MCP authorization (servers MUST validate that tokens were issued for them); RFC 8707 §2; RFC 9068 §4 (aud)",
    level: "MUST",
    profiles: MCP,
    features: ["resource_indicators"],
    needs: ["MCP-PRM-CHALLENGE", "MCP-RESOURCE-ISSUED"],
    security: true,
    async run(ctx) {
      const url = ctx.target.mcp.protected_url!;
      const call = (token: string) =>
        ctx.http.send("POST", url, {
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        });
      const bound = await call(await tokenFor(ctx, resourceOf(ctx)));
      if (bound.status === 401 || bound.status === 403) return ctx.control(() => ctx.fail(`A token for the resource was refused: ${summary(bound)}`, bound));
      const unbound = await call(await tokenFor(ctx, undefined));
      ctx.check(unbound.status === 401, `A token issued for no resource was answered ${unbound.status}, expected 401 invalid_token`, unbound);
    },
  },
  {
    id: "MCP-DCR-REGISTER",
    title: "Dynamic registration gives a public loopback client that then completes the code flow",
    area: "mcp",
    ref: "RFC 7591 §3.1, §3.2.1; MCP authorization (dynamic client registration)",
    level: "SHOULD",
    profiles: MCP,
    features: ["registration"],
    positive: true,
    async run(ctx) {
      const endpoint = await registrationEndpoint(ctx);
      const redirect = "http://127.0.0.1:33418/callback";
      const reply = await register(ctx, endpoint, redirect);
      const body = reply.json as { client_id?: unknown } | undefined;
      if (reply.status !== 201 || typeof body?.client_id !== "string") return ctx.fail(`Registration answered ${summary(reply)}, expected 201 with a client_id`, reply);
      const verifier = makeVerifier();
      const client = { client_id: body.client_id, redirect_uri: redirect, scope: ctx.target.clients.public.scope };
      const params = { ...ctx.authorizeParams(client), code_challenge: await s256(verifier), code_challenge_method: "S256" };
      const back = await ctx.approve(ctx.authorizeUrl(params));
      const code = back.searchParams.get("code");
      if (code === null) return ctx.fail(`The registered client got no code: ${back.href}`);
      const tokens = await ctx.token({ grant_type: "authorization_code", client_id: client.client_id, redirect_uri: redirect, code, code_verifier: verifier });
      ctx.check(tokens.status === 200, `The registered client's code was not redeemed: ${summary(tokens)}`, tokens);
    },
  },
  {
    id: "MCP-DCR-REDIRECT-REFUSED",
    title: "Registration refuses a plain-http redirect URI that is not a loopback one",
    area: "mcp",
    ref: "RFC 7591 §3.2.2 (invalid_redirect_uri); OAuth 2.1 §2.3.1; RFC 9700 §4.1",
    level: "MUST",
    profiles: MCP,
    features: ["registration"],
    needs: ["MCP-DCR-REGISTER"],
    security: true,
    async run(ctx) {
      const reply = await register(ctx, await registrationEndpoint(ctx), "http://attacker.example/callback");
      ctx.check(reply.status === 400, `Registering http://attacker.example/callback answered ${summary(reply)}, expected 400 invalid_redirect_uri`, reply);
      const error = (reply.json as { error?: unknown } | undefined)?.error;
      if (error !== "invalid_redirect_uri" && error !== "invalid_client_metadata") {
        ctx.fail(`Refused with ${JSON.stringify(error)}, expected invalid_redirect_uri (RFC 7591 §3.2.2)`, reply, true);
      }
    },
  },
  {
    id: "MCP-CORS-TOKEN",
    title: "The token endpoint allows a browser-based client's origin (CORS preflight and response)",
    area: "mcp",
    ref: "MCP authorization (browser-based clients); Fetch standard CORS protocol; RFC 6749 §3.2",
    level: "SHOULD",
    profiles: MCP,
    positive: true,
    async run(ctx) {
      const origin = ctx.target.mcp.origin;
      const preflight = await ctx.http.send("OPTIONS", ctx.target.token_url, {
        headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
      });
      const allowed = (r: Reply) => [origin, "*"].includes(r.headers.get("access-control-allow-origin") ?? "");
      ctx.check(preflight.status >= 200 && preflight.status < 300 && allowed(preflight), `The preflight from ${origin} was answered ${preflight.status} with Access-Control-Allow-Origin ${JSON.stringify(preflight.headers.get("access-control-allow-origin"))}`, preflight);
      const c = ctx.target.clients.client_credentials;
      const reply = await ctx.http.send("POST", ctx.target.token_url, {
        form: { grant_type: "client_credentials", client_id: c.client_id, client_secret: c.client_secret, scope: c.scope },
        headers: { origin, accept: "application/json" },
      });
      ctx.check(allowed(reply), `A token response to ${origin} lacks Access-Control-Allow-Origin`, reply);
    },
  },
  {
    id: "MCP-CORS-NOT-AUTHORIZE",
    title: "The authorization endpoint (its pages) gives no CORS access, and no endpoint allows credentials",
    area: "mcp",
    ref: "RFC 9700 §4.16 (pages only in a top-level browsing context); Fetch standard (credentialed CORS)",
    level: "MUST",
    profiles: MCP,
    needs: ["MCP-CORS-TOKEN", CONTROL.authorize],
    security: true,
    async run(ctx) {
      const origin = ctx.target.mcp.origin;
      const client = ctx.target.clients.public;
      const page = await ctx.http.send("GET", ctx.authorizeUrl(ctx.authorizeParams(client)), { headers: { origin, accept: "text/html" } });
      ctx.check(page.headers.get("access-control-allow-origin") === null, `The authorization endpoint answered ${origin} with Access-Control-Allow-Origin ${JSON.stringify(page.headers.get("access-control-allow-origin"))}`, page);
      const preflight = await ctx.http.send("OPTIONS", ctx.target.token_url, { headers: { origin, "access-control-request-method": "POST" } });
      ctx.check(preflight.headers.get("access-control-allow-credentials") !== "true", "The token endpoint allows credentialed CORS requests", preflight);
    },
  },
  {
    id: "MCP-CIMD-METADATA",
    title: "A server offering client ID metadata documents advertises client_id_metadata_document_supported: true",
    area: "mcp",
    ref: `${CIMD} §5 (Authorization Server Metadata); RFC 8414 §2; MCP authorization 2025-11-25 (client ID metadata documents)`,
    level: "MUST",
    profiles: MCP,
    features: ["client_id_metadata_documents"],
    positive: true,
    async run(ctx) {
      const m = await metadata(ctx);
      ctx.check(m.client_id_metadata_document_supported === true, `client_id_metadata_document_supported is ${JSON.stringify(m.client_id_metadata_document_supported)}: MCP clients only use a document URL as client_id when it is true`);
    },
  },
  {
    id: "MCP-CIMD-FLOW",
    title: "A client whose client_id is the URL of a valid metadata document completes the code flow with PKCE",
    area: "mcp",
    ref: `${CIMD} §3 (Client Identifier), §4.1 (Client Metadata Document: auth method none); RFC 7636 §4; MCP authorization 2025-11-25`,
    level: "MUST",
    profiles: MCP,
    features: ["client_id_metadata_documents"],
    needs: ["MCP-CIMD-METADATA"],
    positive: true,
    async run(ctx) {
      await documentFlow(ctx, await documentHost(ctx));
    },
  },
  {
    id: "MCP-CIMD-CLIENT-ID-MISMATCH",
    title: "A metadata document whose client_id is not its URL is refused: no code, no redirect",
    area: "mcp",
    ref: `${CIMD} §4.1 (the document's client_id MUST equal its URL), §4.3 (Metadata Discovery Errors); RFC 6749 §4.1.2.1`,
    level: "MUST",
    profiles: MCP,
    features: ["client_id_metadata_documents"],
    needs: ["MCP-CIMD-FLOW"],
    security: true,
    async run(ctx) {
      const host = await documentHost(ctx);
      const clientId = documentUrl(host);
      const redirect = ctx.target.clients.public.redirect_uri;
      // An impersonation: the document names another client (another URL on the same host).
      serveJson(host, clientId, document(ctx, documentUrl(host), redirect));
      return expectDocumentRefused(ctx, host, (await documentRequest(ctx, clientId, redirect)).url, "The document at the client_id URL names another client_id");
    },
  },
  {
    id: "MCP-CIMD-REDIRECT-UNLISTED",
    title: "A redirect_uri that the metadata document does not list is refused without redirecting",
    area: "mcp",
    ref: `${CIMD} §6.1 (redirect_uris and client_id); RFC 6749 §4.1.2.1, §10.6; RFC 9700 §4.1 (exact matching)`,
    level: "MUST",
    profiles: MCP,
    features: ["client_id_metadata_documents"],
    needs: ["MCP-CIMD-FLOW"],
    security: true,
    async run(ctx) {
      const host = await documentHost(ctx);
      const clientId = documentUrl(host);
      serveJson(host, clientId, document(ctx, clientId, ctx.target.clients.public.redirect_uri));
      const unlisted = "https://attacker.example/callback";
      return expectDocumentRefused(ctx, host, (await documentRequest(ctx, clientId, unlisted)).url, `The redirect_uri ${unlisted} is not in the document`);
    },
  },
  {
    id: "MCP-CIMD-NO-REDIRECT-FOLLOW",
    title: "A client_id URL that answers with a redirect is refused: the server does not follow it",
    area: "mcp",
    ref: `${CIMD} §4 (fetching the document: redirects are not followed), §6.5 (SSRF); RFC 6749 §4.1.2.1`,
    level: "MUST",
    profiles: MCP,
    features: ["client_id_metadata_documents"],
    needs: ["MCP-CIMD-FLOW"],
    security: true,
    async run(ctx) {
      const host = await documentHost(ctx);
      const clientId = documentUrl(host);
      const elsewhere = documentUrl(host);
      const redirect = ctx.target.clients.public.redirect_uri;
      // The document behind the redirect is otherwise valid for this client_id: only following it would accept it.
      host.serve(new URL(clientId).pathname, () => new Response(null, { status: 302, headers: { location: elsewhere, "cache-control": "no-store" } }));
      serveJson(host, elsewhere, document(ctx, clientId, redirect));
      return expectDocumentRefused(ctx, host, (await documentRequest(ctx, clientId, redirect)).url, `The client_id URL redirects to ${elsewhere}`);
    },
  },
];
