/**
 * Deliberately broken variants of the reference server, built without touching the core: by rewriting
 * requests and responses around its fetch handler, or by wrapping its store. Each names the case ids that
 * must catch it.
 */
import { sha256 } from "../../lib/sha256.ts";
import { DEMO_CONFIG } from "../../lib/reference/config.ts";
import type { Storage } from "../../lib/storage/types.ts";
import { s256 } from "../../conformance/pkce.ts";
import type { FeatureId, Profile } from "../../conformance/mod.ts";
import { REDIRECT_VARIANTS } from "../../conformance/cases/authorize_redirect.ts";
import { MCP_RESOURCE, referenceMcpApp } from "../../conformance/targets/reference_mcp_app.ts";
import { DOCUMENTS, type Handler, referenceApp, type TestApp, WEB_REDIRECT, webConfig } from "./reference.ts";

export interface Variant {
  name: string;
  /** The cases that must FAIL (or WARN, for a SHOULD) on this variant. */
  catches: string[];
  /** The profile to run in. Default spec. */
  profile?: Profile;
  /** Run with a redirect URI that is not a loopback one (see reference.ts WEB_REDIRECT). */
  web?: boolean;
  /** Run against the MCP deployment's target (reference-mcp.json). */
  mcp?: boolean;
  /** What the target file says the server offers (`features`), over what its metadata says. */
  features?: Partial<Record<FeatureId, boolean>>;
  build(): Promise<Handler | TestApp>;
}

const isToken = (url: URL) => url.searchParams.get("action") === "token" || url.pathname === "/token";
const isRevoke = (url: URL) => url.pathname === "/revoke";
const isMetadata = (url: URL) => url.pathname.startsWith("/.well-known/oauth-authorization-server");
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
const isAuthorize = (url: URL) => url.searchParams.get("action") === "authorize" || url.pathname === "/authorize";
const CLIENTS = new Map(DEMO_CONFIG.clients.map((c) => [c.client_id, c]));
/** The one verifier the "PKCE not checked" variant puts everywhere. */
const FIXED_VERIFIER = "conformance-fixed-verifier-0123456789-abcdefghijklmnop";

/** A copy of `request` with a new URL and/or body. */
function rebuild(request: Request, url: URL, body: string | undefined): Request {
  const init: RequestInit = { method: request.method, headers: request.headers, redirect: "manual" };
  if (body !== undefined) init.body = body;
  return new Request(url, init);
}

/** Rewrites the form body of token requests. */
function editTokenForm(inner: Handler, edit: (form: URLSearchParams, request: Request) => void | Promise<void>): Handler {
  return async (request) => {
    const url = new URL(request.url);
    if (request.method !== "POST" || !isToken(url)) return inner(request);
    const form = new URLSearchParams(await request.text());
    await edit(form, request);
    return inner(rebuild(request, url, form.toString()));
  };
}

/** Rewrites the query of authorization requests (the login and consent POSTs carry it too). */
function editAuthorizeQuery(inner: Handler, edit: (query: URLSearchParams) => void | Promise<void>): Handler {
  return async (request) => {
    const url = new URL(request.url);
    if (!isAuthorize(url)) return inner(request);
    await edit(url.searchParams);
    const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.text();
    return inner(rebuild(request, url, body));
  };
}

/** Rewrites responses to requests that `match`. */
function editResponse(inner: Handler, match: (url: URL) => boolean, edit: (response: Response, request: Request) => Response | Promise<Response>): Handler {
  return async (request) => {
    const url = new URL(request.url);
    const response = await inner(request);
    return match(url) ? edit(response, request) : response;
  };
}

/** A store whose methods are the inner store's, except `overrides`. */
function wrapStorage(inner: Storage, overrides: (inner: Storage) => Partial<Storage>): Storage {
  const replaced = overrides(inner);
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property in replaced) return replaced[property as keyof Storage];
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Replaces the form's client authentication with that of `clientId` (its demo secret, if any). */
function authenticateAs(form: URLSearchParams, clientId: string): void {
  form.set("client_id", clientId);
  form.delete("client_secret");
  const secret = CLIENTS.get(clientId)?.client_secret;
  if (secret !== undefined) form.set("client_secret", secret);
}

const base = async () => (await referenceApp()).fetch;

/**
 * A server whose redirect_uri matching is `loose`: it accepts what `loose` matches, and redirects to what was
 * presented, as a server comparing normalised URIs would.
 */
