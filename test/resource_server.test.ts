// Resource-server helpers (RFC 9728, RFC 6750 §3, RFC 8707; issue 11 item 4): metadata at the well-known
// address and its path variant, 401 with resource_metadata and scope, 403 insufficient_scope naming the scope,
// an exact audience check, in process and through introspection.
import { describe, expect, test } from "vitest";
import { introspectionTokenVerifier, localTokenVerifier, protectedResource } from "../lib/resource_server.ts";
import { ISSUER } from "./helpers.ts";
import { codeFlow, MCP, mcpFixture, OTHER_RESOURCE } from "./mcp_helpers.ts";

const RS_SECRET = "resource-server-secret-0123456789";
/** The DPoP challenge beside the Bearer one (RFC 9449 §7.1): every resource takes DPoP-bound tokens by default. */
const dpopChallenge = (metadataUrl: string) => `DPoP resource_metadata="${metadataUrl}", algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"`;

async function setup() {
  const f = await mcpFixture();
  await f.server.clients.register({
    client_id: "mcp-rs", client_secret: RS_SECRET, name: "MCP server", type: "confidential",
    scopes: ["read"], grant_types: ["client_credentials"], introspection: "all",
  });
  const local = protectedResource({
    resource: MCP, authorizationServers: [ISSUER], verify: localTokenVerifier(f.server), scopesSupported: ["read", "write"],
    resourceName: "Notes MCP",
  });
  const remote = protectedResource({
    resource: MCP, authorizationServers: [ISSUER], scopesSupported: ["read", "write"],
    verify: introspectionTokenVerifier({ endpoint: `${ISSUER}/introspect`, clientId: "mcp-rs", clientSecret: RS_SECRET, fetch: f.server.fetch }),
  });
  return { ...f, local, remote };
}

const call = (handler: (r: Request) => Promise<Response>, token?: string) =>
  handler(new Request(MCP, { method: "POST", headers: token ? { authorization: `Bearer ${token}` } : {} }));

describe("metadata (RFC 9728)", () => {
  test("served at the path variant and the bare address, readable from any origin", async () => {
    const { local } = await setup();
    expect(local.metadataUrl).toBe("https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
    for (const url of [local.metadataUrl, "https://mcp.example.com/.well-known/oauth-protected-resource"]) {
      const response = local.metadataResponse(new Request(url, { headers: { origin: "https://x.example" } }))!;
      expect(await response.json()).toEqual({
        resource: MCP, authorization_servers: [ISSUER], bearer_methods_supported: ["header"],
        scopes_supported: ["read", "write"], resource_name: "Notes MCP",
        dpop_signing_alg_values_supported: ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"],
      });
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
    }
    expect(local.metadataResponse(new Request("https://mcp.example.com/mcp"))).toBeNull();
  });

  test("a resource that is not an absolute https URL is refused at start", () => {
    expect(() => protectedResource({ resource: "http://mcp.example.com/", authorizationServers: [ISSUER], verify: async () => null })).toThrow(/resource/);
  });
});

describe.each(["local", "remote"] as const)("the guard, %s", (kind) => {
  test("no token: 401 with resource_metadata and the scope to ask for, no error code", async () => {
    const f = await setup();
    const response = await call(f[kind].protect(["read"], () => new Response("ok")));
    expect(response.status).toBe(401);
    const challenge = response.headers.get("www-authenticate")!;
    expect(challenge).toBe(`Bearer resource_metadata="${f.local.metadataUrl}", scope="read", ${dpopChallenge(f.local.metadataUrl)}`);
    expect(response.headers.get("access-control-expose-headers")).toContain("WWW-Authenticate");
  });

  test("a token for this resource with the scope passes; the handler sees its audience", async () => {
    const f = await setup();
    const { body } = await codeFlow(f.server, { resource: MCP, scope: "read" });
    let seen: unknown;
    const response = await call(f[kind].protect(["read"], (_, token) => (seen = token, new Response("ok"))), String(body.access_token));
    expect(response.status).toBe(200);
    expect(seen).toMatchObject({ client_id: "cli", user_id: "alice", scope: "read", aud: [MCP] });
  });

  test("a token without the scope: 403 insufficient_scope naming it (step-up)", async () => {
    const f = await setup();
    const { body } = await codeFlow(f.server, { resource: MCP, scope: "read" });
    const response = await call(f[kind].protect(["read", "write"], () => new Response("ok")), String(body.access_token));
    expect(response.status).toBe(403);
    expect(response.headers.get("www-authenticate")).toContain(`error="insufficient_scope"`);
    expect(response.headers.get("www-authenticate")).toContain(`scope="read write"`);
  });

  test("a token minted for another resource, or for none, is refused", async () => {
    const f = await setup();
    const other = await codeFlow(f.server, { resource: OTHER_RESOURCE });
    const unbound = await codeFlow(f.server, {});
    for (const token of [other.body.access_token, unbound.body.access_token, "not-a-token"]) {
      const response = await call(f[kind].protect(["read"], () => new Response("ok")), String(token));
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toContain(`error="invalid_token"`);
    }
  });

  test("a refresh token never opens the resource", async () => {
    const f = await setup();
    const { body } = await codeFlow(f.server, { resource: MCP });
    const response = await call(f[kind].protect(["read"], () => new Response("ok")), String(body.refresh_token));
    expect(response.status).toBe(401);
  });
});

test("an introspection endpoint that is down gives 503, not a pass or a 500", async () => {
  const rs = protectedResource({
    resource: MCP, authorizationServers: [ISSUER],
    verify: introspectionTokenVerifier({ endpoint: `${ISSUER}/introspect`, clientId: "x", clientSecret: "y", fetch: async () => { throw new TypeError("down"); } }),
  });
  const response = await call(rs.protect(undefined, () => new Response("ok")), "some-token");
  expect(response.status).toBe(503);
  expect((await response.json() as { error: string }).error).toBe("temporarily_unavailable");
});

test("the reference server publishes RFC 9728 metadata for its sample API", async () => {
  const { createReferenceApp } = await import("../lib/reference/app.ts");
  const app = await createReferenceApp({ issuer: "http://127.0.0.1:1", passwordIterations: 1 });
  try {
    for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/api"]) {
      const response = await app.fetch(new Request(`http://127.0.0.1:1${path}`));
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        resource: "http://127.0.0.1:1/api", authorization_servers: ["http://127.0.0.1:1"], bearer_methods_supported: ["header"],
      });
    }
  } finally {
    app.close?.();
  }
});

