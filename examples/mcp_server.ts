/**
 * A small MCP server protected by this authorization server's tokens, with the official MCP SDK.
 *
 * `notesMcpServer` returns one fetch handler that serves the RFC 9728 protected-resource metadata and the MCP
 * endpoint behind the guard of `protectedResource`: no token gets 401 with `resource_metadata`, so an MCP host
 * discovers the authorization server by itself; a token for another resource is refused; a DPoP-bound token works
 * with its proof (RFC 9449), never as a Bearer token. The tool `whoami`
 * answers who the token acts for and what it grants; `add_note` needs `notes.write` on top, and a token without
 * it gets 403 `insufficient_scope` naming what the call needs (MCP step-up), so the host asks the user again.
 *
 * Run it (Node; the authorization server in the same process, in memory):
 *
 * ```sh
 * npx tsx examples/mcp_server.ts    # prints both URLs; point an MCP host at the MCP URL
 * ```
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { AccessTokenInfo, ResourceDpopOptions } from "../mod.ts";
import { protectedResource, type TokenVerifier } from "../mod.ts";

/** Options of {@link notesMcpServer}. */
export interface NotesMcpServerOptions {
  /** The MCP endpoint's URL: the resource identifier (one of the authorization server's `resources`). */
  resource: string;
  authorizationServers: string[];
  verify: TokenVerifier;
  /** Published in the metadata; an MCP host asks for them all when the challenge names none. */
  scopesSupported?: string[];
  /** Scopes every MCP request needs; named in the 401 and 403 challenges. */
  requiredScopes?: string[];
  /** Scopes a tool needs on top of `requiredScopes`. Default: `add_note` needs `notes.write`. */
  toolScopes?: Record<string, string[]>;
  /**
   * DPoP-bound tokens (RFC 9449 §7), taken beside Bearer ones by default; pass a store as `replay` when several
   * instances serve this resource, so a proof is used once across all of them.
   */
  dpop?: ResourceDpopOptions | false;
}

/** Largest MCP request whose tool name is looked at before the transport reads it. */
const MAX_PEEK = 64 * 1024;

/** The tool a `tools/call` request calls, or undefined for any other request. */
async function calledTool(request: Request): Promise<string | undefined> {
  if (request.method !== "POST") return undefined;
  const text = await request.clone().text();
  if (text.length > MAX_PEEK) return undefined;
  try {
    const message = JSON.parse(text) as { method?: unknown; params?: { name?: unknown } };
    return message.method === "tools/call" && typeof message.params?.name === "string" ? message.params.name : undefined;
  } catch {
    return undefined; // the transport answers a malformed message itself
  }
}

/** The MCP server's fetch handler: metadata, then the guarded MCP endpoint; 404 elsewhere. */
export function notesMcpServer(options: NotesMcpServerOptions): (request: Request) => Promise<Response> {
  const guard = protectedResource({
    resource: options.resource,
    authorizationServers: options.authorizationServers,
    verify: options.verify,
    ...(options.scopesSupported ? { scopesSupported: options.scopesSupported } : {}),
    resourceName: "Notes",
    ...(options.dpop === undefined ? {} : { dpop: options.dpop }),
  });
  const mcpPath = new URL(options.resource).pathname;
  const toolScopes = options.toolScopes ?? { add_note: ["notes.write"] };
  // What this call needs: every request's scopes, and the tool's own (RFC 6750 §3.1: the 403 names them).
  const needs = async (request: Request): Promise<string[] | undefined> => {
    const tool = await calledTool(request);
    const all = [...new Set([...(options.requiredScopes ?? []), ...(tool === undefined ? [] : toolScopes[tool] ?? [])])];
    return all.length > 0 ? all : undefined;
  };
  const mcp = guard.protect(needs, async (request, token) => {
    // Stateless Streamable HTTP: one server and transport per request, each knowing the caller's token.
    const server = new McpServer({ name: "notes", version: "1.0.0" });
    server.registerTool("whoami", { description: "Who the access token acts for, and what it grants" }, () => ({
      content: [{ type: "text", text: JSON.stringify(describe(token)) }],
    }));
    server.registerTool("add_note", { description: "Adds a note (a sample: nothing is stored); needs notes.write" }, () => ({
      content: [{ type: "text", text: JSON.stringify({ added: true, ...describe(token) }) }],
    }));
    // Stateless: no session id option at all (the SDK reads an absent generator as "no sessions").
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
    await server.connect(transport);
    return transport.handleRequest(request);
  });
  return async (request) => {
    const metadata = guard.metadataResponse(request);
    if (metadata) return metadata;
    if (new URL(request.url).pathname === mcpPath) return mcp(request);
    return new Response("Not found", { status: 404 });
  };
}

function describe(token: AccessTokenInfo): Record<string, unknown> {
  return { user: token.user_id, client_id: token.client_id, scope: token.scope, aud: token.aud, jkt: token.jkt };
}

/** `npx tsx examples/mcp_server.ts`: an authorization server and this MCP server on two loopback ports. */
async function main(): Promise<void> {
  const { createAuthorizationServer, localTokenVerifier } = await import("../mod.ts");
  const { serveNode } = await import("../lib/adapters/node.ts");
  let authorizationServer: ReturnType<typeof createAuthorizationServer> | undefined;
  let mcp: ((request: Request) => Promise<Response>) | undefined;
  const as = await serveNode({ fetch: (request: Request) => authorizationServer!.fetch(request) }, { port: 0 });
  const ms = await serveNode({ fetch: (request: Request) => mcp!(request) }, { port: 0 });
  const resource = `${ms.url}/mcp`;
  authorizationServer = createAuthorizationServer({
    issuer: as.url,
    profile: "rfc6749",
    scopes: { "notes.read": "Read your notes", "notes.write": "Write your notes" },
    defaultScope: "notes.read",
    resources: [resource],
    registration: { enabled: true },
    clientMetadataDocuments: { enabled: true },
    // Clients that hold a key get tokens bound to it (RFC 9449); the others keep Bearer tokens.
    dpop: { enabled: true },
    // A demo: everyone is "demo". Use passwordLogin or your own hook in real life.
    authenticateUser: () => ({ id: "demo", name: "Demo User" }),
  });
  mcp = notesMcpServer({
    resource, authorizationServers: [as.url], verify: localTokenVerifier(authorizationServer),
    scopesSupported: ["notes.read", "notes.write"], dpop: { replay: authorizationServer.storage },
  });
  console.log(`authorization server: ${as.url}\nMCP server:           ${resource}`);
}

if (import.meta.url === `file://${globalThis.process?.argv?.[1]}`) await main();
