/**
 * The Worker behind workers_oauth_provider.ts: @cloudflare/workers-oauth-provider's `OAuthProvider` as its
 * documentation sets it up, with the smallest login and consent pages its helpers allow. It runs in real
 * workerd, on a KV namespace that workerd's own KV service keeps on disk; bundled by the launcher.
 *
 * The provider owns the token, revocation, registration and metadata endpoints and the MCP route; this file
 * owns /authorize (sign-in, consent, the scope policy), as the library leaves those to the application.
 */
import {
  AuthorizationError,
  authorizationErrorRedirect,
  getOAuthApi,
  type OAuthHelpers,
  OAuthProvider,
  type OAuthProviderOptions,
} from "@cloudflare/workers-oauth-provider";

interface Env {
  OAUTH_KV: KVNamespace;
  /** `http://127.0.0.1:PORT`, from the launcher. */
  ORIGIN: string;
  OAUTH_PROVIDER: OAuthHelpers;
}

// Structural types of the two bindings used here, so the file needs no workers-types package.
interface KVNamespace {
  get(key: string): Promise<string | null>;
  put(key: string, value: string): Promise<void>;
}

const USER = { username: "conformance-user", password: "conformance-password" };
/** The scopes each pre-registered client may be granted: the application's policy, not the library's. */
const CLIENT_SCOPES: Record<string, string[]> = {
  spa: ["reports.read", "reports.write"],
  web: ["reports.read", "reports.write"],
  backend: ["exports", "reports.read"],
  other: ["reports.read"],
};
const SESSIONS = new Set<string>();

const escape = (value: string) => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const PAGE_HEADERS = { "content-type": "text/html; charset=utf-8", "x-frame-options": "DENY", "content-security-policy": "frame-ancestors 'none'", "cache-control": "no-store" };

function session(request: Request): boolean {
  const cookie = /(?:^|;\s*)sid=([^;]+)/.exec(request.headers.get("cookie") ?? "")?.[1];
  return cookie !== undefined && SESSIONS.has(cookie);
}

function loginPage(error = ""): Response {
  return new Response(
    `<!doctype html><meta charset="utf-8"><title>Sign in</title><h1>Sign in</h1>${error ? `<p>${escape(error)}</p>` : ""}` +
      `<form method="post"><input name="username" autocomplete="username"> <input type="password" name="password">` +
      `<button type="submit">Sign in</button></form>`,
    { status: error ? 401 : 200, headers: PAGE_HEADERS },
  );
}

async function authorize(request: Request, env: Env): Promise<Response> {
  const oauth = env.OAUTH_PROVIDER;
  try {
    if (request.method === "POST") {
      const form = await request.formData();
      if (form.has("password")) {
        if (form.get("username") !== USER.username || form.get("password") !== USER.password) return loginPage("Wrong user name or password.");
        const sid = crypto.randomUUID();
        SESSIONS.add(sid);
        return new Response(null, { status: 303, headers: { location: request.url, "set-cookie": `sid=${sid}; Path=/; HttpOnly; SameSite=Lax` } });
      }
      const handle = String(form.get("handle") ?? "");
      if (form.get("decision") !== "approve") {
        const denied = await oauth.denyConsent(request, handle);
        return new Response(null, { status: 302, headers: denied.headers });
      }
      const approved = await oauth.approveConsent(request, handle);
      const { redirectTo } = await oauth.completeAuthorization({
        request: approved.request,
        userId: USER.username,
        metadata: {},
        scope: approved.request.scope,
        props: { userId: USER.username },
      });
      approved.headers.set("location", redirectTo);
      return new Response(null, { status: 302, headers: approved.headers });
    }
    const authRequest = await oauth.parseAuthRequest(request);
    // The application's scope policy: one the client may not have is refused (RFC 6749 §4.1.2.1).
    // Clients registered at run time (DCR) get the user-facing scopes.
    const allowed = CLIENT_SCOPES[authRequest.clientId] ?? ["reports.read", "reports.write"];
    if (authRequest.scope.some((s: string) => !allowed.includes(s))) {
      return Response.redirect(authorizationErrorRedirect(authRequest, "invalid_scope"), 302);
    }
    if (!session(request)) return loginPage();
    const details = await oauth.describeConsent(authRequest);
    const consent = await oauth.beginConsent(authRequest);
    consent.headers.set("content-type", "text/html; charset=utf-8");
    return new Response(
      `<!doctype html><meta charset="utf-8"><title>Authorize ${escape(details.clientName)}</title>` +
        `<h1>Allow ${escape(details.clientName)} to access your account?</h1>` +
        `<p>Access will be sent to <strong>${escape(details.redirectHost)}</strong>: ${escape(details.scope.join(" "))}.</p>` +
        `<form method="post"><input type="hidden" name="handle" value="${escape(consent.handle)}">` +
        `<button name="decision" value="approve">Allow</button> <button name="decision" value="deny">Deny</button></form>`,
      { headers: consent.headers },
    );
  } catch (error) {
    if (error instanceof AuthorizationError && error.redirectTo) return Response.redirect(error.redirectTo, 302);
    if (error instanceof AuthorizationError) return new Response(escape(error.description), { status: 400, headers: { "content-type": "text/plain; charset=utf-8" } });
    throw error;
  }
}

