// The one door for clients: the same redirect URI rules, grant defaults and refusals on every path a client
// comes through (the library's `server.clients`, the config file, dynamic registration, client metadata
// documents). The command line's side is in test/cli/clients.test.ts.
import { describe, expect, test } from "vitest";
import { ConfigurationError, createAuthorizationServer } from "../../mod.ts";
import { parseConfig } from "../../lib/reference/config.ts";
import { ISSUER } from "../helpers.ts";

const DANGEROUS = ["file:///etc/passwd", "vbscript:msgbox(1)", "javascript:alert(1)", "data:text/html,hi", "https://a.example/cb#frag", "https://user:pw@a.example/cb"];

const server = () =>
  createAuthorizationServer({
    issuer: ISSUER,
    scopes: { read: "Read" },
    defaultScope: "read",
    profile: "rfc6749",
    registration: { enabled: true },
  });

describe("a redirect URI is refused alike on every path", () => {
  test.each(DANGEROUS)("the library refuses %s", async (uri) => {
    await expect(server().clients.register({ name: "X", type: "public", scopes: ["read"], redirect_uris: [uri] })).rejects.toThrow(ConfigurationError);
  });

  test.each(DANGEROUS)("the config file refuses %s, naming the client's key", (uri) => {
    const config = {
      scopes: [{ name: "read", description: "Read" }],
      clients: [{ client_id: "app", name: "App", redirect_uris: [uri], scopes: ["read"], grant_types: ["authorization_code"] }],
    };
    expect(() => parseConfig(config, "app.json")).toThrow(/^Cannot load config "app.json": clients\[0\]\.redirect_uris: a redirect URI of client "app" is refused/);
  });

  test.each(DANGEROUS)("dynamic registration refuses %s with invalid_redirect_uri", async (uri) => {
    const response = await server().fetch(new Request(`${ISSUER}/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "X", redirect_uris: [uri], token_endpoint_auth_method: "none" }),
    }));
    expect([response.status, (await response.json()).error]).toEqual([400, "invalid_redirect_uri"]);
  });

  test("native and web redirect URIs pass on every path", async () => {
    const ok = ["https://app.example/cb", "http://127.0.0.1:5000/cb", "http://[::1]/cb", "com.example.app:/cb"];
    await expect(server().clients.register({ name: "X", type: "public", scopes: ["read"], redirect_uris: ok })).resolves.toBeTruthy();
  });
});

describe("grant types default the same way on every path", () => {
  test("with redirect URIs: the code flow and refresh; without, client_credentials", async () => {
    const s = server();
    const web = await s.clients.register({ name: "Web", type: "confidential", scopes: ["read"], redirect_uris: ["https://a.example/cb"] });
    expect(web.client.grant_types).toEqual(["authorization_code", "refresh_token"]);
    const job = await s.clients.register({ name: "Job", type: "confidential", scopes: ["read"] });
    expect(job.client.grant_types).toEqual(["client_credentials"]);
    const response = await s.fetch(new Request(`${ISSUER}/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "Host", redirect_uris: ["http://127.0.0.1/cb"], token_endpoint_auth_method: "none" }),
    }));
    const registered = await response.json();
    expect([response.status, registered.grant_types, registered.response_types]).toEqual([201, ["authorization_code", "refresh_token"], ["code"]]);
  });
});

