/**
 * MCP client credentials (the ext-auth OAuth Client Credentials extension, SEP-1046) with the real clients: the
 * MCP SDK's `ClientCredentialsProvider` (client_secret_basic) and `PrivateKeyJwtProvider` (private_key_jwt,
 * no client_id sent), and openid-client's `PrivateKeyJwt`, each get a client_credentials token bound to the
 * example MCP server (examples/mcp_server.ts) and call its tools there; the MCP server verifies the JWT access
 * tokens alone, with the authorization server's /jwks. Over real loopback sockets. Not on Deno: the MCP SDK's
 * exports map gives Deno's type checker no types.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ClientCredentialsProvider, PrivateKeyJwtProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import * as jose from "jose";
import * as oidc from "openid-client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { notesMcpServer } from "../../examples/mcp_server.ts";
import { type NodeServer, serveNode } from "../../lib/adapters/node.ts";
import { type AuditEvent, type AuthorizationServer, createAuthorizationServer, jwtTokenVerifier } from "../../mod.ts";

let as: NodeServer, notes: NodeServer;
let server: AuthorizationServer;
let mcpUrl: string;
const events: AuditEvent[] = [];
const SECRET = "mcp-backend-secret-0123456789abcdef";
const { publicKey, privateKey } = await jose.generateKeyPair("ES256", { extractable: true });
const PUBLIC_JWK = { ...(await jose.exportJWK(publicKey)), kid: "agent-key-1", alg: "ES256", use: "sig" };
const PRIVATE_JWK = { ...(await jose.exportJWK(privateKey)), kid: "agent-key-1", alg: "ES256" };

beforeAll(async () => {
  const handlers: Record<string, (request: Request) => Promise<Response>> = {};
  const serve = (name: string) => serveNode({ fetch: (request: Request) => handlers[name]!(request) }, { port: 0 });
  [as, notes] = await Promise.all([serve("as"), serve("notes")]);
  mcpUrl = `${notes.url}/mcp`;
  server = createAuthorizationServer({
    issuer: as.url,
    profile: "rfc6749",
    scopes: { "notes.read": "Read your notes", "notes.write": "Write your notes" },
    resources: [mcpUrl],
    accessTokenFormat: "jwt",
    secret: "machine-clients-test-secret-0123456789",
    onEvent: (event) => events.push(event),
    // The MCP SDK 1.32 refuses metadata without authorization_endpoint, even for client_credentials alone (RFC 8414
    // §2 lets a server without the code flow leave it out): a server with users has one.
    authenticateUser: () => ({ id: "alice" }),
  });
  await server.clients.register({
    client_id: "backend", client_secret: SECRET, name: "Nightly job", type: "confidential", scopes: ["notes.read"],
    grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic",
  });
  await server.clients.register({
    client_id: "agent", name: "Signing agent", type: "confidential", scopes: ["notes.read", "notes.write"], grant_types: ["client_credentials"],
    token_endpoint_auth_method: "private_key_jwt", jwks: { keys: [PUBLIC_JWK] },
  });
  handlers.as = (request) => server.fetch(request);
  handlers.notes = notesMcpServer({
    resource: mcpUrl,
    authorizationServers: [as.url],
    // Configured by the operator: its loopback jwks_uri is trusted as such.
    verify: jwtTokenVerifier({ issuer: as.url, jwksUri: `${as.url}/jwks`, audience: mcpUrl }),
    scopesSupported: ["notes.read", "notes.write"],
  });
});

afterAll(async () => {
  await Promise.all([as, notes].map((s) => s?.close()));
});

/** Connects with `authProvider` (it gets its token on the 401) and calls a tool; returns what it answered. */
async function callTool(authProvider: ClientCredentialsProvider | PrivateKeyJwtProvider, tool: string): Promise<Record<string, unknown>> {
  const client = new Client({ name: "machine", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider });
  try {
    await client.connect(transport);
    const result = await client.callTool({ name: tool }) as { content: { text: string }[] };
    return JSON.parse(result.content[0]!.text) as Record<string, unknown>;
  } finally {
    await transport.close();
  }
}

describe("the MCP SDK's providers", () => {
  test("ClientCredentialsProvider: client_secret_basic, a token for the MCP server, a tool call", async () => {
    const provider = new ClientCredentialsProvider({ clientId: "backend", clientSecret: SECRET, expectedIssuer: as.url, scope: "notes.read" });
    const whoami = await callTool(provider, "whoami");
    expect(whoami).toMatchObject({ client_id: "backend", scope: "notes.read", aud: [mcpUrl] });
    expect(whoami.user).toBeUndefined();
    expect(jose.decodeJwt(provider.tokens()!.access_token)).toMatchObject({ sub: "backend", client_id: "backend", aud: mcpUrl });
  });

  test("PrivateKeyJwtProvider: a signed assertion without client_id, a token, a tool that needs notes.write", async () => {
    const provider = new PrivateKeyJwtProvider({
      clientId: "agent", privateKey: PRIVATE_JWK, algorithm: "ES256", expectedIssuer: as.url, scope: "notes.read notes.write",
    });
    const added = await callTool(provider, "add_note");
    expect(added).toMatchObject({ added: true, client_id: "agent", scope: "notes.read notes.write", aud: [mcpUrl] });
    // The provider signs a fresh assertion for each token request: its jti was spent once, and nothing was refused.
    expect(events.filter((e) => e.type === "client_assertion.refused")).toEqual([]);
  });

  test("a provider signing with a key the server does not know is refused at the token endpoint", async () => {
    const { privateKey: other } = await jose.generateKeyPair("ES256", { extractable: true });
    const provider = new PrivateKeyJwtProvider({
      clientId: "agent", privateKey: { ...(await jose.exportJWK(other)), kid: "agent-key-1" }, algorithm: "ES256", expectedIssuer: as.url, scope: "notes.read",
    });
    await expect(callTool(provider, "whoami")).rejects.toThrow(/invalid_client|Client authentication failed/i);
    const reasons = events.filter((e) => e.type === "client_assertion.refused").map((e) => e.reason);
    expect(reasons.length).toBeGreaterThan(0);
    expect(new Set(reasons)).toEqual(new Set(["signature"]));
  });
});

describe("openid-client", () => {
  test("PrivateKeyJwt: client_credentials with the MCP resource; the token works at the example MCP server", async () => {
    const config = await oidc.discovery(new URL(as.url), "agent", undefined, oidc.PrivateKeyJwt({ key: privateKey, kid: "agent-key-1" }), {
      algorithm: "oauth2",
      execute: [oidc.allowInsecureRequests],
    });
    const tokens = await oidc.clientCredentialsGrant(config, { scope: "notes.read", resource: mcpUrl });
    expect(tokens).toMatchObject({ token_type: "bearer", scope: "notes.read" });
    const call = await fetch(mcpUrl, {
      method: "POST",
      headers: { authorization: `Bearer ${tokens.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "whoami", arguments: {} } }),
    });
    expect(call.status).toBe(200);
    const answer = await call.json() as { result: { content: { text: string }[] } };
    expect(JSON.parse(answer.result.content[0]!.text)).toMatchObject({ client_id: "agent", scope: "notes.read", aud: [mcpUrl] });
  });
});