/**
 * Registers the target file's clients once, with the ids and secrets it names: `createClient()` picks both at
 * random, so the record it writes is re-keyed, and its secret hash (SHA-256, hex, as the storage schema has it)
 * replaced with the target's.
 */
async function seed(oauth: OAuthHelpers, env: Env): Promise<void> {
  if (await env.OAUTH_KV.get("client:spa") !== null) return;
  const redirect = "http://127.0.0.1:9999/callback";
  const clients = [
    { id: "spa", redirect, secret: undefined },
    { id: "web", redirect, secret: "web-secret-0123456789" },
    { id: "backend", redirect, secret: "backend-secret-0123456789" },
    { id: "other", redirect: "http://127.0.0.1:9999/other", secret: undefined },
  ];
  for (const c of clients) {
    const created = await oauth.createClient({
      clientName: c.id,
      redirectUris: [c.redirect],
      ...(c.secret === undefined ? { tokenEndpointAuthMethod: "none" } : {}),
    });
    const record = JSON.parse((await env.OAUTH_KV.get(`client:${created.clientId}`))!);
    record.clientId = c.id;
    if (c.secret !== undefined) {
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(c.secret)));
      record.clientSecret = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    }
    await env.OAUTH_KV.put(`client:${c.id}`, JSON.stringify(record));
  }
}

/** The MCP route: answers a JSON-RPC ping, or the reports the Bearer cases read. */
const mcp = {
  fetch(request: Request): Response {
    if (request.method === "GET") return Response.json({ reports: [] });
    return Response.json({ jsonrpc: "2.0", id: 1, result: {} });
  },
};

/** The provider's options: its documented single-Worker setup, with DCR and CIMD on. */
function options(env: Env): OAuthProviderOptions<Env> {
  return {
      apiRoute: "/mcp",
      apiHandler: mcp,
      defaultHandler: { fetch: (req: Request, e: Env) => authorize(req, e) },
      authorizeEndpoint: "/authorize",
      tokenEndpoint: "/token",
      clientRegistrationEndpoint: "/register",
      scopesSupported: ["reports.read", "reports.write", "exports", "admin"],
      resourceMetadata: { resource: `${env.ORIGIN}/mcp`, authorization_servers: [env.ORIGIN] },
      requiredScopes: ["reports.read"],
      clientIdMetadataDocumentEnabled: true,
  } as OAuthProviderOptions<Env>;
}

let provider: OAuthProvider<Env> | undefined;
let seeded: Promise<void> | undefined;

export default {
  async fetch(request: Request, env: Env, ctx: unknown): Promise<Response> {
    provider ??= new OAuthProvider<Env>(options(env));
    seeded ??= seed(getOAuthApi(options(env), env), env);
    await seeded;
    return provider.fetch(request, env, ctx as never);
  },
};
