// Routing: addresses, methods, HEAD, and the headers every answer carries.
import { describe, expect, test } from "vitest";
import { createAuthorizationServer } from "../../mod.ts";
import { authorizeUrl, codeRequest, csrfOf, fixture, getAuthorize, ISSUER, postToken, SECRETS } from "../helpers.ts";
import type { Throttle } from "../../lib/throttle.ts";

const form = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  new Request(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });

describe("routing", () => {
  test.each([
    ["/nowhere"],
    ["/index.php"],
    ["/index.php?module=Other&action=token"],
    ["/index.php?module=OAuth2&action=nothing"],
    ["/index.php?module=OAuth2"],
  ])("%s → 404", async (path) => {
    const { server } = await fixture();
    expect((await server.fetch(new Request(ISSUER + path))).status).toBe(404);
  });

  test("wrong method → 405 with Allow", async () => {
    const { server } = await fixture();
    const token = await server.fetch(new Request(`${ISSUER}/index.php?module=OAuth2&action=token`));
    expect(token.status).toBe(405);
    expect(token.headers.get("allow")).toBe("POST");
    expect(token.headers.get("cache-control")).toBe("no-store");
    const authorize = await server.fetch(new Request(`${ISSUER}/authorize`, { method: "DELETE" }));
    expect(authorize.status).toBe(405);
    expect(authorize.headers.get("allow")).toBe("GET, POST");
  });

  test("an issuer with a path: the spec addresses and clean paths live under it", async () => {
    const server = createAuthorizationServer({ issuer: "https://example.com/analytics/", scopes: { read: "Read" } });
    await server.clients.register({ client_id: "cc", client_secret: "cc-secret-0123456789", name: "CC", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] });
    const fields = { grant_type: "client_credentials", client_id: "cc", client_secret: "cc-secret-0123456789", scope: "read" };
    expect((await server.fetch(form("https://example.com/analytics/index.php?module=OAuth2&action=token", fields))).status).toBe(200);
    expect((await server.fetch(form("https://example.com/analytics/token", fields))).status).toBe(200);
    expect((await server.fetch(form("https://example.com/token", fields))).status).toBe(404);
    const meta = await server.fetch(new Request("https://example.com/.well-known/oauth-authorization-server/analytics"));
    expect((await meta.json()).issuer).toBe("https://example.com/analytics");
  });

  test("clean paths can be renamed or switched off", async () => {
    const { server } = await fixture({ paths: { token: "/oauth/token", revoke: null } });
    expect((await postToken(server, { grant_type: "client_credentials" })).status).toBe(400);
    expect((await server.fetch(form(`${ISSUER}/oauth/token`, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" }))).status).toBe(200);
    expect((await server.fetch(form(`${ISSUER}/token`, {}))).status).toBe(404);
    expect((await server.fetch(form(`${ISSUER}/revoke`, {}))).status).toBe(404);
  });

  test("HEAD on a GET endpoint has no body", async () => {
    const { server } = await fixture();
    const response = await server.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`, { method: "HEAD" }));
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("");
  });
});

describe("headers", () => {
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

  describe("headers", () => {
    test("the redirect that carries the code is Cache-Control: no-store", async () => {
      const { server } = await fixture();
      const params = codeRequest("web");
      const page = await getAuthorize(server, params);
      const response = await server.fetch(new Request(authorizeUrl(params), {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ decision: "allow", csrf: csrfOf(await page.text()) }).toString(),
      }));
      expect(response.status).toBe(303);
      expect(response.headers.get("location")).toContain("code=");
      expect(response.headers.get("cache-control")).toBe("no-store");
    });

    test("a throttled client authentication says when to retry", async () => {
      const blocked: Throttle = { retryAfter: () => 1500, fail: () => {} };
      const { server } = await fixture({ throttle: blocked });
      const response = await postToken(server, { grant_type: "client_credentials" }, basic("backend", SECRETS.backend));
      expect(response.status).toBe(429);
      expect(response.headers.get("retry-after")).toBe("2");
    });

    test("without a known address, the throttle still counts failures per client_id", async () => {
      const keys: string[] = [];
      const recording: Throttle = { retryAfter: () => 0, fail: (key) => void keys.push(key) };
      const { server } = await fixture({ throttle: recording });
      await postToken(server, { grant_type: "client_credentials" }, basic("backend", "wrong-secret"));
      await postToken(server, { grant_type: "client_credentials" }, basic("other", "wrong-secret"));
      expect(keys.length).toBe(2);
      expect(new Set(keys).size).toBe(2);
    });
  });
});
