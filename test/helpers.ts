/**
 * Test fixtures: a server with an injected clock and the spec's three client kinds, and helpers that drive
 * the flows through `server.fetch` only (no sockets, no internals), so the same files run on every runtime.
 */
import { type AccessTokenInfo, createAuthorizationServer, type AuthorizationServer, type AuthorizationServerOptions } from "../mod.ts";
import { base64url } from "../lib/crypto.ts";
import type { MemoryStorage } from "../lib/storage/memory.ts";
import { memoryStorage } from "../lib/storage/memory.ts";

export const ISSUER = "https://auth.example.com";
export const REDIRECT = "https://app.example.com/callback";
export const OTHER_REDIRECT = "https://app.example.com/other";
export const TOKEN_URL: string = `${ISSUER}/index.php?module=OAuth2&action=token`;
export const AUTHORIZE_URL: string = `${ISSUER}/index.php?module=OAuth2&action=authorize`;
export const SECRETS = {
  web: "web-secret-0123456789abcdef",
  backend: "backend-secret-0123456789abcdef",
  backendRefresh: "backend-refresh-secret-0123456789",
  other: "other-secret-0123456789abcdef",
} as const;

/** A settable clock, in ms. */
export class Clock {
  now = 1_800_000_000_000;
  readonly read = (): number => this.now;
  advance(seconds: number): void {
    this.now += seconds * 1000;
  }
}

export interface Fixture {
  server: AuthorizationServer;
  clock: Clock;
  storage: MemoryStorage;
  /** Every error reported through onError. */
  errors: unknown[];
}

/**
 * A server with: `spa` (public), `web` (confidential code client), `backend` (client_credentials),
 * `backend-refresh` (client_credentials with refresh tokens), `other` (a second confidential code client),
 * and a hook that logs in user `alice` (or whoever `x-test-user` names; `x-test-user: none` gets a login page).
 */
export async function fixture(overrides: Partial<AuthorizationServerOptions> = {}): Promise<Fixture> {
  const clock = new Clock();
  const storage = memoryStorage({ clock: clock.read });
  const errors: unknown[] = [];
  const server = createAuthorizationServer({
    issuer: ISSUER,
    storage,
    clock: clock.read,
    scopes: { read: "Read your reports", write: "Edit your reports", export: "Run exports", admin: "Administer" },
    authenticateUser: (request) => {
      const user = request.headers.get("x-test-user") ?? "alice";
      if (user === "none") return new Response("<form>login</form>", { status: 200, headers: { "content-type": "text/html" } });
      return { id: user, name: user.toUpperCase() };
    },
    onError: (error) => errors.push(error),
    ...overrides,
  });
  const reg = server.clients;
  await reg.register({ client_id: "spa", name: "Single-page app", type: "public", redirect_uris: [REDIRECT], scopes: ["read", "write"] });
  await reg.register({
    client_id: "web", client_secret: SECRETS.web, name: "Web app", type: "confidential",
    redirect_uris: [REDIRECT, OTHER_REDIRECT], scopes: ["read", "write"],
  });
  await reg.register({
    client_id: "other", client_secret: SECRETS.other, name: "Other app", type: "confidential",
    redirect_uris: [REDIRECT], scopes: ["read"],
  });
  await reg.register({
    client_id: "backend", client_secret: SECRETS.backend, name: "Backend", type: "confidential",
    scopes: ["export", "read"], grant_types: ["client_credentials"],
  });
  await reg.register({
    client_id: "backend-refresh", client_secret: SECRETS.backendRefresh, name: "Backend with refresh", type: "confidential",
    scopes: ["export"], grant_types: ["client_credentials", "refresh_token"], client_credentials_refresh_token: true,
  });
  return { server, clock, storage, errors };
}

/** A PKCE pair (RFC 7636 §4.1-4.2). */
export async function pkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return { verifier, challenge: base64url(digest) };
}

/** POSTs a form to the token endpoint. */
export function postToken(server: AuthorizationServer, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return server.fetch(new Request(TOKEN_URL, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  }));
}

/** The authorization URL for the given query parameters. */
export function authorizeUrl(params: Record<string, string>): string {
  return `${AUTHORIZE_URL}&${new URLSearchParams(params).toString()}`;
}

/** GETs the authorization endpoint (as the logged-in test user). */
export function getAuthorize(server: AuthorizationServer, params: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return server.fetch(new Request(authorizeUrl(params), { headers }));
}

/** The consent form's CSRF token from a consent page. */
export function csrfOf(html: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error("no csrf field in page");
  return match[1]!;
}

/** Shows the consent page, then presses Allow (or Deny). Returns the redirect's Location as a URL. */
export async function consent(
  server: AuthorizationServer,
  params: Record<string, string>,
  decision: "allow" | "deny" = "allow",
): Promise<URL> {
  const page = await getAuthorize(server, params);
  if (page.status !== 200) throw new Error(`consent page: ${page.status} ${page.headers.get("location") ?? ""}`);
  const response = await server.fetch(new Request(authorizeUrl(params), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ decision, csrf: csrfOf(await page.text()) }).toString(),
  }));
  const location = response.headers.get("location");
  if (location === null) throw new Error(`no redirect after consent: ${response.status}`);
  return new URL(location);
}

/** The standard authorization request of a client. */
export function codeRequest(clientId: string, extra: Record<string, string> = {}): Record<string, string> {
  return { response_type: "code", client_id: clientId, redirect_uri: REDIRECT, scope: "read", state: "st-123", ...extra };
}

/** Runs the authorization step for the public client `spa`; returns the code and its verifier. */
export async function spaCode(server: AuthorizationServer, scope = "read"): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = await pkce();
  const url = await consent(server, codeRequest("spa", { scope, code_challenge: challenge, code_challenge_method: "S256" }));
  return { code: url.searchParams.get("code")!, verifier };
}

/** Runs the authorization step for the confidential client `web` without PKCE; returns the code. */
export async function webCode(server: AuthorizationServer, extra: Record<string, string> = {}): Promise<string> {
  const url = await consent(server, codeRequest("web", extra));
  return url.searchParams.get("code")!;
}

/** Exchanges a code of `spa` and returns the parsed token response. */
export async function spaTokens(server: AuthorizationServer): Promise<{ access_token: string; refresh_token: string; scope: string }> {
  const { code, verifier } = await spaCode(server);
  const response = await postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier });
  if (response.status !== 200) throw new Error(`code exchange failed: ${await response.text()}`);
  return response.json();
}

/** Asserts nothing; reads a JSON error body. */
export async function errorOf(response: Response): Promise<{ status: number; error: string; description: string | undefined }> {
  const body = await response.json() as { error: string; error_description?: string };
  return { status: response.status, error: body.error, description: body.error_description };
}

/** Calls the resource guard with a Bearer token. */
export function bearer(server: AuthorizationServer, token: string, scope?: string): Promise<AccessTokenInfo> {
  return server.verifyAccessToken(new Request(`${ISSUER}/api`, { headers: { authorization: `Bearer ${token}` } }), scope);
}

/** Holds every caller until `count` of them arrived, then lets them all go on together. */
export function barrier(count: number): () => Promise<void> {
  let waiting: (() => void)[] = [];
  return () => new Promise((resolve) => {
    waiting.push(resolve);
    if (waiting.length === count) {
      for (const go of waiting) go();
      waiting = [];
    }
  });
}