function looseRedirects(loose: (presented: string, registered: string) => boolean): () => Promise<Handler> {
  return async () => {
    const { fetch } = await referenceApp((s) => s, { config: webConfig() });
    return async (request) => {
      const url = new URL(request.url);
      const presented = url.searchParams.get("redirect_uri");
      if (!isAuthorize(url) || presented === null || presented === WEB_REDIRECT || !loose(presented, WEB_REDIRECT)) return fetch(request);
      url.searchParams.set("redirect_uri", WEB_REDIRECT);
      const body = request.method === "GET" ? undefined : await request.text();
      const response = await fetch(rebuild(request, url, body));
      const location = response.headers.get("location");
      const headers = new Headers(response.headers);
      if (location === null) {
        // The pages' form actions carry the query on: put the presented URI back, as the server saw it.
        const html = (await response.text()).split(encodeURIComponent(WEB_REDIRECT)).join(encodeURIComponent(presented));
        headers.delete("content-length");
        return new Response(html, { status: response.status, headers });
      }
      if (!location.startsWith(WEB_REDIRECT)) return response;
      headers.set("location", presented.split("#")[0] + location.slice(WEB_REDIRECT.length));
      return new Response(null, { status: response.status, headers });
    };
  };
}

/** How each planted matching bug compares a presented redirect URI with the registered one. */
const LOOSE: Record<string, (presented: string, registered: string) => boolean> = {
  "PORT": (p, r) => { const a = new URL(p), b = new URL(r); a.port = b.port; return a.href === b.href; },
  "SCHEME": (p, r) => p.replace(/^https?:/, "") === r.replace(/^https?:/, ""),
  "HOST-SUFFIX": (p, r) => { const a = new URL(p), b = new URL(r); return a.hostname.startsWith(b.hostname) && a.pathname === b.pathname; },
  "USERINFO": (p, r) => { const a = new URL(p); a.username = ""; a.password = ""; return a.href === r; },
  "DOT-SEGMENTS": (p, r) => new URL(p).href === r,
  "PERCENT-ENCODING": (p, r) => decodeURIComponent(p) === r,
  "FRAGMENT": (p, r) => p.split("#")[0] === r,
  "CASE": (p, r) => p.toLowerCase() === r.toLowerCase(),
  "TRAILING-SLASH": (p, r) => p.replace(/\/$/, "") === r.replace(/\/$/, ""),
};

const redirectVariants: Variant[] = REDIRECT_VARIANTS.map((v) => ({
  name: `redirect_uri matched ignoring ${v.what}`,
  catches: [`AUTHZ-REDIRECT-VARIANT-${v.id}`],
  web: true,
  build: looseRedirects(LOOSE[v.id]!),
}));

/** Registered clients by id, in the demo configuration. */
const isConfidential = (id: string | null) => id !== null && CLIENTS.get(id)?.client_secret !== undefined;

/** The MCP deployment, allowing this process's document host; `options` break it (see the CIMD variants). */
const mcpApp = (options: Parameters<typeof referenceMcpApp>[0] = {}) =>
  referenceMcpApp({ passwordIterations: 1, documentOrigin: DOCUMENTS.origin, ...options });

/** A document fetch that rewrites each fetched document (a resolver that trusts what it should check). */
function editDocument(edit: (document: Record<string, unknown>, url: string) => void): (request: Request) => Promise<Response> {
  return async (request) => {
    const response = await fetch(request);
    if (response.status !== 200) return response;
    const document = await response.json() as Record<string, unknown>;
    edit(document, request.url);
    return Response.json(document);
  };
}
const isPath = (path: string) => (url: URL) => url.pathname === path;

/** Rewrites a `resource` parameter the server does not serve to the one it does, in a query or a form. */
function anyResource(params: URLSearchParams): void {
  const r = params.get("resource");
  if (r !== null && r !== MCP_RESOURCE) params.set("resource", MCP_RESOURCE);
}

/** The MCP deployment with one field left out of its metadata. */
async function withoutMetadata(field: string): Promise<Handler> {
  return editResponse(await mcpApp(), isMetadata, async (response) => {
    const body = await response.json() as Record<string, unknown>;
    delete body[field];
    return Response.json(body);
  });
}

