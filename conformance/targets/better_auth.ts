/**
 * better-auth 1.7 with its MCP plugin (`@better-auth/mcp`, which is `@better-auth/oauth-provider` configured for
 * MCP) and the JWT plugin, as a conformance target: a server nobody here wrote. It runs on Node's built-in
 * SQLite (`node:sqlite`, through better-auth's own Kysely dialect for it), in memory, migrated at start by
 * better-auth's `getMigrations`. Starts on a free loopback port and prints
 * `listening on http://127.0.0.1:PORT/api/auth` (its issuer); stops by itself after ten minutes.
 *
 *   npx tsx conformance/cli.ts --target conformance/targets/better-auth.json \
 *     --serve "tsx conformance/targets/better_auth.ts" --expect conformance/targets/better-auth.expect.jsonc
 *
 * The plugin asks the application for its sign-in and consent pages: here two plain HTML forms that post the
 * signed authorization query back to better-auth's own endpoints (`/sign-in/email`, `/oauth2/consent`), as its
 * client helper does in a browser. The clients of `better-auth.json` are created with
 * `adminCreateOAuthClient` at start, their ids and secrets given through the plugin's `generateClientId` and
 * `generateClientSecret` options.
 *
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import { DatabaseSync } from "node:sqlite";
import { createMcpProtectedRequestHandler, mcp } from "@better-auth/mcp";
import { betterAuth } from "better-auth";
import { getMigrations } from "better-auth/db/migration";
import { jwt } from "better-auth/plugins";

const server = createServer();
await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
const { port } = server.address() as AddressInfo;
const origin = `http://127.0.0.1:${port}`;
const issuer = `${origin}/api/auth`;
const resource = `${issuer}/mcp`;
const REDIRECT = "http://127.0.0.1:9999/callback";
const USER = { email: "conformance-user@example.test", password: "conformance-password" };

const db = new DatabaseSync(":memory:");

/** The id and secret the next created client gets (the target file's); random once start-up is done. */
let next: { id: string; secret?: string } | undefined;

const auth = betterAuth({
  baseURL: origin,
  secret: "conformance-better-auth-secret-0123456789abcdef",
  database: db,
  emailAndPassword: { enabled: true },
  // The JWT plugin's own /token would shadow nothing here, but its docs ask for it off next to the provider.
  disabledPaths: ["/token"],
  logger: { level: "error" },
  plugins: [
    jwt(),
    // Cast: better-auth's plugin types do not check under this repository's exactOptionalPropertyTypes.
    mcp({
      loginPage: "/sign-in",
      consentPage: "/consent",
      resource,
      scopes: ["reports.read", "reports.write", "exports", "admin", "offline_access"],
      allowDynamicClientRegistration: true,
      allowUnauthenticatedClientRegistration: true,
      // Client administration: the test user may set a client_credentials client's scopes (the one action that
      // needs a privileges callback).
      clientPrivileges: () => true,
      generateClientId: () => next?.id as string,
      generateClientSecret: () => next?.secret as string,
    }) as never,
  ],
});
/** The plugin's server-side endpoints, typed as called here (the cast above hides them from `auth.api`). */
const api = auth.api as unknown as {
  adminCreateOAuthClient(input: { headers: Headers; body: Record<string, unknown> }): Promise<unknown>;
  signUpEmail(input: { body: Record<string, string>; returnHeaders: true }): Promise<{ headers: Headers }>;
};

const { runMigrations } = await getMigrations(auth.options);
await runMigrations();
// Clients are created by a signed-in user (the endpoint asks for a session): the test user, signed up here.
const signedUp = await api.signUpEmail({ body: { email: USER.email, password: USER.password, name: "Conformance user" }, returnHeaders: true });
const session = signedUp.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
const clients = [
  { id: "spa", secret: undefined, scope: "reports.read reports.write offline_access", grants: ["authorization_code", "refresh_token"], redirect: REDIRECT },
  { id: "web", secret: "web-secret-0123456789", scope: "reports.read reports.write offline_access", grants: ["authorization_code", "refresh_token"], redirect: REDIRECT },
  { id: "backend", secret: "backend-secret-0123456789", scope: "exports reports.read", grants: ["client_credentials"], redirect: undefined },
  { id: "other", secret: undefined, scope: "reports.read", grants: ["authorization_code", "refresh_token"], redirect: "http://127.0.0.1:9999/other" },
];
for (const c of clients) {
  next = c.secret === undefined ? { id: c.id } : { id: c.id, secret: c.secret };
  await api.adminCreateOAuthClient({
    headers: new Headers({ cookie: session }),
    body: {
      client_name: c.id,
      // Loopback http redirect URIs are for native apps (RFC 8252 §7.3); better-auth refuses them for web clients.
      ...(c.redirect === undefined ? { client_credentials_scopes: c.scope.split(" ") } : { redirect_uris: [c.redirect], application_type: "native" }),
      grant_types: c.grants,
      response_types: c.grants.includes("authorization_code") ? ["code"] : [],
      // The spec sends the secret in the body (client_secret_post); better-auth holds a client to the one method it
      // registered with.
      token_endpoint_auth_method: c.secret === undefined ? "none" : "client_secret_post",
      scope: c.scope,
      // The spec's confidential client redeems its code with its secret and no PKCE (better-auth's per-client
      // setting; it requires PKCE of every client by default).
      ...(c.secret !== undefined && c.redirect !== undefined ? { require_pkce: false } : {}),
    },
  });
}
next = undefined;

