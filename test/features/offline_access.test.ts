// offline_access (MCP 2026-07-28, SEP-2207; OpenID Connect Core §11): with the option on, a code flow gets a
// refresh token only when the user granted offline_access, and the metadata lists the scope; off, nothing changes.
import { describe, expect, test } from "vitest";
import { createReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, parseConfig } from "../../lib/reference/config.ts";
import { ConfigurationError } from "../../mod.ts";
import { errorOf, ISSUER, pkce } from "../helpers.ts";
import { codeFlow, LOOPBACK, mcpFixture, post, redirectError } from "../mcp_helpers.ts";

const metadataOf = async (fetch: (r: Request) => Promise<Response>, issuer = ISSUER) =>
  (await fetch(new Request(`${issuer}/.well-known/oauth-authorization-server`))).json() as Promise<{ scopes_supported: string[] }>;

describe("offlineAccess: true", () => {
  test("the metadata lists offline_access once, after the configured scopes", async () => {
    const { server } = await mcpFixture({ offlineAccess: true });
    expect((await metadataOf(server.fetch)).scopes_supported).toEqual(["read", "write", "export", "admin", "offline_access"]);
    const scopes = { read: "Read", write: "Write", export: "Export", admin: "Administer", offline_access: "Stay connected" };
    const described = await mcpFixture({ offlineAccess: true, scopes });
    expect((await metadataOf(described.server.fetch)).scopes_supported).toEqual(["read", "write", "export", "admin", "offline_access"]);
  });

  test("a code flow without offline_access gets no refresh token; with it, one that keeps the scope", async () => {
    const { server } = await mcpFixture({ offlineAccess: true });
    const without = await codeFlow(server, { scope: "read write" });
    expect(without.status).toBe(200);
    expect(without.body.refresh_token).toBeUndefined();
    expect(without.body.scope).toBe("read write");

    // As the MCP TypeScript SDK asks: offline_access with prompt=consent. The client never listed the scope.
    const withIt = await codeFlow(server, { scope: "read offline_access", prompt: "consent" });
    expect(withIt.body).toMatchObject({ scope: "read offline_access" });
    expect(typeof withIt.body.refresh_token).toBe("string");
    const refreshed = await post(server, "/token", { grant_type: "refresh_token", client_id: "cli", refresh_token: String(withIt.body.refresh_token) });
    const body = await refreshed.json();
    expect([refreshed.status, body.scope, typeof body.refresh_token]).toEqual([200, "read offline_access", "string"]);
  });

  test("the consent page says what offline_access means", async () => {
    const { server } = await mcpFixture({ offlineAccess: true });
    const { challenge } = await pkce();
    const page = await server.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams({
      response_type: "code", client_id: "cli", redirect_uri: LOOPBACK, scope: "read offline_access", code_challenge: challenge, code_challenge_method: "S256",
    })}`));
    expect(await page.text()).toContain("Keep access while you are not using the app");
  });

  test("a client without the refresh_token grant is never granted offline_access", async () => {
    const { server } = await mcpFixture({ offlineAccess: true });
    await server.clients.register({ client_id: "once", name: "One-off", type: "public", redirect_uris: [LOOPBACK], scopes: ["read"], grant_types: ["authorization_code"] });
    const { body } = await codeFlow(server, { client_id: "once", scope: "read offline_access" });
    expect(body.scope).toBe("read");
    expect(body.refresh_token).toBeUndefined();
    const alone = await codeFlow(server, { client_id: "once", scope: "offline_access" });
    expect(redirectError(alone.authorize)).toBe("invalid_scope");
  });
});

describe("offline_access off (the default)", () => {
  test("refresh tokens as before, the scope is unknown, and the metadata does not list it", async () => {
    const { server } = await mcpFixture();
    expect((await metadataOf(server.fetch)).scopes_supported).not.toContain("offline_access");
    const { body } = await codeFlow(server, { scope: "read" });
    expect(typeof body.refresh_token).toBe("string");
    const asked = await codeFlow(server, { scope: "read offline_access" });
    expect(redirectError(asked.authorize)).toBe("invalid_scope");
  });
});

describe("the config file's offline_access key", () => {
  test("true turns it on in the reference server; anything but a boolean is refused", async () => {
    const config = parseConfig({ ...DEMO_CONFIG, offline_access: true }, "test.json");
    const app = await createReferenceApp({ issuer: "http://127.0.0.1:8080", config, passwordIterations: 1, purgeInterval: 0 });
    expect((await metadataOf(app.fetch, "http://127.0.0.1:8080")).scopes_supported).toContain("offline_access");
    app.close();
    expect(() => parseConfig({ ...DEMO_CONFIG, offline_access: "yes" }, "test.json")).toThrow(ConfigurationError);
    expect(() => parseConfig({ ...DEMO_CONFIG, offline_access: "yes" }, "test.json")).toThrow(/offline_access/);
  });

  test("a grant with offline_access stops refreshing once the client loses the refresh_token grant", async () => {
    const { server } = await mcpFixture({ offlineAccess: true });
    const { body } = await codeFlow(server, { scope: "read offline_access" });
    await server.clients.register({
      client_id: "cli", name: "Command line", type: "public", redirect_uris: [LOOPBACK], scopes: ["read", "write", "export"],
      grant_types: ["authorization_code"],
    }, { keepState: true });
    const refreshed = await post(server, "/token", { grant_type: "refresh_token", client_id: "cli", refresh_token: String(body.refresh_token) });
    expect((await errorOf(refreshed)).error).toMatch(/^(invalid_scope|unauthorized_client)$/);
  });
});
