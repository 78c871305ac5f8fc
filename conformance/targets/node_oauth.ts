/**
 * @node-oauth/oauth2-server (a devDependency) as a conformance target: a server nobody here wrote. The
 * library brings the OAuth endpoints' logic but no HTTP server, pages or storage, so this launcher adds the
 * smallest honest ones: a node:http server, an in-memory model written the way its documentation describes,
 * one login-and-consent page (with a CSRF token and no framing) and a protected resource. Prints
 * `listening on http://127.0.0.1:PORT` and stops by itself after ten minutes.
 *
 *   npx tsx conformance/cli.ts --target conformance/targets/node-oauth.json \
 *     --serve "tsx conformance/targets/node_oauth.ts" --expect conformance/targets/node-oauth.expect.jsonc
 *
 * The library's options are its defaults except: refresh tokens for public clients need no client secret
 * (`requireClientAuthentication: { refresh_token: false }`), as the public client has none.
 *
 * @module
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import OAuth2Server from "@node-oauth/oauth2-server";

const { Request, Response } = OAuth2Server;
type Client = OAuth2Server.Client & { secret?: string; scopes: string[] };
type User = { id: string };

const REDIRECT = "http://127.0.0.1:9999/callback";
const USER = { username: "conformance-user", password: "conformance-password" };

const CLIENTS: Client[] = [
  { id: "spa", redirectUris: [REDIRECT], grants: ["authorization_code", "refresh_token"], scopes: ["reports.read", "reports.write"] },
  { id: "web", secret: "web-secret-0123456789", redirectUris: [REDIRECT], grants: ["authorization_code", "refresh_token"], scopes: ["reports.read", "reports.write"] },
  { id: "backend", secret: "backend-secret-0123456789", grants: ["client_credentials"], scopes: ["exports", "reports.read"] },
  { id: "other", redirectUris: ["http://127.0.0.1:9999/other"], grants: ["authorization_code", "refresh_token"], scopes: ["reports.read"] },
];

const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
const tokens = new Map<string, OAuth2Server.Token>();
const refreshTokens = new Map<string, OAuth2Server.RefreshToken>();
const codes = new Map<string, OAuth2Server.AuthorizationCode>();

/** The model, as the library's documentation describes each method. */
const model: OAuth2Server.AuthorizationCodeModel & OAuth2Server.ClientCredentialsModel & OAuth2Server.RefreshTokenModel = {
  // "clientSecret ... may be null": the library then decided no authentication is required.
  getClient(clientId: string, clientSecret: string | null) {
    const client = CLIENTS.find((c) => c.id === clientId);
    if (!client) return Promise.resolve(false);
    if (clientSecret !== null && clientSecret !== undefined && (client.secret === undefined || !same(clientSecret, client.secret))) return Promise.resolve(false);
    return Promise.resolve(client);
  },
  saveToken(token, client, user) {
    const saved = { ...token, client, user };
    tokens.set(token.accessToken, saved);
    if (token.refreshToken) refreshTokens.set(token.refreshToken, saved as OAuth2Server.RefreshToken);
    return Promise.resolve(saved);
  },
  getAccessToken: (accessToken) => Promise.resolve(tokens.get(accessToken) ?? false),
  getRefreshToken: (refreshToken) => Promise.resolve(refreshTokens.get(refreshToken) ?? false),
  // Map.delete is atomic here: one process, one thread.
  revokeToken: (token) => Promise.resolve(refreshTokens.delete(token.refreshToken)),
  saveAuthorizationCode(code, client, user) {
    const saved = { ...code, client, user } as OAuth2Server.AuthorizationCode;
    codes.set(code.authorizationCode, saved);
    return Promise.resolve(saved);
  },
  getAuthorizationCode: (code) => Promise.resolve(codes.get(code) ?? false),
  revokeAuthorizationCode: (code) => Promise.resolve(codes.delete(code.authorizationCode)),
  getUserFromClient: (client) => Promise.resolve({ id: `client:${client.id}` }),
  validateScope(_user, client, scope) {
    const asked = scope ?? [];
    const allowed = (client as Client).scopes;
    return Promise.resolve(asked.length > 0 && asked.every((s) => allowed.includes(s)) ? asked : false);
  },
  verifyScope(token, scope) {
    const has = token.scope ?? [];
    return Promise.resolve(scope.every((s) => has.includes(s)));
  },
};

const oauth = new OAuth2Server({ model, requireClientAuthentication: { refresh_token: false } });
const csrf = new Set<string>();

function page(action: string, token: string, message = ""): string {
  const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
  return `<!DOCTYPE html><title>Sign in and authorize</title><p>${esc(message)}</p>
<form method="post" action="${esc(action)}">
<input type="hidden" name="csrf_token" value="${token}">
<label>User <input type="text" name="username"></label> <label>Password <input type="password" name="password"></label>
<button type="submit" name="allowed" value="true">Allow</button> <button type="submit" name="allowed" value="false">Deny</button>
</form>`;
}

