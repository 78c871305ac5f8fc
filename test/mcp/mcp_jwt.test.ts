/**
 * The example MCP server (examples/mcp_server.ts) verifying JWT access tokens alone: `jwtTokenVerifier` fetches
 * the authorization server's /jwks over a real loopback socket (once, then from its cache), and the real MCP SDK
 * client is authorized through dynamic registration and calls a tool. A token for another resource is refused;
 * a revoked token still works here until it expires (the documented trade-off) while `server.protect` refuses
 * it at once. Node only (vitest): the SDK is a Node devDependency.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { notesMcpServer } from "../../examples/mcp_server.ts";
import { type NodeServer, serveNode } from "../../lib/adapters/node.ts";
import { type AuthorizationServer, createAuthorizationServer, jwtTokenVerifier } from "../../mod.ts";
import { callbackListener, connectAndCall, provider } from "./sdk_helpers.ts";

let as: NodeServer, notes: NodeServer, other: NodeServer;
let server: AuthorizationServer;
let jwksFetches = 0;

beforeAll(async () => {
  const handlers: Record<string, (request: Request) => Promise<Response>> = {};
  const serve = (name: string) => serveNode({ fetch: (request: Request) => handlers[name]!(request) }, { port: 0 });
  [as, notes, other] = await Promise.all([serve("as"), serve("notes"), serve("other")]);
  server = createAuthorizationServer({
    issuer: as.url,
    profile: "rfc6749",
    scopes: { "notes.read": "Read your notes" },
    defaultScope: "notes.read",
    resources: [`${notes.url}/mcp`, `${other.url}/mcp`],
    registration: { enabled: true },
    accessTokenFormat: "jwt",
    secret: "mcp-jwt-test-secret-0123456789abcdef",
    authenticateUser: () => ({ id: "alice", name: "Alice" }),
  });
  handlers.as = (request) => {
    if (new URL(request.url).pathname === "/jwks") jwksFetches++;
    return server.fetch(request);
  };
  for (const name of ["notes", "other"]) {
    const resource = `${(name === "notes" ? notes : other).url}/mcp`;
    handlers[name] = notesMcpServer({
      resource,
      authorizationServers: [as.url],
      // Configured by the operator: its loopback jwks_uri is trusted as such.
      verify: jwtTokenVerifier({ issuer: as.url, jwksUri: `${as.url}/jwks`, audience: resource }),
      scopesSupported: ["notes.read"],
    });
  }
});

afterAll(async () => {
  await Promise.all([as, notes, other].map((s) => s?.close()));
});

test("the MCP SDK client is authorized and calls a tool on an MCP server that verifies JWTs locally", async () => {
  const callback = await callbackListener();
  try {
    const host = provider(callback.url);
    const { whoami } = await connectAndCall(`${notes.url}/mcp`, host, callback);
    expect(whoami).toMatchObject({ user: "alice", scope: "notes.read", aud: [`${notes.url}/mcp`] });
    const token = host.saved!.access_token;
    expect(token.split(".")).toHaveLength(3);
    expect(jwksFetches).toBe(1);

    const call = (url: string) => fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    const refused = await call(`${other.url}/mcp`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain(`error="invalid_token"`);

    // Revoked: server.protect (asking the store) refuses it at once; the MCP server learns of it only at expiry.
    const revoke = await fetch(`${as.url}/revoke`, { method: "POST", body: new URLSearchParams({ token, client_id: host.info!.client_id }) });
    expect(revoke.status).toBe(200);
    await expect(server.verifyAuthorization(`Bearer ${token}`)).rejects.toMatchObject({ code: "invalid_token" });
    expect((await call(`${notes.url}/mcp`)).status).toBe(200);
    // One fetch of /jwks per MCP server, whatever the number of calls.
    expect(jwksFetches).toBe(2);
  } finally {
    await callback.close();
  }
});
