// Resource indicators (RFC 8707; issue 11 item 3): bound at /authorize, only narrowed by the token request and
// refresh, and reported as `aud` by introspection and the Bearer guard.
import { describe, expect, test } from "vitest";
import { csrfOf, errorOf, fixture, ISSUER, SECRETS } from "../helpers.ts";
import { codeFlow, MCP, mcpFixture, OTHER_RESOURCE, post, redirectError } from "../mcp_helpers.ts";

const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

describe("at the authorization endpoint", () => {
  test.each([
    ["relative", "/mcp"],
    ["with a fragment", `${MCP}#x`],
    ["plain http off loopback", "http://mcp.example.com/mcp"],
    ["not configured", "https://evil.example/mcp"],
    ["configured but spelled differently", MCP + "/"],
    ["configured but in another case", MCP.toUpperCase()],
  ])("a resource %s is invalid_target, sent back to the client", async (_, resource) => {
    const { server } = await mcpFixture();
    const { authorize } = await codeFlow(server, { resource });
    expect(redirectError(authorize)).toBe("invalid_target");
  });

  test("without configured resources the parameter is ignored (RFC 8707 off)", async () => {
    const f = await fixture({ profile: "rfc6749" });
    await f.server.clients.register({ client_id: "cli", name: "CLI", type: "public", redirect_uris: ["http://127.0.0.1/callback"], scopes: ["read"] });
    const { status, body } = await codeFlow(f.server, { resource: "https://anything.example/" });
    expect(status).toBe(200);
    expect((await f.server.verifyAuthorization(`Bearer ${body.access_token}`)).aud).toBeUndefined();
  });
});

describe("bound to the code and the grant", () => {
  test("the token carries the audience; the guard and introspection report it", async () => {
    const { server } = await mcpFixture();
    const { status, body } = await codeFlow(server, { resource: MCP });
    expect(status).toBe(200);
    expect((await server.verifyAuthorization(`Bearer ${body.access_token}`)).aud).toEqual([MCP]);
  });

  test("the token request may repeat the bound resource, never name another", async () => {
    const { server } = await mcpFixture();
    expect((await codeFlow(server, { resource: MCP }, { resource: MCP })).status).toBe(200);
    const other = await codeFlow(server, { resource: MCP }, { resource: OTHER_RESOURCE });
    expect(other.status).toBe(400);
    expect(other.body.error).toBe("invalid_target");
  });

  test("a code bound to no resource cannot be given one at the token endpoint", async () => {
    const { server } = await mcpFixture();
    const result = await codeFlow(server, {}, { resource: MCP });
    expect(result.body.error).toBe("invalid_target");
  });

  test("a consent form shown for one resource cannot approve another", async () => {
    const { server } = await mcpFixture();
    const params = { response_type: "code", client_id: "cli", redirect_uri: "http://127.0.0.1/callback", scope: "read", code_challenge: "x".repeat(43), code_challenge_method: "S256" };
    const page = await server.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams({ ...params, resource: MCP })}`));
    const csrf = csrfOf(await page.text());
    const swapped = await server.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams({ ...params, resource: OTHER_RESOURCE })}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ decision: "allow", csrf }).toString(),
    }));
    expect(swapped.headers.get("location") ?? "").not.toContain("code=");
  });

  test("a refresh keeps the audience and may not change it", async () => {
    const { server } = await mcpFixture();
    const { body } = await codeFlow(server, { resource: MCP });
    const refreshed = await post(server, "/token", { grant_type: "refresh_token", client_id: "cli", refresh_token: String(body.refresh_token) });
    const next = await refreshed.json() as Record<string, string>;
    expect(refreshed.status).toBe(200);
    expect((await server.verifyAuthorization(`Bearer ${next.access_token}`)).aud).toEqual([MCP]);
    const widened = await post(server, "/token", { grant_type: "refresh_token", client_id: "cli", refresh_token: next.refresh_token!, resource: OTHER_RESOURCE });
    expect((await errorOf(widened)).error).toBe("invalid_target");
    const same = await post(server, "/token", { grant_type: "refresh_token", client_id: "cli", refresh_token: next.refresh_token!, resource: MCP });
    expect(same.status).toBe(200);
  });

  test("client_credentials may name a configured resource, and nothing else", async () => {
    const { server } = await mcpFixture();
    const ok = await post(server, "/token", { grant_type: "client_credentials", scope: "export", resource: OTHER_RESOURCE }, basic("backend", SECRETS.backend));
    const token = await ok.json() as Record<string, string>;
    expect((await server.verifyAuthorization(`Bearer ${token.access_token}`)).aud).toEqual([OTHER_RESOURCE]);
    const introspection = await post(server, "/introspect", { token: token.access_token! }, basic("backend", SECRETS.backend));
    expect(await introspection.json()).toMatchObject({ active: true, aud: OTHER_RESOURCE, token_type: "Bearer" });
    const bad = await post(server, "/token", { grant_type: "client_credentials", scope: "export", resource: "https://evil.example/" }, basic("backend", SECRETS.backend));
    expect((await errorOf(bad)).error).toBe("invalid_target");
  });

  test("bad configured resources are refused at start", async () => {
    await expect(mcpFixture({ resources: ["http://mcp.example.com/"] })).rejects.toThrow(/resources/);
    await expect(mcpFixture({ resources: ["https://mcp.example.com/#x"] })).rejects.toThrow(/resources/);
  });
});

// Canonical resources (MCP 2026-07-28 "Canonical Server URI"; RFC 3986 §6.2.2.1): scheme and host are
// case-insensitive, so a resource that differs from a configured one only there is that resource; `aud`
// carries the canonical form. Anything else stays an exact match.
describe("canonical resources", () => {
  const UPPER = "HTTPS://MCP.Example.COM/mcp";

  test("an upper-case scheme or host is the configured resource, and the audience is its canonical form", async () => {
    const { server } = await mcpFixture();
    const { status, body } = await codeFlow(server, { resource: UPPER }, { resource: "https://MCP.EXAMPLE.COM/mcp" });
    expect(status).toBe(200);
    expect((await server.verifyAuthorization(`Bearer ${body.access_token}`)).aud).toEqual([MCP]);
    const refreshed = await post(server, "/token", { grant_type: "refresh_token", client_id: "cli", refresh_token: String(body.refresh_token), resource: "hTTps://mcp.example.com/mcp" });
    expect(refreshed.status).toBe(200);
  });

  test("a configured resource written with capitals binds tokens to its canonical form", async () => {
    const { server } = await mcpFixture({ resources: ["https://MCP.Example.com/mcp"] });
    const { body } = await codeFlow(server, { resource: "https://MCP.Example.com/mcp" });
    expect((await server.verifyAuthorization(`Bearer ${body.access_token}`)).aud).toEqual([MCP]);
  });

  test.each([
    ["the path in another case", "https://mcp.example.com/MCP"],
    ["a trailing slash", `${MCP}/`],
    ["the default port written out", "https://mcp.example.com:443/mcp"],
    ["a percent-encoded path", "https://mcp.example.com/%6Dcp"],
    ["a dot segment", "https://mcp.example.com/x/../mcp"],
    ["a query", `${MCP}?a=1`],
    ["a leading space", ` ${MCP}`],
  ])("%s is another resource: invalid_target", async (_, resource) => {
    const { server } = await mcpFixture();
    const { authorize } = await codeFlow(server, { resource });
    expect(redirectError(authorize)).toBe("invalid_target");
  });
});