const mcpVariants: Variant[] = [
  {
    name: "metadata that does not advertise client ID metadata documents",
    catches: ["MCP-CIMD-SUPPORTED"],
    mcp: true,
    profile: "mcp",
    build: () => withoutMetadata("client_id_metadata_document_supported"),
  },
  {
    name: "client ID metadata documents served but not advertised",
    catches: ["MCP-CIMD-METADATA"],
    mcp: true,
    profile: "mcp",
    features: { client_id_metadata_documents: true },
    build: () => withoutMetadata("client_id_metadata_document_supported"),
  },
  {
    name: "metadata without the code response type",
    catches: ["MCP-METADATA-CODE"],
    mcp: true,
    profile: "mcp",
    build: () => withoutMetadata("response_types_supported"),
  },
  {
    name: "a metadata document client whose code is not redeemed",
    catches: ["MCP-CIMD-FLOW"],
    mcp: true,
    profile: "mcp",
    async build() {
      const app = await mcpApp();
      const documentClient = `client_id=${encodeURIComponent(DOCUMENTS.origin)}`;
      return async (request) =>
        isToken(new URL(request.url)) && (await request.clone().text()).includes(documentClient)
          ? Response.json({ error: "invalid_client" }, { status: 401 })
          : app(request);
    },
  },
  {
    name: "a metadata document trusted whatever client_id it names",
    catches: ["MCP-CIMD-CLIENT-ID-MISMATCH"],
    mcp: true,
    profile: "mcp",
    build: () => mcpApp({ fetchDocument: editDocument((document, url) => (document.client_id = url)) }),
  },
  {
    name: "a document client redirected to a URI its document does not list",
    catches: ["MCP-CIMD-REDIRECT-UNLISTED"],
    mcp: true,
    profile: "mcp",
    build: () =>
      mcpApp({
        fetchDocument: editDocument((document) => {
          // As if redirect_uri were checked against nothing: every URI the case may ask for is let through.
          document.redirect_uris = [...document.redirect_uris as string[], "https://attacker.example/callback"];
        }),
      }),
  },
  {
    name: "a document fetch that follows redirects",
    catches: ["MCP-CIMD-NO-REDIRECT-FOLLOW"],
    mcp: true,
    profile: "mcp",
    build: () => mcpApp({ fetchDocument: (request) => fetch(new Request(request, { redirect: "follow" })) }),
  },
  {
    name: "metadata without code_challenge_methods_supported",
    catches: ["MCP-METADATA-PKCE"],
    mcp: true,
    profile: "mcp",
    build: () => withoutMetadata("code_challenge_methods_supported"),
  },
  {
    name: "any resource accepted at the authorization endpoint",
    catches: ["MCP-RESOURCE-UNKNOWN"],
    mcp: true,
    profile: "mcp",
    async build() {
      return editTokenForm(editAuthorizeQuery(await mcpApp(), anyResource), anyResource);
    },
  },
  {
    name: "a token request that switches the resource",
    catches: ["MCP-RESOURCE-TOKEN-BOUND"],
    mcp: true,
    profile: "mcp",
    async build() {
      return editTokenForm(await mcpApp(), anyResource);
    },
  },
  {
    name: "a 401 without resource_metadata at the MCP endpoint",
    catches: ["MCP-PRM-CHALLENGE"],
    mcp: true,
    profile: "mcp",
    async build() {
      return editResponse(await mcpApp(), isPath("/mcp"), (response) => {
        const headers = new Headers(response.headers);
        headers.set("www-authenticate", 'Bearer realm="mcp"');
        return new Response(response.body, { status: response.status, headers });
      });
    },
  },
  {
    name: "an MCP endpoint that does not check the audience",
    catches: ["MCP-PRM-AUDIENCE"],
    mcp: true,
    profile: "mcp",
    build: () => mcpApp({ requireAudience: false }),
  },
  {
    name: "registration that takes any redirect URI",
    catches: ["MCP-DCR-REDIRECT-REFUSED"],
    mcp: true,
    profile: "mcp",
    async build() {
      const app = await mcpApp();
      return async (request) => {
        if (isPath("/register")(new URL(request.url)) && (await request.clone().text()).includes("attacker.example")) {
          return Response.json({ client_id: "registered-anything", redirect_uris: ["http://attacker.example/callback"] }, { status: 201 });
        }
        return app(request);
      };
    },
  },
  {
    name: "registration out of order",
    catches: ["MCP-DCR-REGISTER"],
    mcp: true,
    profile: "mcp",
    async build() {
      const app = await mcpApp();
      return (request) => isPath("/register")(new URL(request.url)) ? Promise.resolve(Response.json({ error: "server_error" }, { status: 500 })) : app(request);
    },
  },
  {
    name: "no CORS at the token endpoint",
    catches: ["MCP-CORS-TOKEN"],
    mcp: true,
    profile: "mcp",
    async build() {
      return editResponse(await mcpApp(), isToken, (response) => {
        const headers = new Headers(response.headers);
        for (const name of [...headers.keys()]) if (name.startsWith("access-control-")) headers.delete(name);
        return new Response(response.body, { status: response.status, headers });
      });
    },
  },
  {
    name: "CORS on the authorization pages",
    catches: ["MCP-CORS-NOT-AUTHORIZE"],
    mcp: true,
    profile: "mcp",
    async build() {
      return editResponse(await mcpApp(), isAuthorize, (response, request) => {
        const headers = new Headers(response.headers);
        headers.set("access-control-allow-origin", request.headers.get("origin") ?? "*");
        headers.set("access-control-allow-credentials", "true");
        return new Response(response.body, { status: response.status, headers });
      });
    },
  },
];

/** A redirect to the authorization request's redirect_uri with `error` (and state and iss), as a server sends one. */
function redirectError(request: Request, error: string): Response {
  const query = new URL(request.url).searchParams;
  const location = new URL(query.get("redirect_uri")!);
  location.searchParams.set("error", error);
  const state = query.get("state");
  if (state !== null) location.searchParams.set("state", state);
  location.searchParams.set("iss", new URL(request.url).origin);
  return new Response(null, { status: 302, headers: { location: location.href } });
}