// MCP 2026-07-28: metadata and challenges that fit the resource, canonical audiences, per-operation scopes.
describe("a resource that fits MCP 2026-07-28", () => {
  test("offline_access is no resource's scope: refused in scopesSupported, never in a challenge", async () => {
    const f = await setup();
    expect(() => protectedResource({ resource: MCP, authorizationServers: [ISSUER], verify: localTokenVerifier(f.server), scopesSupported: ["read", "offline_access"] }))
      .toThrow(/offline_access/);
    const guard = protectedResource({ resource: MCP, authorizationServers: [ISSUER], verify: localTokenVerifier(f.server), scopesSupported: ["read"] });
    const response = await call(guard.protect(["read", "offline_access"], () => new Response("ok")));
    expect(response.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${guard.metadataUrl}", scope="read", ${dpopChallenge(guard.metadataUrl)}`);
  });

  test("an upper-case scheme or host in the resource still takes the token bound to its canonical form", async () => {
    const f = await setup();
    const { body } = await codeFlow(f.server, { resource: MCP, scope: "read" });
    const guard = protectedResource({ resource: "HTTPS://MCP.Example.com/mcp", authorizationServers: [ISSUER], verify: localTokenVerifier(f.server) });
    expect((await call(guard.protect(["read"], () => new Response("ok")), String(body.access_token))).status).toBe(200);
    const sibling = protectedResource({ resource: "https://mcp.example.com/MCP", authorizationServers: [ISSUER], verify: localTokenVerifier(f.server) });
    expect((await call(sibling.protect(["read"], () => new Response("ok")), String(body.access_token))).status).toBe(401);
  });

  test("scopes worked out per call: the 403 names what this call needs, the other calls pass", async () => {
    const f = await setup();
    const { body } = await codeFlow(f.server, { resource: MCP, scope: "read" });
    const needs = async (request: Request) => ((await request.clone().text()) === "write" ? ["read", "write"] : ["read"]);
    const handler = f.local.protect(needs, () => new Response("ok"));
    const send = (text: string) => handler(new Request(MCP, { method: "POST", body: text, headers: { authorization: `Bearer ${body.access_token}` } }));
    expect((await send("list")).status).toBe(200);
    const refused = await send("write");
    expect(refused.status).toBe(403);
    expect(refused.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${f.local.metadataUrl}", error="insufficient_scope", error_description="The access token does not grant the required scope", scope="read write", ` +
        dpopChallenge(f.local.metadataUrl),
    );
  });

  test("a failure to check the token reaches onError, and the client sees a clean 503", async () => {
    const seen: unknown[] = [];
    const guard = protectedResource({
      resource: MCP, authorizationServers: [ISSUER], onError: (error) => seen.push(error),
      verify: () => Promise.reject(new Error("the store is down")),
    });
    const response = await call(guard.protect(undefined, () => new Response("ok")), "some-token");
    expect(response.status).toBe(503);
    expect(await response.text()).not.toContain("store is down");
    expect(seen).toHaveLength(1);
  });
});