test("secret rotation goes through the registry: a new secret works, the old one stops, config clients are refused", async () => {
  const s = server();
  const { client, client_secret } = await s.clients.register({ client_id: "job", name: "Job", type: "confidential", scopes: ["read"] });
  const token = (secret: string) =>
    s.fetch(new Request(`${ISSUER}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: "job", client_secret: secret, scope: "read" }),
    }));
  expect((await token(client_secret!)).status).toBe(200);
  const rotated = await s.clients.rotateSecret(client.client_id);
  expect((await token(client_secret!)).status).toBe(401);
  expect((await token(rotated.client_secret)).status).toBe(200);
  await s.clients.register({ client_id: "cfg", name: "Cfg", type: "confidential", scopes: ["read"] }, { origin: "config" });
  await expect(s.clients.rotateSecret("cfg")).rejects.toThrow(/comes from the config file/);
  await s.clients.register({ client_id: "spa", name: "Spa", type: "public", scopes: ["read"], redirect_uris: ["https://a.example/cb"] });
  await expect(s.clients.rotateSecret("spa")).rejects.toThrow(/is public/);
});

describe("names: no control or bidi characters anywhere, no look-alike of an operator's client", () => {
  const named = async (name: string, server = createAuthorizationServer({
    issuer: ISSUER, scopes: { read: "Read" }, defaultScope: "read", profile: "rfc6749", registration: { enabled: true },
  })) => {
    await server.clients.register({ client_id: "holdout", name: "Holdout Web", type: "public", scopes: ["read"], redirect_uris: ["https://holdout.example/cb"] });
    const response = await server.fetch(new Request(`${ISSUER}/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: name, redirect_uris: ["https://evil.example/cb"], token_endpoint_auth_method: "none" }),
    }));
    return { status: response.status, body: await response.json() as Record<string, string> };
  };

  test.each([
    ["the same name", "Holdout Web"],
    ["another case", "holdout WEB"],
    ["other whitespace", "  Holdout\u00a0\u2003Web "],
    ["no space", "HoldoutWeb"],
    ["a Cyrillic о", "H\u043eldout Web"],
    ["Cyrillic Н and е", "\u041doldout W\u0435b"],
    ["a Greek Ο", "H\u039fldout Web"],
    ["a zero-width space", "Hold\u200bout Web"],
    ["fullwidth letters (NFKC)", "\uff28oldout Web"],
    ["an accent", "Ho\u0301ldout Web"],
    ["a capital I for the l", "HoIdout Web"],
    ["a digit 0 for the o", "H0ldout Web"],
    ["vv for w", "Holdout VVeb"],
  ])("registration refuses %s", async (_, name) => {
    const { status, body } = await named(name);
    expect([status, body.error]).toEqual([400, "invalid_client_metadata"]);
    expect(body.error_description).toContain("Holdout Web");
  });

  test.each(["Holdout Web Beta", "Holdout", "Web Holdout"])("a different name passes: %s", async (name) => {
    expect((await named(name)).status).toBe(201);
  });

  test.each([
    ["an escape sequence", "Tool\u001b[2K\u001b[1A"],
    ["a bell and OSC title", "Tool\u001b]0;owned\u0007"],
    ["a C1 CSI", "Tool\u009b2K"],
    ["a right-to-left override", "Tool\u202eexe.txt"],
    ["a bidi isolate", "Tool\u2066x\u2069"],
    ["a newline", "Tool\nroot"],
    ["DEL", "Tool\u007f"],
  ])("registration refuses a name with %s", async (_, name) => {
    const { status, body } = await named(name);
    expect([status, body.error]).toEqual([400, "invalid_client_metadata"]);
    expect(body.error_description).toMatch(/U\+[0-9A-F]{4}/);
  });

  test("the library and the config file refuse control characters in names too", async () => {
    const server = createAuthorizationServer({ issuer: ISSUER, scopes: { read: "Read" } });
    await expect(server.clients.register({ name: "Job\u001b[31m", type: "confidential", scopes: ["read"] })).rejects.toThrow(/U\+001B/);
    const config = { scopes: [{ name: "read", description: "Read" }], clients: [{ client_id: "a", name: "A\u202eB", redirect_uris: [], scopes: ["read"], grant_types: ["client_credentials"], client_secret: "0123456789abcdef0123" }] };
    expect(() => parseConfig(config, "app.json")).toThrow(/clients\[0\]\.name/);
  });

  test("a client added to the store by another process (the command line) is protected too", async () => {
    const server = createAuthorizationServer({
      issuer: ISSUER, scopes: { read: "Read" }, defaultScope: "read", profile: "rfc6749", registration: { enabled: true },
    });
    await server.storage.saveClient({
      client_id: "payroll", name: "Payroll", type: "public", redirect_uris: ["https://payroll.example/cb"], scopes: ["read"],
      grant_types: ["authorization_code"], client_credentials_refresh_token: false, active: true, created_at: 0, origin: "cli",
    });
    const response = await server.fetch(new Request(`${ISSUER}/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "PAYR0LL", redirect_uris: ["https://evil.example/cb"], token_endpoint_auth_method: "none" }),
    }));
    expect(response.status).toBe(400);
  });
});
