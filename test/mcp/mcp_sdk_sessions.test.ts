/**
 * The real MCP TypeScript SDK (1.32) with clients the operator registered beforehand, allowed fewer scopes than
 * the resource advertises (issue 22): against the reference server's sample API (the SDK's OAuth middleware,
 * the reference server with its password login on a loopback socket) and against the example MCP server
 * (examples/mcp_server.ts, the SDK's Streamable HTTP transport). The SDK asks for every scope the resource's
 * metadata lists; the server narrows the request to the client's scopes instead of refusing it. Then step-up:
 * a 403 insufficient_scope names the scope a call needs, the host asks for the union of what it has and what is
 * named (MCP 2026-07-28, SEP-2350; SDK 1.32 does not yet, so the host does it with the SDK's `auth`), the new
 * authorization works, and a refresh keeps every scope.
 */
import { auth, extractWWWAuthenticateParams, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { withOAuth } from "@modelcontextprotocol/sdk/client/middleware.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { notesMcpServer } from "../../examples/mcp_server.ts";
import { type NodeServer, serveNode } from "../../lib/adapters/node.ts";
import { createReferenceApp, type ReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG } from "../../lib/reference/config.ts";
import { type AuthorizationServer, createAuthorizationServer, localTokenVerifier } from "../../mod.ts";
import { callbackListener, connectAndCall, type MemoryProvider, preRegistered, union, userApproves } from "./sdk_helpers.ts";

const USER = { username: "demo", password: "demo-password" };
const LOOPBACK = "http://127.0.0.1/callback";

let reference: ReferenceApp, referenceSocket: NodeServer, issuer = "";
let as: AuthorizationServer, asSocket: NodeServer, notesSocket: NodeServer, stepSocket: NodeServer;

beforeAll(async () => {
  const handlers: Record<string, (request: Request) => Promise<Response>> = {};
  const serve = (name: string) => serveNode({ fetch: (request: Request) => handlers[name]!(request) }, { port: 0 });
  [referenceSocket, asSocket, notesSocket, stepSocket] = await Promise.all([serve("reference"), serve("as"), serve("notes"), serve("step")]);
  issuer = referenceSocket.url;
  reference = await createReferenceApp({
    issuer, passwordIterations: 1, purgeInterval: 0,
    config: {
      ...DEMO_CONFIG,
      scope_policy: "multiple",
      resources: [`${issuer}/api`],
      offline_access: true,
      clients: [
        ...DEMO_CONFIG.clients,
        { client_id: "mcp-host", name: "MCP host (read only)", redirect_uris: [LOOPBACK], scopes: ["reports.read"], grant_types: ["authorization_code", "refresh_token"] },
        { client_id: "mcp-writer", name: "MCP host", redirect_uris: [LOOPBACK], scopes: ["reports.read", "reports.write"], grant_types: ["authorization_code", "refresh_token"] },
      ],
    },
  });
  handlers.reference = reference.fetch;

  as = createAuthorizationServer({
    issuer: asSocket.url,
    profile: "rfc6749",
    scopes: { "notes.read": "Read your notes", "notes.write": "Write your notes" },
    resources: [`${notesSocket.url}/mcp`, `${stepSocket.url}/mcp`],
    authenticateUser: () => ({ id: "alice", name: "Alice" }),
  });
  await as.clients.register({ client_id: "notes-host", name: "Notes host", type: "public", redirect_uris: [LOOPBACK], scopes: ["notes.read"] });
  await as.clients.register({ client_id: "notes-writer", name: "Notes writer", type: "public", redirect_uris: [LOOPBACK], scopes: ["notes.read", "notes.write"] });
  handlers.as = as.fetch;
  const verify = localTokenVerifier(as);
  // The challenge names no scope of its own: the SDK asks for every scope of the metadata, as with the sample API's /api/me.
  handlers.notes = notesMcpServer({ resource: `${notesSocket.url}/mcp`, authorizationServers: [asSocket.url], verify, scopesSupported: ["notes.read", "notes.write"] });
  handlers.step = notesMcpServer({
    resource: `${stepSocket.url}/mcp`, authorizationServers: [asSocket.url], verify, scopesSupported: ["notes.read", "notes.write"], requiredScopes: ["notes.read"],
  });
});

afterAll(async () => {
  reference?.close();
  await Promise.all([referenceSocket, asSocket, notesSocket, stepSocket].map((s) => s?.close()));
});

/** The user approves at the authorization URL; the host exchanges the code with the SDK. */
async function approveAndExchange(host: MemoryProvider, serverUrl: string, callback: { code: () => Promise<string> }, login?: typeof USER): Promise<void> {
  await userApproves(host.authorizationUrl!, login);
  const code = await callback.code();
  expect(code).not.toMatch(/^error:/);
  expect(await auth(host, { serverUrl, authorizationCode: code })).toBe("AUTHORIZED");
}

describe("the reference server's sample API, through the SDK's OAuth middleware", () => {
  test("a pre-registered client allowed fewer scopes than the API lists is narrowed, not refused, and calls the API", async () => {
    const callback = await callbackListener();
    try {
      const host = preRegistered(callback.url, "mcp-host");
      const api = withOAuth(host, `${issuer}/api`)(fetch);
      await expect(api(`${issuer}/api/me`)).rejects.toBeInstanceOf(UnauthorizedError); // the redirect to the user
      expect(host.authorizationUrl!.searchParams.get("scope")).toBe("reports.read reports.write");
      expect(host.authorizationUrl!.searchParams.get("resource")).toBe(`${issuer}/api`);
      await approveAndExchange(host, `${issuer}/api`, callback, USER);
      expect(host.saved!.scope).toBe("reports.read");
      const me = await api(`${issuer}/api/me`);
      expect(me.status).toBe(200);
      expect((await me.json()).token).toMatchObject({ client_id: "mcp-host", user_id: "demo", scope: "reports.read", aud: [`${issuer}/api`] });
      expect((await api(`${issuer}/api/reports`)).status).toBe(200);
    } finally {
      await callback.close();
    }
  });

  test("step-up: 403 names reports.write, the union is authorized with offline_access, and a refresh keeps it all", async () => {
    const callback = await callbackListener();
    try {
      const host = preRegistered(callback.url, "mcp-writer");
      const serverUrl = `${issuer}/api`;
      const api = withOAuth(host, serverUrl)(fetch);
      await expect(api(`${issuer}/api/reports`)).rejects.toBeInstanceOf(UnauthorizedError);
      expect(host.authorizationUrl!.searchParams.get("scope")).toBe("reports.read");
      await approveAndExchange(host, serverUrl, callback, USER);
      expect(host.saved).toMatchObject({ scope: "reports.read" });
      expect(host.saved!.refresh_token, "offline_access is on and was not asked for").toBeUndefined();

      const refused = await api(`${issuer}/api/reports`, { method: "POST" });
      expect(refused.status).toBe(403);
      const challenge = extractWWWAuthenticateParams(refused);
      expect(challenge).toMatchObject({ error: "insufficient_scope", scope: "reports.write" });

      // SEP-2350: the union of what was granted and what the challenge names; offline_access, which the
      // authorization server lists, for a refresh token (the SDK then adds prompt=consent).
      const second = await callbackListener();
      try {
        const stepped = preRegistered(second.url, "mcp-writer");
        const scope = union(host.saved!.scope, challenge.scope, "offline_access");
        expect(await auth(stepped, { serverUrl, scope, ...(challenge.resourceMetadataUrl ? { resourceMetadataUrl: challenge.resourceMetadataUrl } : {}) })).toBe("REDIRECT");
        expect(stepped.authorizationUrl!.searchParams.get("prompt")).toBe("consent");
        await approveAndExchange(stepped, serverUrl, second, USER);
        // (No asymmetric matcher on the provider's own object: bun test's toMatchObject writes it into the object.)
        expect([stepped.saved!.scope, typeof stepped.saved!.refresh_token]).toEqual(["reports.read reports.write offline_access", "string"]);
        const steppedApi = withOAuth(stepped, serverUrl)(fetch);
        expect((await steppedApi(`${issuer}/api/reports`, { method: "POST" })).status).toBe(202);

        // A refresh (the SDK's own, through auth with a stored refresh token) keeps every scope.
        const before = stepped.saved!.access_token;
        expect(await auth(stepped, { serverUrl })).toBe("AUTHORIZED");
        expect(stepped.saved!.access_token).not.toBe(before);
        expect(stepped.saved!.scope).toBe("reports.read reports.write offline_access");
        expect((await steppedApi(`${issuer}/api/reports`, { method: "POST" })).status).toBe(202);
        expect((await steppedApi(`${issuer}/api/reports`)).status).toBe(200);
      } finally {
        await second.close();
      }
    } finally {
      await callback.close();
    }
  });
});

describe("the example MCP server, through the SDK's Streamable HTTP transport", () => {
  test("a pre-registered client allowed fewer scopes than the server lists is narrowed, and calls a tool", async () => {
    const callback = await callbackListener();
    try {
      const host = preRegistered(callback.url, "notes-host");
      const { authorizationUrl, whoami } = await connectAndCall(`${notesSocket.url}/mcp`, host, callback);
      expect(authorizationUrl.searchParams.get("scope")).toBe("notes.read notes.write");
      expect(whoami).toMatchObject({ client_id: "notes-host", user: "alice", scope: "notes.read", aud: [`${notesSocket.url}/mcp`] });
    } finally {
      await callback.close();
    }
  });

  test("step-up for a tool that writes: 403, the union authorized, the tool called, a refresh keeps both", async () => {
    const callback = await callbackListener();
    const mcpUrl = new URL(`${stepSocket.url}/mcp`);
    try {
      const host = preRegistered(callback.url, "notes-writer");
      const { whoami } = await connectAndCall(mcpUrl.href, host, callback);
      expect(whoami.scope).toBe("notes.read");

      // The tool's own scope: 403 naming what this call needs.
      const raw = await fetch(mcpUrl, {
        method: "POST",
        headers: { authorization: `Bearer ${host.saved!.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "add_note", arguments: {} } }),
      });
      expect(raw.status).toBe(403);
      const challenge = extractWWWAuthenticateParams(raw);
      expect(challenge).toMatchObject({ error: "insufficient_scope", scope: "notes.read notes.write" });

      const second = await callbackListener();
      try {
        const stepped = preRegistered(second.url, "notes-writer");
        expect(await auth(stepped, { serverUrl: mcpUrl, scope: union(host.saved!.scope, challenge.scope) })).toBe("REDIRECT");
        await approveAndExchange(stepped, mcpUrl.href, second);
        expect(stepped.saved!.scope).toBe("notes.read notes.write");
        const call = async () => {
          const client = new Client({ name: "test-host", version: "1.0.0" });
          await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: stepped }));
          const result = await client.callTool({ name: "add_note", arguments: {} });
          await client.close();
          return JSON.parse((result.content as { text: string }[])[0]!.text) as { added: boolean; scope: string };
        };
        expect(await call()).toMatchObject({ added: true, scope: "notes.read notes.write" });
        expect(await auth(stepped, { serverUrl: mcpUrl })).toBe("AUTHORIZED"); // a refresh
        expect(stepped.saved!.scope).toBe("notes.read notes.write");
        expect(await call()).toMatchObject({ added: true, scope: "notes.read notes.write" });
      } finally {
        await second.close();
      }
    } finally {
      await callback.close();
    }
  });
});
