// Addresses, methods, metadata (RFC 8414), revocation (RFC 7009) and introspection (RFC 7662).
import { describe, expect, test } from "vitest";
import { createAuthorizationServer } from "../mod.ts";
import { fixture, ISSUER, postToken, REDIRECT, SECRETS, spaTokens, webCode } from "./helpers.ts";

const form = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  new Request(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

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

test("metadata (RFC 8414) names the endpoints and what they support", async () => {
  const { server } = await fixture();
  const response = await server.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`));
  const meta = await response.json();
  expect(meta).toMatchObject({
    issuer: ISSUER,
    authorization_endpoint: `${ISSUER}/authorize`,
    token_endpoint: `${ISSUER}/token`,
    revocation_endpoint: `${ISSUER}/revoke`,
    introspection_endpoint: `${ISSUER}/introspect`,
    response_types_supported: ["code"],
    code_challenge_methods_supported: ["S256"],
    authorization_response_iss_parameter_supported: true,
  });
  expect(meta.scopes_supported).toEqual(["read", "write", "export", "admin"]);
  expect(server.metadata()).toEqual(meta);
});

describe("revocation (RFC 7009)", () => {
  test("revoking a refresh token revokes its grant; the answer is 200 either way", async () => {
    const { server } = await fixture();
    const tokens = await spaTokens(server);
    const response = await server.fetch(form(`${ISSUER}/revoke`, { client_id: "spa", token: tokens.refresh_token }));
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    await expect(server.verifyAuthorization(`Bearer ${tokens.access_token}`)).rejects.toMatchObject({ code: "invalid_token" });
    expect((await server.fetch(form(`${ISSUER}/revoke`, { client_id: "spa", token: "unknown" }))).status).toBe(200);
  });

  test("the answer is an empty 200 without a JSON content type (interop with @badgateway/oauth2-client)", async () => {
    const { server } = await fixture();
    const tokens = await spaTokens(server);
    const response = await server.fetch(form(`${ISSUER}/revoke`, { client_id: "spa", token: tokens.access_token }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBeNull();
    expect(await response.text()).toBe("");
  });

  test("another client's token is refused with unauthorized_client (RFC 7009 §2.1) and left alone", async () => {
    const { server } = await fixture();
    const tokens = await spaTokens(server);
    const response = await server.fetch(form(`${ISSUER}/revoke`, { token: tokens.access_token }, basic("web", SECRETS.web)));
    expect(response.status).toBe(400);
    expect((await response.json()).error).toBe("unauthorized_client");
    const refresh = await server.fetch(form(`${ISSUER}/revoke`, { token: tokens.refresh_token }, basic("web", SECRETS.web)));
    expect((await refresh.json()).error).toBe("unauthorized_client");
    await expect(server.verifyAuthorization(`Bearer ${tokens.access_token}`)).resolves.toMatchObject({ client_id: "spa" });
  });

  test("needs client authentication and a token", async () => {
    const { server } = await fixture();
    expect((await server.fetch(form(`${ISSUER}/revoke`, { token: "x" }, basic("web", "wrong-secret-xxxxxxxx")))).status).toBe(401);
    const missing = await server.fetch(form(`${ISSUER}/revoke`, { client_id: "spa" }));
    expect(missing.status).toBe(400);
    expect((await missing.json()).error).toBe("invalid_request");
  });
});

describe("introspection (RFC 7662)", () => {
  test("a live token is described to its own client; a dead one is only inactive", async () => {
    const { server, clock } = await fixture();
    const code = await webCode(server);
    const tokens = await (await postToken(server, {
      grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code,
    })).json();
    const ask = async (token: string, hint?: string) =>
      (await server.fetch(form(`${ISSUER}/introspect`, { token, ...(hint ? { token_type_hint: hint } : {}) }, basic("web", SECRETS.web)))).json();
    expect(await ask(tokens.access_token)).toEqual({
      active: true, scope: "read", client_id: "web", sub: "alice", token_type: "Bearer",
      exp: Math.floor(clock.now / 1000) + 3600, iss: ISSUER,
    });
    // RFC 7662 §2.2: token_type is an access token type; a refresh token has none.
    const refresh = await ask(tokens.refresh_token, "refresh_token");
    expect(refresh).toMatchObject({ active: true });
    expect(refresh.token_type).toBeUndefined();
    expect(await ask("nonsense")).toEqual({ active: false });
    clock.advance(3600);
    expect(await ask(tokens.access_token)).toEqual({ active: false });
  });

  test("another client sees only inactive, unless it may introspect all access tokens", async () => {
    const { server } = await fixture();
    await server.clients.register({
      client_id: "rs", client_secret: "rs-secret-0123456789abcdef", name: "Resource server", type: "confidential",
      scopes: ["read"], grant_types: ["client_credentials"], introspection: "all",
    });
    const tokens = await spaTokens(server);
    const ask = async (id: string, secret: string, token: string) =>
      (await server.fetch(form(`${ISSUER}/introspect`, { token }, basic(id, secret)))).json();
    expect(await ask("backend", SECRETS.backend, tokens.access_token)).toEqual({ active: false });
    expect(await ask("backend", SECRETS.backend, tokens.refresh_token)).toEqual({ active: false });
    expect(await ask("rs", "rs-secret-0123456789abcdef", tokens.access_token)).toMatchObject({ active: true, client_id: "spa", sub: "alice" });
    // A refresh token answers only to its own client, whatever the caller's policy.
    expect(await ask("rs", "rs-secret-0123456789abcdef", tokens.refresh_token)).toEqual({ active: false });
    // A paused client's tokens are inactive to everyone.
    await server.clients.pause("spa");
    expect(await ask("rs", "rs-secret-0123456789abcdef", tokens.access_token)).toEqual({ active: false });
  });

  test("public clients may not introspect", async () => {
    const { server } = await fixture();
    const response = await server.fetch(form(`${ISSUER}/introspect`, { client_id: "spa", token: "x" }));
    expect(response.status).toBe(401);
    expect((await response.json()).error).toBe("invalid_client");
  });
});

test("error descriptions stay inside RFC 6749 §5.2's character set, whatever the client sent", async () => {
  const { server } = await fixture();
  const allowed = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
  const bodies = [
    "grant_type=%C3%A9%22x%5C",
    "grant_type=client_credentials&grant_type=client_credentials",
    "grant_type=client_credentials&%E2%98%83%22=1&%E2%98%83%22=2",
  ];
  for (const body of bodies) {
    const response = await server.fetch(new Request(`${ISSUER}/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body }));
    const json = await response.json();
    expect(json.error_description).toMatch(allowed);
  }
});
