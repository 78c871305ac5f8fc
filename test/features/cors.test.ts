// CORS (issue 11 item 7): token, revocation, registration and metadata answer browser apps on other origins;
// never with credentials, never on the authorization endpoint; a preflight spends nothing.
import { describe, expect, test } from "vitest";
import { ISSUER } from "../helpers.ts";
import { codeFlow, mcpFixture, post } from "../mcp_helpers.ts";

const APP = "https://spa.example";
const options = (path: string, origin = APP, method = "POST") =>
  new Request(`${ISSUER}${path}`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": "content-type" },
  });

describe("by default any origin may call the JSON endpoints", () => {
  test.each(["/token", "/revoke", "/introspect", "/register"])("preflight of %s: 204, methods and headers, no credentials", async (path) => {
    const { server } = await mcpFixture({ registration: { enabled: true } });
    const response = await server.fetch(options(path));
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-allow-methods")).toContain("POST");
    expect(response.headers.get("access-control-allow-headers")).toContain("content-type");
    expect(response.headers.get("access-control-allow-credentials")).toBeNull();
  });

  test("metadata answers GET with the header, and its preflight", async () => {
    const { server } = await mcpFixture();
    const get = await server.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`, { headers: { origin: APP } }));
    expect(get.headers.get("access-control-allow-origin")).toBe("*");
    const preflight = await server.fetch(options("/.well-known/oauth-authorization-server", APP, "GET"));
    expect(preflight.status).toBe(204);
  });

  test("token responses and token errors both carry the header", async () => {
    const { server } = await mcpFixture();
    const error = await post(server, "/token", { grant_type: "authorization_code", client_id: "cli", code: "x" }, { origin: APP });
    expect(error.status).toBe(400);
    expect(error.headers.get("access-control-allow-origin")).toBe("*");
  });

  test("a preflight never spends a code", async () => {
    const { server } = await mcpFixture();
    // The preflight carries no body; even a body sent with OPTIONS is never read.
    const request = new Request(`${ISSUER}/token`, { method: "OPTIONS", headers: { origin: APP, "content-type": "application/x-www-form-urlencoded" }, body: "grant_type=authorization_code&code=x" });
    expect((await server.fetch(request)).status).toBe(204);
    const { status } = await codeFlow(server, {});
    expect(status).toBe(200);
  });
});

describe("never on the authorization endpoint or pages", () => {
  test("no CORS headers on /authorize, and OPTIONS there is not a preflight", async () => {
    const { server } = await mcpFixture();
    const page = await server.fetch(new Request(`${ISSUER}/authorize?client_id=cli`, { headers: { origin: APP } }));
    expect(page.headers.get("access-control-allow-origin")).toBeNull();
    const preflight = await server.fetch(options("/authorize", APP, "GET"));
    expect(preflight.status).toBe(405);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("a list of origins", () => {
  test("echoes a listed origin with Vary, and gives nothing to others", async () => {
    const { server } = await mcpFixture({ cors: { origins: [APP] } });
    const listed = await server.fetch(options("/token"));
    expect(listed.headers.get("access-control-allow-origin")).toBe(APP);
    expect(listed.headers.get("vary")).toBe("Origin");
    const other = await server.fetch(options("/token", "https://evil.example"));
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    expect(other.headers.get("access-control-allow-methods")).toBeNull();
  });

  test("cors: false sends no headers; a bad origin list is refused at start", async () => {
    const { server } = await mcpFixture({ cors: false });
    const response = await post(server, "/token", { grant_type: "client_credentials" }, { origin: APP });
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    await expect(mcpFixture({ cors: { origins: ["https://spa.example/"] } })).rejects.toThrow(/cors/);
  });
});
