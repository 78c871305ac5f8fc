// Edges of the authorization endpoint found by mutation testing (item 12 of issue 15): each test fails when the
// rule it names is broken. Through the handler only, so the same file runs under vitest, bun test and deno test.
import { describe, expect, test } from "vitest";
import { OAuthError } from "../mod.ts";
import type { AuthorizationServer } from "../mod.ts";
import { authorizeUrl, codeRequest, csrfOf, fixture, getAuthorize, ISSUER, pkce, REDIRECT } from "./helpers.ts";
import { LOOPBACK, MCP, mcpFixture, OTHER_RESOURCE } from "./mcp_helpers.ts";

type Params = Record<string, string>;
const allow = (server: AuthorizationServer, url: string, csrf: string) =>
  server.fetch(new Request(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ decision: "allow", csrf }).toString(),
  }));
const pageAt = async (server: AuthorizationServer, url: string) => {
  const response = await server.fetch(new Request(url));
  expect(response.status, url).toBe(200);
  return response.text();
};

describe("the consent form's CSRF token is bound to every parameter", () => {
  // A token from the page for `shown` must not approve `posted`: the refusal is a 403 page that issues nothing.
  async function refused(server: AuthorizationServer, shown: string, posted: string): Promise<void> {
    const csrf = csrfOf(await pageAt(server, shown));
    const response = await allow(server, posted, csrf);
    expect(response.status).toBe(403);
    expect(response.headers.get("location")).toBeNull();
    expect(await response.text()).toContain("Please start again");
    expect((await allow(server, shown, csrf)).status, "the token still works for its own request").toBe(303);
  }

  test("code_challenge", async () => {
    const { server } = await fixture();
    const [a, b] = [await pkce(), await pkce()];
    const pkceOf = (challenge: string): Params => ({ code_challenge: challenge, code_challenge_method: "S256" });
    await refused(server, authorizeUrl(codeRequest("spa", pkceOf(a.challenge))), authorizeUrl(codeRequest("spa", pkceOf(b.challenge))));
    await refused(server, authorizeUrl(codeRequest("web")), authorizeUrl(codeRequest("web", pkceOf(b.challenge))));
  });

  test("resource (RFC 8707)", async () => {
    const { server } = await mcpFixture();
    const { challenge } = await pkce();
    const url = (extra: Params) => `${ISSUER}/authorize?${new URLSearchParams({
      response_type: "code", client_id: "cli", redirect_uri: LOOPBACK, scope: "read", state: "s",
      code_challenge: challenge, code_challenge_method: "S256", ...extra,
    })}`;
    await refused(server, url({ resource: MCP }), url({ resource: OTHER_RESOURCE }));
    await refused(server, url({}), url({ resource: MCP }));
  });
});

describe("the CSRF token's shape", () => {
  test("time, a 22-character nonce and the MAC; a token with a field missing or added is refused (403, never a 500)", async () => {
    const { server } = await fixture();
    const url = authorizeUrl(codeRequest("web"));
    const csrf = csrfOf(await pageAt(server, url));
    expect(csrf).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    const [time, nonce, mac] = csrf.split(".");
    for (const forged of [time!, `${time}.${nonce}`, `${csrf}.`, `${csrf}.${mac}`, `${time}.${nonce}.${mac}.x`]) {
      const response = await allow(server, url, forged);
      expect(response.status, forged).toBe(403);
    }
    expect((await allow(server, url, csrf)).status).toBe(303);
  });
});

