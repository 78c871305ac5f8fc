/**
 * The real MCP TypeScript SDK client (`@modelcontextprotocol/sdk`) against an MCP server protected by
 * `protectedResource` (examples/mcp_server.ts) and this authorization server, all on loopback sockets: once
 * through a Client ID Metadata Document and once through dynamic registration. Each run asks for several scopes,
 * then for none (the default scope is granted), on a loopback redirect URI with a random port, and calls a tool;
 * a token minted for another resource is refused. Node only (vitest): the SDK is a Node devDependency.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { notesMcpServer } from "../../examples/mcp_server.ts";
import { type NodeServer, serveNode } from "../../lib/adapters/node.ts";
import { type AuthorizationServer, createAuthorizationServer, localTokenVerifier } from "../../mod.ts";
import { callbackListener, connectAndCall, provider } from "./sdk_helpers.ts";

/** The client_id URL of the MCP host's metadata document; the test's document host serves it on loopback. */
const DOCUMENT_URL = "https://mcp-host.example/oauth/client-metadata.json";

let as: NodeServer, notes: NodeServer, plain: NodeServer, other: NodeServer, documentHost: NodeServer;
let server: AuthorizationServer;
const documentFetches: string[] = [];
let documentBody = "";

beforeAll(async () => {
  let handler: ((request: Request) => Promise<Response>) | undefined;
  as = await serveNode({ fetch: (request: Request) => handler!(request) }, { port: 0 });
  const handlers: Record<string, (request: Request) => Promise<Response>> = {};
  const serve = async (name: string) => serveNode({ fetch: (request: Request) => handlers[name]!(request) }, { port: 0 });
  [notes, plain, other, documentHost] = await Promise.all([serve("notes"), serve("plain"), serve("other"), serve("docs")]);
  handlers.docs = async (request) => {
    documentFetches.push(new URL(request.url).pathname);
    return new Response(documentBody, { headers: { "content-type": "application/json", "cache-control": "max-age=60" } });
  };
  server = createAuthorizationServer({
    issuer: as.url,
    profile: "rfc6749",
    scopes: { "notes.read": "Read your notes", "notes.write": "Write your notes", "calendar.read": "Read your calendar" },
    defaultScope: "notes.read",
    resources: [`${notes.url}/mcp`, `${plain.url}/mcp`, `${other.url}/mcp`],
    registration: { enabled: true },
    clientMetadataDocuments: {
      enabled: true,
      // The document's public https address is served by the test's document host on loopback.
      fetch: (request) => fetch(new Request(documentHost.url + new URL(request.url).pathname, request)),
    },
    authenticateUser: () => ({ id: "alice", name: "Alice" }),
  });
  handler = server.fetch;
  const verify = localTokenVerifier(server);
  handlers.notes = notesMcpServer({
    resource: `${notes.url}/mcp`, authorizationServers: [as.url], verify,
    scopesSupported: ["notes.read", "notes.write"], requiredScopes: ["notes.read", "notes.write"],
  });
  // No scopes anywhere: the SDK then sends no scope at all, as ChatGPT does when it re-authorizes.
  handlers.plain = notesMcpServer({ resource: `${plain.url}/mcp`, authorizationServers: [as.url], verify });
  handlers.other = notesMcpServer({ resource: `${other.url}/mcp`, authorizationServers: [as.url], verify });
});

afterAll(async () => {
  await Promise.all([as, notes, plain, other, documentHost].map((s) => s?.close()));
});

describe.each(["client metadata document", "dynamic registration"] as const)("the MCP SDK client, through a %s", (mode) => {
  const useDocument = mode === "client metadata document";

  test("asks for several scopes on a random loopback port, is authorized, and calls a tool", async () => {
    const callback = await callbackListener();
    try {
      documentBody = JSON.stringify({
        client_id: DOCUMENT_URL, client_name: "Test MCP Host",
        // Registered without a port: RFC 8252 §7.3 lets the host pick any port at run time.
        redirect_uris: ["http://127.0.0.1/callback"],
        grant_types: ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
        token_endpoint_auth_method: "none",
      });
      const { authorizationUrl, whoami } = await connectAndCall(`${notes.url}/mcp`, provider(callback.url, useDocument ? DOCUMENT_URL : undefined), callback);
      expect(authorizationUrl.searchParams.get("scope")).toBe("notes.read notes.write");
      expect(authorizationUrl.searchParams.get("resource")).toBe(`${notes.url}/mcp`);
      expect(whoami).toMatchObject({ user: "alice", scope: "notes.read notes.write", aud: [`${notes.url}/mcp`] });
      if (useDocument) {
        expect(whoami.client_id).toBe(DOCUMENT_URL);
        expect(documentFetches).toContain("/oauth/client-metadata.json");
      } else {
        expect(whoami.client_id).not.toBe(DOCUMENT_URL);
        expect((await server.storage.getClient(whoami.client_id))?.origin).toBe("registration");
      }
    } finally {
      await callback.close();
    }
  });

  test("asks for no scope at all and gets the default scope, then calls a tool", async () => {
    const callback = await callbackListener();
    try {
      const host = provider(callback.url, useDocument ? DOCUMENT_URL : undefined);
      const { authorizationUrl, whoami } = await connectAndCall(`${plain.url}/mcp`, host, callback);
      expect(authorizationUrl.searchParams.has("scope")).toBe(false);
      expect(whoami).toMatchObject({ user: "alice", scope: "notes.read", aud: [`${plain.url}/mcp`] });

      // The same token at another MCP server (another resource) is refused: audience mismatch.
      const refused = await fetch(`${other.url}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${host.saved!.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toContain(`error="invalid_token"`);
      expect(refused.headers.get("www-authenticate")).toContain(`resource_metadata="${other.url}/.well-known/oauth-protected-resource/mcp"`);
    } finally {
      await callback.close();
    }
  });
});