const escape = (value: string) => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const PAGE = { "content-type": "text/html; charset=utf-8", "x-frame-options": "DENY", "content-security-policy": "frame-ancestors 'none'", "cache-control": "no-store" };

/** The signed authorization query a page was opened with, as better-auth's client helper sends it back. */
const signedQuery = (url: URL) => url.search.slice(1);

/** Calls one of better-auth's endpoints as its browser client would (JSON, the cookies of the page's request). */
async function call(path: string, request: Request, body: Record<string, unknown>): Promise<Response> {
  return auth.handler(new Request(`${issuer}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", cookie: request.headers.get("cookie") ?? "", origin },
    body: JSON.stringify(body),
  }));
}

/** better-auth answers the page's call with JSON naming where to go: send the browser there, with its cookies. */
async function follow(answer: Response): Promise<Response> {
  const body = await answer.json().catch(() => ({})) as { url?: unknown; redirect_uri?: unknown };
  const headers = new Headers({ "cache-control": "no-store" });
  for (const cookie of answer.headers.getSetCookie()) headers.append("set-cookie", cookie);
  const to = typeof body.url === "string" ? body.url : typeof body.redirect_uri === "string" ? body.redirect_uri : undefined;
  if (!answer.ok || to === undefined) return new Response(`Refused: ${escape(JSON.stringify(body))}`, { status: answer.ok ? 400 : answer.status, headers: { "content-type": "text/plain" } });
  headers.set("location", new URL(to, origin).href);
  return new Response(null, { status: 302, headers });
}

async function pages(request: Request): Promise<Response | undefined> {
  const url = new URL(request.url);
  if (url.pathname === "/sign-in" && request.method === "GET") {
    return new Response(
      `<!doctype html><meta charset="utf-8"><title>Sign in</title><h1>Sign in</h1><form method="post">` +
        `<input type="hidden" name="oauth_query" value="${escape(signedQuery(url))}">` +
        `<input type="email" name="email"> <input type="password" name="password"> <button type="submit">Sign in</button></form>`,
      { headers: PAGE },
    );
  }
  if (url.pathname === "/sign-in" && request.method === "POST") {
    const form = await request.formData();
    return follow(await call("/sign-in/email", request, { email: form.get("email"), password: form.get("password"), oauth_query: form.get("oauth_query") }));
  }
  if (url.pathname === "/consent" && request.method === "GET") {
    return new Response(
      `<!doctype html><meta charset="utf-8"><title>Consent</title><h1>Allow ${escape(url.searchParams.get("client_id") ?? "")}?</h1>` +
        `<p>${escape(url.searchParams.get("scope") ?? "")}</p><form method="post">` +
        `<input type="hidden" name="oauth_query" value="${escape(signedQuery(url))}">` +
        `<button name="accept" value="true">Allow</button> <button name="accept" value="false">Deny</button></form>`,
      { headers: PAGE },
    );
  }
  if (url.pathname === "/consent" && request.method === "POST") {
    const form = await request.formData();
    return follow(await call("/oauth2/consent", request, { accept: form.get("accept") === "true", oauth_query: form.get("oauth_query") }));
  }
  return undefined;
}

/** The MCP route, guarded by the plugin's resource-server helper: a JSON-RPC ping, or the reports the Bearer cases read. */
const protectedMcp = createMcpProtectedRequestHandler(
  { issuer, audience: resource, jwksUrl: `${issuer}/jwks` },
  (request) => request.method === "GET" ? Response.json({ reports: [] }) : Response.json({ jsonrpc: "2.0", id: 1, result: {} }),
);

async function handle(request: Request): Promise<Response> {
  const path = new URL(request.url).pathname;
  if (path === "/api/auth/mcp" || path.startsWith("/api/auth/mcp/")) return protectedMcp(request);
  return await pages(request) ?? auth.handler(request);
}

/** node:http to fetch and back. */
async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.set(name, value);
  }
  // Node's fetch, the suite's client, marks every request `Sec-Fetch-Mode: cors`, which no browser navigation
  // carries; better-auth then answers a redirect as JSON for a script. A page request of the driver (HTML
  // accepted, no Origin) is a navigation: say so.
  if (headers.get("sec-fetch-mode") === "cors" && headers.get("origin") === null && (headers.get("accept") ?? "").includes("text/html")) {
    headers.set("sec-fetch-mode", "navigate");
  }
  const body = chunks.length > 0 && req.method !== "GET" && req.method !== "HEAD" ? Buffer.concat(chunks) : undefined;
  const response = await handle(new Request(`${origin}${req.url}`, { method: req.method!, headers, ...(body === undefined ? {} : { body }) }));
  const out: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") out[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) out["set-cookie"] = cookies;
  res.writeHead(response.status, out);
  res.end(Buffer.from(await response.arrayBuffer()));
}

server.on("request", (req, res) => {
  serve(req, res).catch((error: unknown) => {
    console.error(error);
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
    res.end("internal error");
  });
});
console.log(`listening on ${issuer}`);
setTimeout(() => process.exit(0), 600_000).unref();
process.on("SIGTERM", () => process.exit(0));