describe("refusals say why", () => {
  test("a consent form posted twice: the second is a 403 page that says so, with no redirect", async () => {
    const { server } = await fixture();
    const url = authorizeUrl(codeRequest("web"));
    const csrf = csrfOf(await pageAt(server, url));
    expect((await allow(server, url, csrf)).status).toBe(303);
    const again = await allow(server, url, csrf);
    expect(again.status).toBe(403);
    expect(again.headers.get("location")).toBeNull();
    expect(await again.text()).toContain("already used");
  });

  test.each([
    ["no client_id", { client_id: undefined }, "client_id parameter is missing"],
    ["an unknown client_id", { client_id: "nobody" }, "not registered"],
    ["no redirect_uri", { redirect_uri: undefined }, "redirect_uri parameter is missing"],
  ])("%s: an error page that names the problem, no redirect", async (_, change, text) => {
    const { server } = await fixture();
    const params: Params = {};
    for (const [name, value] of Object.entries({ ...codeRequest("web"), ...change })) if (value !== undefined) params[name] = value;
    const response = await getAuthorize(server, params);
    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
    expect(await response.text()).toContain(text);
  });

  test("a form of another media type is refused before the decision is read", async () => {
    const { server } = await fixture();
    const url = authorizeUrl(codeRequest("web"));
    const csrf = csrfOf(await pageAt(server, url));
    const response = await server.fetch(new Request(url, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ decision: "allow", csrf }),
    }));
    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
    expect(await response.text()).toContain("application/x-www-form-urlencoded");
  });

  test("invalid_scope and invalid_target carry the reason the scope or resource check gave", async () => {
    const { server } = await mcpFixture();
    const at = (extra: Params) => server.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams(codeRequest("web", extra))}`));
    const scope = await at({ scope: "admin" });
    const scopeError = new URL(scope.headers.get("location")!).searchParams;
    expect(scopeError.get("error")).toBe("invalid_scope");
    expect(scopeError.get("error_description")).toBe("The scope is not allowed for this client");
    const resource = await at({ resource: "https://unknown.example/api" });
    const resourceError = new URL(resource.headers.get("location")!).searchParams;
    expect(resourceError.get("error")).toBe("invalid_target");
    expect(resourceError.get("error_description")).toBe("The resource is not known to this server");
  });
});

describe("the login hook must name a user", () => {
  const callable = Object.assign(() => undefined, { id: "fn" });
  test.each([
    ["null", null],
    ["a string", "alice"],
    ["a function with an id", callable],
    ["a numeric id", { id: 42 }],
    ["an empty id", { id: "" }],
    ["no id", { name: "Alice" }],
  ])("%s: a 500 page, no redirect, and onError gets the value as the cause", async (_, value) => {
    const { server, errors } = await fixture({ authenticateUser: () => value as never });
    const response = await getAuthorize(server, codeRequest("web"));
    expect(response.status).toBe(500);
    expect(response.headers.get("location")).toBeNull();
    const error = errors.at(-1);
    expect(error).toBeInstanceOf(OAuthError);
    expect((error as OAuthError).code).toBe("server_error");
    expect((error as OAuthError).cause).toBe(value);
  });
});

describe("the consent page", () => {
  test("lists the resources asked for, and none when none were", async () => {
    const { server } = await mcpFixture();
    const { challenge } = await pkce();
    const params = { response_type: "code", client_id: "cli", redirect_uri: LOOPBACK, scope: "read", code_challenge: challenge, code_challenge_method: "S256" };
    expect(await pageAt(server, `${ISSUER}/authorize?${new URLSearchParams({ ...params, resource: MCP })}`)).toContain(`At: <code>${MCP}</code>`);
    expect(await pageAt(server, `${ISSUER}/authorize?${new URLSearchParams(params)}`)).not.toContain("At: ");
  });

  test("warns about a loopback redirect only for clients that registered themselves", async () => {
    const { server } = await mcpFixture({ registration: { enabled: true }, defaultScope: "read" });
    const { challenge } = await pkce();
    const register = async (redirect: string) => {
      const response = await server.fetch(new Request(`${ISSUER}/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client_name: "Self", redirect_uris: [redirect], token_endpoint_auth_method: "none" }),
      }));
      expect(response.status).toBe(201);
      return String((await response.json() as { client_id: string }).client_id);
    };
    const page = (clientId: string, redirect: string) => pageAt(server, `${ISSUER}/authorize?${new URLSearchParams({
      response_type: "code", client_id: clientId, redirect_uri: redirect, scope: "read", code_challenge: challenge, code_challenge_method: "S256",
    })}`);
    const WARNING = "a program on this device";
    expect(await page(await register(LOOPBACK), LOOPBACK)).toContain(WARNING);
    expect(await page(await register(REDIRECT), REDIRECT)).not.toContain(WARNING);
    // `cli` was registered by the operator: its loopback redirect was vetted.
    expect(await page("cli", LOOPBACK)).not.toContain(WARNING);
    expect(await page("cli", LOOPBACK)).not.toContain("published by");
  });

  test("names the host that publishes a Client ID Metadata Document", async () => {
    const clientId = "https://tools.example.net/oauth/client.json";
    const document = { client_id: clientId, client_name: "Tool", redirect_uris: [LOOPBACK], token_endpoint_auth_method: "none" };
    const fetch = async () => Response.json(document, { headers: { "cache-control": "max-age=600" } });
    const { server } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch }, defaultScope: "read" });
    const { challenge } = await pkce();
    const html = await pageAt(server, `${ISSUER}/authorize?${new URLSearchParams({
      response_type: "code", client_id: clientId, redirect_uri: LOOPBACK, scope: "read", code_challenge: challenge, code_challenge_method: "S256",
    })}`);
    expect(html).toContain("published by <strong>tools.example.net</strong>");
  });
});

describe("audit events of the consent", () => {
  test("granted, denied and code.issued name the client and the user", async () => {
    const events: Record<string, unknown>[] = [];
    const { server } = await fixture({ onEvent: (event) => void events.push({ ...event }) });
    for (const decision of ["allow", "deny"]) {
      const url = authorizeUrl(codeRequest("web"));
      const csrf = csrfOf(await pageAt(server, url));
      await server.fetch(new Request(url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-test-user": "alice" },
        body: new URLSearchParams({ decision, csrf }).toString(),
      }));
    }
    for (const type of ["consent.granted", "code.issued", "consent.denied"]) {
      expect(events.find((e) => e.type === type), type).toMatchObject({ client_id: "web", user_id: "alice" });
    }
  });
});