type Params = Record<string, string | string[]>;

/** Parameters as Express's urlencoded parser gives them: a repeated name becomes an array. */
function params(search: URLSearchParams): Params {
  const out: Params = {};
  for (const [k, v] of search) {
    const had = out[k];
    out[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
  }
  return out;
}

/** The body: form-encoded (or JSON, as Express's json parser would read it). */
async function readBody(req: IncomingMessage): Promise<Params> {
  let text = "";
  for await (const chunk of req) text += chunk;
  if (/^application\/json/i.test(req.headers["content-type"] ?? "")) {
    try {
      return JSON.parse(text) as Params;
    } catch {
      return {};
    }
  }
  return params(new URLSearchParams(text));
}

/** Writes the library's response; an error it threw becomes its status and error body. */
function send(res: ServerResponse, r: OAuth2Server.Response, error?: unknown): void {
  for (const [k, v] of Object.entries(r.headers ?? {})) res.setHeader(k, v as string);
  res.statusCode = r.status ?? 200;
  let body = r.body as Record<string, unknown> | undefined;
  const e = error as { code?: number; name?: string; message?: string } | undefined;
  if (e !== undefined) {
    res.statusCode = e.code ?? 500;
    body = { error: e.name ?? "server_error", error_description: e.message ?? "" };
  }
  if (body !== undefined && Object.keys(body).length > 0) {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(body));
  } else res.end();
}

const HTML = { "content-type": "text/html; charset=utf-8", "x-frame-options": "DENY", "content-security-policy": "frame-ancestors 'none'", "cache-control": "no-store" };

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://127.0.0.1");
  const query = params(url.searchParams);
  if (url.pathname === "/authorize" && req.method === "GET") {
    const client = CLIENTS.find((c) => c.id === query.client_id);
    // Never render a page (and so never redirect) for an unknown client or an unregistered redirect_uri.
    if (!client || (query.redirect_uri !== undefined && !client.redirectUris?.includes(String(query.redirect_uri)))) {
      res.writeHead(400, HTML).end(page("", "", "Unknown client or redirect_uri"));
      return;
    }
    const token = randomBytes(16).toString("hex");
    csrf.add(token);
    res.writeHead(200, HTML).end(page(url.pathname + url.search, token));
    return;
  }
  if (url.pathname === "/authorize" && req.method === "POST") {
    const body = await readBody(req);
    if (!csrf.delete(String(body.csrf_token ?? ""))) {
      res.writeHead(403, HTML).end(page("", "", "The form expired"));
      return;
    }
    const known = same(String(body.username ?? ""), USER.username) && same(String(body.password ?? ""), USER.password);
    if (!known) {
      const token = randomBytes(16).toString("hex");
      csrf.add(token);
      res.writeHead(200, HTML).end(page(url.pathname + url.search, token, "Wrong user or password"));
      return;
    }
    const request = new Request({ method: "POST", query: query as Record<string, string>, headers: req.headers as Record<string, string>, body: { allowed: body.allowed } });
    const response = new Response();
    const user: User = { id: USER.username };
    try {
      await oauth.authorize(request, response, { authenticateHandler: { handle: () => user } });
    } catch (error) {
      if (!response.headers?.location) {
        const e = error as { code?: number; name?: string; message?: string };
        res.writeHead(e.code ?? 400, HTML).end(page("", "", `${e.name}: ${e.message}`));
        return;
      }
    }
    send(res, response);
    return;
  }
  if (url.pathname === "/token") {
    const body = req.method === "POST" ? await readBody(req) : {};
    const request = new Request({ method: req.method ?? "GET", query: query as Record<string, string>, headers: req.headers as Record<string, string>, body: body as Record<string, string> });
    const response = new Response();
    const error = await oauth.token(request, response).then(() => undefined, (e: unknown) => e);
    send(res, response, error);
    return;
  }
  if (url.pathname === "/api/reports") {
    const request = new Request({ method: req.method ?? "GET", query: query as Record<string, string>, headers: req.headers as Record<string, string>, body: {} });
    const response = new Response();
    const error = await oauth.authenticate(request, response, { scope: ["reports.read"] }).then(() => undefined, (e: unknown) => e);
    if (error === undefined) response.body = { reports: [] };
    send(res, response, error);
    return;
  }
  res.writeHead(404, { "content-type": "text/plain" }).end("not found");
}

const server = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    res.statusCode = 500;
    res.end(String(error));
  });
});
await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
setTimeout(() => process.exit(0), 600_000).unref();
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => process.exit(0));