/** A JSON body rewritten by `edit`, headers kept (but the length). */
async function editJson(response: Response, edit: (body: Record<string, unknown>) => void): Promise<Response> {
  const body = await response.json() as Record<string, unknown>;
  edit(body);
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  return new Response(JSON.stringify(body), { status: response.status, headers });
}

/** The MCP 2026-07-28 cases (conformance/cases/mcp_2026.ts), each with the bug a server might plant. */
const mcp2026Variants: Variant[] = [
  {
    name: "a request beyond the client's scopes refused outright (the spec's exact rule in an MCP deployment)",
    catches: ["MCP-SCOPE-NARROWED"],
    mcp: true,
    profile: "mcp",
    build: () => mcpApp({ configure: (c) => ({ ...c, scope_policy: "single" }) }),
  },
  {
    name: "every scope asked for granted, the one the client may not have included",
    catches: ["MCP-SCOPE-NEVER-WIDER"],
    mcp: true,
    profile: "mcp",
    async build() {
      let asked: string | null = null;
      const app = editAuthorizeQuery(await mcpApp(), (q) => void (asked = q.get("scope")));
      return editResponse(app, isToken, (response) =>
        response.status === 200 && asked !== null ? editJson(response, (body) => void (body.scope = asked)) : response);
    },
  },
  {
    name: "offline_access in the MCP endpoint's resource metadata",
    catches: ["MCP-PRM-NO-OFFLINE-ACCESS"],
    mcp: true,
    profile: "mcp",
    async build() {
      return editResponse(await mcpApp(), (url) => url.pathname.startsWith("/.well-known/oauth-protected-resource"), (response) =>
        response.status === 200 ? editJson(response, (body) => void (body.scopes_supported = [...body.scopes_supported as string[], "offline_access"])) : response);
    },
  },
  {
    name: "a 403 insufficient_scope that names no scope",
    catches: ["MCP-STEP-UP"],
    mcp: true,
    profile: "mcp",
    async build() {
      return editResponse(await mcpApp(), isPath("/mcp"), (response) => {
        if (response.status !== 403) return response;
        const headers = new Headers(response.headers);
        headers.set("www-authenticate", (headers.get("www-authenticate") ?? "").replace(/, scope="[^"]*"/, ""));
        return new Response(response.body, { status: 403, headers });
      });
    },
  },
  {
    name: "offline_access listed, but no refresh token when it is granted",
    catches: ["MCP-OFFLINE-ACCESS"],
    mcp: true,
    profile: "mcp",
    async build() {
      return editResponse(await mcpApp({ configure: (c) => ({ ...c, offline_access: true }) }), isToken, (response) =>
        response.status === 200 ? editJson(response, (body) => void delete body.refresh_token) : response);
    },
  },
  {
    name: "prompt=consent refused with invalid_request",
    catches: ["MCP-PROMPT-CONSENT"],
    mcp: true,
    profile: "mcp",
    async build() {
      const app = await mcpApp();
      return (request) => (isAuthorize(new URL(request.url)) && new URL(request.url).searchParams.get("prompt") === "consent"
        ? Promise.resolve(redirectError(request, "invalid_request"))
        : app(request));
    },
  },
  {
    name: "prompt ignored: prompt=none shows the login page",
    catches: ["MCP-PROMPT-NONE"],
    mcp: true,
    profile: "mcp",
    async build() {
      return editAuthorizeQuery(await mcpApp(), (q) => q.delete("prompt"));
    },
  },
  {
    name: "resource matched case-sensitively in scheme and host",
    catches: ["MCP-RESOURCE-CANONICAL"],
    mcp: true,
    profile: "mcp",
    async build() {
      const app = await mcpApp();
      return (request) => {
        const resource = new URL(request.url).searchParams.get("resource");
        const shouted = resource !== null && /^[^/]*[A-Z]/.test(resource.replace(/^([^:]*):\/\/([^/]*).*$/, "$1$2"));
        return isAuthorize(new URL(request.url)) && shouted ? Promise.resolve(redirectError(request, "invalid_target")) : app(request);
      };
    },
  },
  {
    name: "iss on the code, but not on error redirects",
    catches: ["MCP-ISS-EVERY-RESPONSE"],
    mcp: true,
    profile: "mcp",
    async build() {
      return editResponse(await mcpApp(), isAuthorize, (response, request) => {
        const location = response.headers.get("location");
        if (location === null || !new URL(location, request.url).searchParams.has("error")) return response;
        const url = new URL(location, request.url);
        url.searchParams.delete("iss");
        return new Response(null, { status: response.status, headers: { location: url.href } });
      });
    },
  },
  {
    name: "revocation answers an empty 200 without a content type (simple-oauth2 refuses it)",
    catches: ["MCP-REVOKE-JSON"],
    mcp: true,
    profile: "mcp",
    async build() {
      return editResponse(await mcpApp(), isRevoke, (response) =>
        response.status === 200 ? new Response(null, { status: 200, headers: { "cache-control": "no-store" } }) : response);
    },
  },
];

const moreVariants: Variant[] = [
  ...mcpVariants,
  ...redirectVariants,
  {
    name: "a loopback redirect_uri only on its registered port",
    catches: ["AUTHZ-REDIRECT-LOOPBACK-ANY-PORT"],
    profile: "oauth2.1",
    async build() {
      const app = await base();
      return async (request) => {
        const uri = new URL(request.url).searchParams.get("redirect_uri");
        const registered = [...CLIENTS.values()].some((c) => c.redirect_uris?.includes(uri ?? ""));
        if (isAuthorize(new URL(request.url)) && uri !== null && !registered) {
          return new Response("<title>Bad redirect_uri</title>", { status: 400, headers: { "content-type": "text/html" } });
        }
        return app(request);
      };
    },
  },
  {
    name: "a check-then-delete race in code redemption",
    catches: ["CONC-CODE-PARALLEL"],
    async build() {
      return referenceApp((store) =>
        wrapStorage(store, (inner) => ({
          async redeemCode(hash, tokens, now) {
            const code = await inner.findCode(hash, now);
            if (code === null) return null;
            await sleep(5);
            // Marks it redeemed, but the check above already let every racer through.
            await inner.redeemCode(hash, tokens, now);
            return code;
          },
        }))
      );
    },
  },
  {
    name: "a check-then-rotate race in refresh rotation",
    catches: ["CONC-REFRESH-PARALLEL"],
    async build() {
      return referenceApp((store) =>
        wrapStorage(store, (inner) => ({
          async rotateRefreshToken(hash, next, now, graceMs) {
            const found = await inner.findRefreshToken(hash, now);
            if (found === null) return null;
            await sleep(5);
            await inner.rotateRefreshToken(hash, next, now, graceMs);
            return found;
          },
        }))
      );
    },
  },
  {
    name: "any issued challenge's verifier accepted for any code",
    catches: ["SEC-PKCE-VERIFIER-OTHER-REQUEST"],
    async build() {
      const fixed = await s256(FIXED_VERIFIER);
      const challenges = new Set<string>();
      const app = editAuthorizeQuery(await base(), (q) => {
        const c = q.get("code_challenge");
        if (c !== null && c !== fixed) {
          challenges.add(c);
          q.set("code_challenge", fixed);
        }
      });
      return editTokenForm(app, async (form) => {
        const v = form.get("code_verifier");
        if (v !== null && challenges.has(await s256(v))) form.set("code_verifier", FIXED_VERIFIER);
      });
    },
  },
  {
    name: "PKCE taken as client authentication",
    catches: ["SEC-PKCE-NOT-CLIENT-AUTH"],
    async build() {
      return editTokenForm(await base(), (form, request) => {
        const id = form.get("client_id");
        if (form.get("grant_type") === "authorization_code" && form.has("code_verifier") && !form.has("client_secret") &&
          !request.headers.has("authorization") && isConfidential(id)) {
          form.set("client_secret", CLIENTS.get(id!)!.client_secret!);
        }
      });
    },
  },
  {
    name: "codes that never expire",
    catches: ["SEC-CODE-EXPIRED"],
    async build() {
      return referenceApp((store) =>
        wrapStorage(store, (inner) => ({
          // Every code is stored as living ten years.
          saveCode: (code, limit) => inner.saveCode({ ...code, expires_at: code.expires_at + 10 * 365 * 86_400_000 }, limit),
        }))
      );
    },
  },
  {
    name: "a confidential client's refresh token never rotated",
    catches: ["SEC-REFRESH-ROTATION-CONFIDENTIAL"],
    async build() {
      const app = await base();
      // Hands the presented token back instead of the new one, and swaps it for the newest on the next use.
      const rotated = new Map<string, string>();
      return async (request) => {
        const url = new URL(request.url);
        if (request.method !== "POST" || !isToken(url)) return app(request);
        const form = new URLSearchParams(await request.text());
        const presented = form.get("refresh_token");
        if (form.get("grant_type") !== "refresh_token" || presented === null || !isConfidential(form.get("client_id"))) {
          return app(rebuild(request, url, form.toString()));
        }
        const latest = rotated.get(presented) ?? presented;
        form.set("refresh_token", latest);
        const response = await app(rebuild(request, url, form.toString()));
        const body = await response.clone().json().catch(() => null) as Record<string, unknown> | null;
        if (response.status !== 200 || typeof body?.refresh_token !== "string") return response;
        rotated.set(presented, body.refresh_token);
        return Response.json({ ...body, refresh_token: presented }, { headers: response.headers });
      };
    },
  },
  {
    name: "a refresh token reuse that revokes nothing",
    catches: ["SEC-REFRESH-REUSE-KILLS-ALL", "SEC-REFRESH-REUSE-REVOKES"],
    async build() {
      return referenceApp((store) => wrapStorage(store, () => ({ revokeGrant: () => Promise.resolve() })));
    },
  },
  {
    name: "the implicit grant served",
    catches: ["AUTHZ-IMPLICIT-REFUSED"],
    async build() {
      const app = await base();
      return async (request) => {
        const url = new URL(request.url);
        if (!isAuthorize(url) || url.searchParams.get("response_type") !== "token") return app(request);
        url.searchParams.set("response_type", "code");
        const body = request.method === "GET" ? undefined : await request.text();
        const response = await app(rebuild(request, url, body));
        const location = response.headers.get("location");
        if (location === null || !location.includes("code=")) return response;
        const to = new URL(location);
        to.hash = `access_token=implicit-token&token_type=Bearer&state=${to.searchParams.get("state") ?? ""}`;
        to.search = "";
        return new Response(null, { status: 302, headers: { location: to.href } });
      };
    },
  },
  {
    name: "the password grant served",
    catches: ["TOKEN-PASSWORD-REFUSED"],
    async build() {
      const app = await base();
      return async (request) => {
        const url = new URL(request.url);
        if (request.method === "POST" && isToken(url) && (await request.clone().text()).includes("grant_type=password")) {
          return Response.json({ access_token: "password-token", token_type: "Bearer", expires_in: 60 }, { headers: { "cache-control": "no-store" } });
        }
        return app(request);
      };
    },
  },
  {
    name: "a Bearer token in the query accepted",
    catches: ["BEARER-QUERY-IGNORED"],
    async build() {
      const app = await base();
      return (request) => {
        const url = new URL(request.url);
        const token = url.searchParams.get("access_token");
        if (!url.pathname.startsWith("/api/") || token === null) return app(request);
        url.searchParams.delete("access_token");
        const headers = new Headers(request.headers);
        headers.set("authorization", `Bearer ${token}`);
        return app(new Request(url, { headers }));
      };
    },
  },
  {
    name: "pages that may be framed",
    catches: ["PAGES-FRAMING"],
    async build() {
      return editResponse(await base(), isAuthorize, (response) => {
        const headers = new Headers(response.headers);
        headers.delete("x-frame-options");
        headers.delete("content-security-policy");
        return new Response(response.body, { status: response.status, headers });
      });
    },
  },
  {
    name: "the consent form's CSRF token not checked",
    catches: ["PAGES-CSRF"],
    async build() {
      const app = await base();
      // Remembers the last CSRF token each session was shown, and puts it back when a POST lacks it.
      const shown = new Map<string, string>();
      return async (request) => {
        const url = new URL(request.url);
        const cookie = request.headers.get("cookie") ?? "";
        if (isAuthorize(url) && request.method === "POST") {
          const form = new URLSearchParams(await request.text());
          const token = shown.get(cookie);
          if (!form.has("csrf") && token !== undefined) form.set("csrf", token);
          return app(rebuild(request, url, form.toString()));
        }
        const response = await app(request);
        if (isAuthorize(url) && (response.headers.get("content-type") ?? "").includes("text/html")) {
          const html = await response.clone().text();
          const token = /name="csrf" value="([^"]*)"/.exec(html)?.[1];
          if (token !== undefined) shown.set(cookie, token.replace(/&amp;/g, "&"));
        }
        return response;
      };
    },
  },
  {
    name: "metadata that names another issuer",
    catches: ["META-DISCOVERY"],
    async build() {
      return editResponse(await base(), isMetadata, async (response) => {
        const body = await response.json() as Record<string, unknown>;
        return Response.json({ ...body, issuer: "https://other.example" });
      });
    },
  },
  {
    name: "metadata that leaves out a grant it serves",
    catches: ["META-CLAIMS-MATCH-BEHAVIOUR"],
    async build() {
      return editResponse(await base(), isMetadata, async (response) => {
        const body = await response.json() as Record<string, unknown>;
        return Response.json({ ...body, grant_types_supported: ["authorization_code", "client_credentials"] });
      });
    },
  },
  {
    name: "metadata that does not offer client_credentials, which the spec requires",
    catches: ["TOKEN-CC-OFFERED"],
    async build() {
      return editResponse(await base(), isMetadata, async (response) => {
        const body = await response.json() as Record<string, unknown>;
        return Response.json({ ...body, grant_types_supported: ["authorization_code", "refresh_token"] });
      });
    },
  },
  {
    name: "iss announced but not sent",
    catches: ["META-ISS-CONSISTENT"],
    async build() {
      return editResponse(await base(), isAuthorize, (response) => {
        const location = response.headers.get("location");
        if (location === null || !location.includes("iss=")) return response;
        const url = new URL(location);
        url.searchParams.delete("iss");
        const headers = new Headers(response.headers);
        headers.set("location", url.href);
        return new Response(null, { status: response.status, headers });
      });
    },
  },
  {
    name: "revocation that revokes nothing",
    catches: ["REVOKE-REFRESH-TOKEN"],
    async build() {
      const app = await base();
      return (request) => isRevoke(new URL(request.url)) ? Promise.resolve(new Response(null, { status: 200 })) : app(request);
    },
  },
  {
    name: "revocation of an unknown token refused",
    catches: ["REVOKE-UNKNOWN-TOKEN-200"],
    async build() {
      const { fetch, storage } = await referenceApp();
      return async (request) => {
        const url = new URL(request.url);
        if (!isRevoke(url)) return fetch(request);
        const token = new URLSearchParams(await request.clone().text()).get("token") ?? "";
        const hash = await sha256(token);
        const known = await storage.findRefreshToken(hash, Date.now()) ?? await storage.findAccessToken(hash, Date.now());
        return known ? fetch(request) : Response.json({ error: "invalid_request" }, { status: 400 });
      };
    },
  },
  {
    name: "revocation by any client",
    catches: ["REVOKE-OTHER-CLIENT"],
    async build() {
      const { fetch, storage } = await referenceApp();
      return async (request) => {
        const url = new URL(request.url);
        if (!isRevoke(url)) return fetch(request);
        const form = new URLSearchParams(await request.text());
        const record = await storage.findRefreshToken(await sha256(form.get("token") ?? ""), Date.now());
        if (record !== null) authenticateAs(form, record.client_id);
        return fetch(rebuild(request, url, form.toString()));
      };
    },
  },
];

