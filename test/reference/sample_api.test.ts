// The reference server's sample API (/api/*), protected the way the README tells users to protect theirs
// (issue 21 finding 3; issue 22 item 2): protectedResource for {issuer}/api, RFC 9728 metadata listing the scopes
// its routes use (never offline_access), 401 with resource_metadata, 403 naming the scope, and the audience
// checked: a token bound to another resource (an MCP server's) is refused; an unbound one (a spec client's) is not.
import { describe, expect, test } from "vitest";
import { createReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG } from "../../lib/reference/config.ts";

const ISSUER = "http://127.0.0.1:8080";
const API = `${ISSUER}/api`;
const MCP = `${ISSUER}/mcp`;
const PRM = `${ISSUER}/.well-known/oauth-protected-resource/api`;

async function app() {
  const reference = await createReferenceApp({
    issuer: ISSUER, passwordIterations: 1, purgeInterval: 0,
    config: { ...DEMO_CONFIG, scope_policy: "multiple", resources: [MCP, API], offline_access: true },
  });
  const { client_secret } = await reference.server.clients.register({
    client_id: "writer", name: "Writer", type: "confidential", scopes: ["reports.read", "reports.write"], grant_types: ["client_credentials"],
  });
  const token = async (client: "demo-backend" | "writer", scope: string, resource?: string) => {
    const secret = client === "writer" ? client_secret! : "demo-backend-secret-change-me";
    const response = await reference.fetch(new Request(`${ISSUER}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: client, client_secret: secret, scope, ...(resource ? { resource } : {}) }),
    }));
    expect(response.status).toBe(200);
    return (await response.json()).access_token as string;
  };
  const call = (path: string, token?: string, method = "GET") =>
    reference.fetch(new Request(`${ISSUER}${path}`, { method, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } }));
  return { reference, token, call };
}

describe("the sample API", () => {
  test("its metadata lists the scopes its routes use, never offline_access, at the bare and the path address", async () => {
    const { reference } = await app();
    for (const url of [PRM, `${ISSUER}/.well-known/oauth-protected-resource`]) {
      expect(await (await reference.fetch(new Request(url))).json()).toEqual({
        resource: API, authorization_servers: [ISSUER], bearer_methods_supported: ["header"],
        scopes_supported: ["reports.read", "reports.write"], resource_name: "Sample reports API",
        dpop_signing_alg_values_supported: ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"],
      });
    }
    expect((await (await reference.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`))).json()).scopes_supported).toContain("offline_access");
  });

  test("without a token: 401 pointing at the metadata, with the scope where the route needs one", async () => {
    const { call } = await app();
    expect((await call("/api/reports")).headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${PRM}", scope="reports.read", DPoP resource_metadata="${PRM}", algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"`,
    );
    const me = await call("/api/me");
    expect(me.status).toBe(401);
    expect(me.headers.get("www-authenticate")).toContain(`resource_metadata="${PRM}"`);
  });

  test("a token bound to another resource is refused; one bound to the API, or to none, is taken", async () => {
    const { token, call } = await app();
    const forMcp = await token("demo-backend", "reports.read", MCP);
    for (const path of ["/api/me", "/api/reports"]) {
      const refused = await call(path, forMcp);
      expect(refused.status, path).toBe(401);
      expect(refused.headers.get("www-authenticate")).toContain(`error="invalid_token"`);
    }
    expect((await call("/api/reports", await token("demo-backend", "reports.read", API))).status).toBe(200);
    expect((await call("/api/reports", await token("demo-backend", "reports.read"))).status).toBe(200);
    expect((await call("/api/reports", await token("demo-backend", "reports.read", "HTTP://127.0.0.1:8080/api"))).status).toBe(200);
  });

  test("POST /api/reports needs reports.write: 403 insufficient_scope names it; with it, 202", async () => {
    const { token, call } = await app();
    const readOnly = await call("/api/reports", await token("writer", "reports.read", API), "POST");
    expect(readOnly.status).toBe(403);
    expect(readOnly.headers.get("www-authenticate")).toContain(`error="insufficient_scope"`);
    expect(readOnly.headers.get("www-authenticate")).toContain(`scope="reports.write"`);
    expect((await call("/api/reports", await token("writer", "reports.read reports.write", API), "POST")).status).toBe(202);
  });

  test("other methods get 405 with the methods each route takes", async () => {
    const { call } = await app();
    expect((await call("/api/reports", undefined, "PUT")).headers.get("allow")).toBe("GET, HEAD, POST");
    expect((await call("/api/me", undefined, "POST")).headers.get("allow")).toBe("GET, HEAD");
  });
});
