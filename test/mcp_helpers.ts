/**
 * Fixtures for the MCP-readiness tests: a server in the rfc6749 profile with resources, and helpers that run the
 * code flow on the clean paths through `server.fetch` only, so the same files run on every runtime.
 */
import type { AuthorizationServer, AuthorizationServerOptions } from "../mod.ts";
import { csrfOf, fixture, type Fixture, ISSUER, pkce } from "./helpers.ts";

export const MCP = "https://mcp.example.com/mcp";
export const OTHER_RESOURCE = "https://other.example.com/api";
export const LOOPBACK = "http://127.0.0.1/callback";

/** The fixture server in the rfc6749 profile with two resources, and a public loopback client `cli`. */
export async function mcpFixture(overrides: Partial<AuthorizationServerOptions> = {}): Promise<Fixture> {
  const f = await fixture({ profile: "rfc6749", resources: [MCP, OTHER_RESOURCE], ...overrides });
  await f.server.clients.register({
    client_id: "cli", name: "Command line", type: "public", redirect_uris: [LOOPBACK], scopes: ["read", "write", "export"],
  });
  return f;
}

/** POSTs a form to a clean path. */
export function post(server: AuthorizationServer, path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return server.fetch(new Request(`${ISSUER}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  }));
}

/** GETs /authorize, then presses Allow. Returns the final response (a redirect, or a refusal). */
export async function approve(server: AuthorizationServer, params: Record<string, string>): Promise<Response> {
  const url = `${ISSUER}/authorize?${new URLSearchParams(params)}`;
  const page = await server.fetch(new Request(url));
  if (page.status !== 200) return page;
  return server.fetch(new Request(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ decision: "allow", csrf: csrfOf(await page.text()) }).toString(),
  }));
}

/** Runs the code flow with PKCE for a public client; `token` adds fields to the token request. */
export async function codeFlow(
  server: AuthorizationServer,
  params: Record<string, string>,
  token: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; authorize: Response }> {
  const { verifier, challenge } = await pkce();
  const all: Record<string, string> = {
    response_type: "code", client_id: "cli", redirect_uri: LOOPBACK, scope: "read", state: "s",
    code_challenge: challenge, code_challenge_method: "S256", ...params,
  };
  const authorize = await approve(server, all);
  const code = new URL(authorize.headers.get("location") ?? "http://x/").searchParams.get("code");
  if (code === null) return { status: 0, body: {}, authorize };
  const response = await post(server, "/token", {
    grant_type: "authorization_code", client_id: all.client_id!, code, code_verifier: verifier, redirect_uri: all.redirect_uri!, ...token,
  });
  return { status: response.status, body: await response.json() as Record<string, unknown>, authorize };
}

/** The `error` of an authorization redirect. */
export function redirectError(response: Response): string | null {
  const location = response.headers.get("location");
  return location === null ? null : new URL(location).searchParams.get("error");
}