export const VARIANTS: Variant[] = [
  ...moreVariants,
  ...mcp2026Variants,
  {
    name: "PKCE verifier not checked",
    catches: ["SEC-PKCE-VERIFIER-MISMATCH", "SEC-PKCE-VERIFIER-SYNTAX"],
    async build() {
      const challenge = await s256(FIXED_VERIFIER);
      let app = await base();
      app = editAuthorizeQuery(app, (q) => {
        if (q.has("code_challenge")) q.set("code_challenge", challenge);
      });
      return editTokenForm(app, (form) => {
        if (form.has("code_verifier")) form.set("code_verifier", FIXED_VERIFIER);
      });
    },
  },
  {
    name: "a code redeemable twice",
    catches: ["SEC-CODE-REPLAY"],
    async build() {
      // redeemCode stores the tokens but never marks the code redeemed.
      const app = await referenceApp((store) =>
        wrapStorage(store, (inner) => ({
          async redeemCode(hash, tokens, now) {
            const code = await inner.findCode(hash, now);
            if (code === null) return null;
            await inner.saveTokens(tokens, now);
            return code;
          },
        }))
      );
      return app.fetch;
    },
  },
  {
    name: "redirect_uri not compared at the token endpoint",
    catches: ["SEC-CODE-REDIRECT_URI-MISMATCH"],
    async build() {
      return editTokenForm(await base(), (form) => {
        const registered = CLIENTS.get(form.get("client_id") ?? "")?.redirect_uris[0];
        if (form.get("grant_type") === "authorization_code" && form.has("redirect_uri") && registered) {
          form.set("redirect_uri", registered);
        }
      });
    },
  },
  {
    name: "scope not checked against the client",
    catches: ["AUTHZ-SCOPE-NOT-ALLOWED", "TOKEN-CC-SCOPE-NOT-ALLOWED"],
    async build() {
      const all = DEMO_CONFIG.scopes.map((s) => s.name);
      const app = await referenceApp((store) =>
        wrapStorage(store, (inner) => ({
          async getClient(clientId) {
            const client = await inner.getClient(clientId);
            return client && { ...client, scopes: all };
          },
        }))
      );
      return app.fetch;
    },
  },
  {
    name: "client_credentials accepted without a secret",
    catches: ["TOKEN-CC-CLIENT_SECRET-REQUIRED"],
    async build() {
      return editTokenForm(await base(), (form, request) => {
        const secret = CLIENTS.get(form.get("client_id") ?? "")?.client_secret;
        if (form.get("grant_type") === "client_credentials" && !form.has("client_secret") && !request.headers.has("authorization") && secret) {
          form.set("client_secret", secret);
        }
      });
    },
  },
  {
    name: "no Cache-Control: no-store",
    catches: ["RESP-NO-STORE"],
    async build() {
      return editResponse(await base(), isToken, (response) => {
        const headers = new Headers(response.headers);
        headers.delete("cache-control");
        return new Response(response.body, { status: response.status, headers });
      });
    },
  },
  {
    name: "errors redirected to an unregistered redirect_uri",
    catches: ["AUTHZ-REDIRECT-UNREGISTERED-NO-REDIRECT", "AUTHZ-REDIRECT-EXACT-MATCH"],
    async build() {
      return editResponse(await base(), isAuthorize, (response, request) => {
        const uri = new URL(request.url).searchParams.get("redirect_uri");
        if (response.status !== 400 || uri === null || !URL.canParse(uri)) return response;
        const location = new URL(uri);
        location.searchParams.set("error", "invalid_request");
        return new Response(null, { status: 302, headers: { location: location.href } });
      });
    },
  },
  {
    name: "a refresh token usable by another client",
    catches: ["SEC-REFRESH-CLIENT-BINDING"],
    async build() {
      const { fetch, storage } = await referenceApp();
      return editTokenForm(fetch, async (form) => {
        const token = form.get("refresh_token");
        if (form.get("grant_type") !== "refresh_token" || token === null) return;
        // Present the token on behalf of its owner, whoever sent it.
        const record = await storage.findRefreshToken(await sha256(token), Date.now());
        if (record !== null && record.client_id !== form.get("client_id")) authenticateAs(form, record.client_id);
      });
    },
  },
  {
    name: "a rotated refresh token still accepted",
    catches: ["SEC-REFRESH-ROTATED-REJECTED"],
    async build() {
      const app = await base();
      const newer = new Map<string, string>();
      return async (request) => {
        const url = new URL(request.url);
        if (request.method !== "POST" || !isToken(url)) return app(request);
        const form = new URLSearchParams(await request.text());
        let token = form.get("refresh_token");
        if (form.get("grant_type") !== "refresh_token" || token === null) return app(rebuild(request, url, form.toString()));
        // Swap a rotated token for the newest of its chain.
        while (newer.has(token)) token = newer.get(token)!;
        const sent = token;
        form.set("refresh_token", sent);
        const response = await app(rebuild(request, url, form.toString()));
        const body = await response.clone().json().catch(() => null) as { refresh_token?: string } | null;
        if (response.status === 200 && body?.refresh_token) newer.set(sent, body.refresh_token);
        return response;
      };
    },
  },
  {
    name: "two scopes accepted in one request",
    catches: ["AUTHZ-SCOPE-TWO", "TOKEN-CC-SCOPE-TWO"],
    async build() {
      const first = (params: URLSearchParams) => {
        const scope = params.get("scope");
        if (scope !== null && scope.includes(" ")) params.set("scope", scope.split(" ")[0]!);
      };
      return editTokenForm(editAuthorizeQuery(await base(), first), first);
    },
  },
  {
    name: "state dropped from the redirect",
    catches: ["AUTHZ-STATE-PASSTHROUGH", "AUTHZ-DENY-ACCESS_DENIED"],
    async build() {
      return editResponse(await base(), isAuthorize, (response) => {
        const location = response.headers.get("location");
        if (location === null || !location.startsWith("http://127.0.0.1:9999/")) return response;
        const url = new URL(location);
        url.searchParams.delete("state");
        const headers = new Headers(response.headers);
        headers.set("location", url.href);
        return new Response(null, { status: response.status, headers });
      });
    },
  },
  {
    name: "repeated parameters collapsed instead of refused",
    catches: ["TOKEN-PARAM-REPEATED", "AUTHZ-PARAM-REPEATED"],
    async build() {
      const dedupe = (params: URLSearchParams) => {
        const seen = new Map<string, string>();
        for (const [k, v] of params) if (!seen.has(k)) seen.set(k, v);
        for (const k of [...params.keys()]) params.delete(k);
        for (const [k, v] of seen) params.append(k, v);
      };
      return editTokenForm(editAuthorizeQuery(await base(), dedupe), dedupe);
    },
  },
  {
    name: "a public client gets tokens without PKCE",
    catches: ["SEC-PKCE-PUBLIC-REQUIRED"],
    async build() {
      const challenge = await s256(FIXED_VERIFIER);
      const isPublic = (id: string | null) => id !== null && CLIENTS.get(id)?.client_secret === undefined;
      const app = editAuthorizeQuery(await base(), (q) => {
        if (isPublic(q.get("client_id")) && !q.has("code_challenge")) {
          q.set("code_challenge", challenge);
          q.set("code_challenge_method", "S256");
        }
      });
      return editTokenForm(app, (form) => {
        if (form.get("grant_type") === "authorization_code" && isPublic(form.get("client_id")) && !form.has("code_verifier")) {
          form.set("code_verifier", FIXED_VERIFIER);
        }
      });
    },
  },
  {
    name: "a code redeemable by another client",
    catches: ["SEC-CODE-CLIENT-BINDING"],
    async build() {
      const { fetch, storage } = await referenceApp();
      return editTokenForm(fetch, async (form) => {
        const code = form.get("code");
        if (form.get("grant_type") !== "authorization_code" || code === null) return;
        const record = await storage.findCode(await sha256(code), Date.now());
        if (record !== null && record.client_id !== form.get("client_id")) authenticateAs(form, record.client_id);
      });
    },
  },
  {
    name: "401 without WWW-Authenticate at the token endpoint",
    catches: ["TOKEN-BASIC-AUTH-WRONG-401"],
    async build() {
      return editResponse(await base(), isToken, (response) => {
        const headers = new Headers(response.headers);
        headers.delete("www-authenticate");
        return new Response(response.body, { status: response.status, headers });
      });
    },
  },
  {
    name: "no Bearer challenge at the resource",
    catches: ["BEARER-MISSING", "BEARER-INVALID"],
    async build() {
      return editResponse(await base(), (url) => url.pathname.startsWith("/api/"), (response) => {
        const headers = new Headers(response.headers);
        headers.delete("www-authenticate");
        return new Response(response.body, { status: response.status, headers });
      });
    },
  },
];
