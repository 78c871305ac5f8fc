// The authorization endpoint (RFC 6749 §4.1.1-4.1.2.1, RFC 7636 §4.3, RFC 9207; spec §4.1): what it checks, in
// which order, where its errors go, and the consent that turns into a code.
import { describe, expect, test } from "vitest";
import {
  authorizeUrl, codeRequest, consent, csrfOf, errorOf, fixture, getAuthorize, ISSUER, OTHER_REDIRECT, pkce, postToken, REDIRECT, SECRETS, spaCode, webCode,
} from "../helpers.ts";
import { OAuthError } from "../../mod.ts";
import type { AuthorizationServer } from "../../mod.ts";
import { LOOPBACK, MCP, mcpFixture, OTHER_RESOURCE } from "../mcp_helpers.ts";

/** Asserts an error redirect to the registered URI with `error`, `state` and `iss`; returns the error code. */
function redirectError(response: Response): string {
  expect(response.status).toBe(302);
  const location = new URL(response.headers.get("location")!);
  expect(location.origin + location.pathname).toBe(REDIRECT);
  expect(location.searchParams.get("state")).toBe("st-123");
  expect(location.searchParams.get("iss")).toBe(ISSUER);
  expect(location.searchParams.get("error_description")).toBeTruthy();
  return location.searchParams.get("error")!;
}

/** Asserts an HTML error page and no redirect at all. */
async function errorPage(response: Response): Promise<string> {
  expect(response.status).toBe(400);
  expect(response.headers.get("location")).toBeNull();
  expect(response.headers.get("content-type")).toMatch(/^text\/html/);
  return response.text();
}

describe("client_id and redirect_uri are verified before anything is redirected", () => {
  test.each([
    ["unknown client", { client_id: "nobody" }],
    ["missing client_id", { client_id: "" }],
    ["unregistered redirect_uri", { redirect_uri: "https://evil.example/callback" }],
    ["redirect_uri with an extra path segment", { redirect_uri: REDIRECT + "/x" }],
    ["redirect_uri with an extra query", { redirect_uri: REDIRECT + "?a=1" }],
    ["redirect_uri differing in case", { redirect_uri: REDIRECT.toUpperCase() }],
    ["redirect_uri with a trailing slash", { redirect_uri: REDIRECT + "/" }],
    ["missing redirect_uri", { redirect_uri: "" }],
  ])("%s: 400 page, no redirect", async (_, override) => {
    const { server } = await fixture();
    const params = { ...codeRequest("web"), ...override };
    for (const key of Object.keys(params)) if (params[key as keyof typeof params] === "") delete params[key as keyof typeof params];
    await errorPage(await getAuthorize(server, params));
  });

  test("a paused client gets the error page", async () => {
    const { server } = await fixture();
    await server.clients.pause("web");
    await errorPage(await getAuthorize(server, codeRequest("web")));
  });

  test("a repeated client_id or redirect_uri cannot be trusted: page, no redirect", async () => {
    const { server } = await fixture();
    const url = authorizeUrl(codeRequest("web")) + `&redirect_uri=${encodeURIComponent("https://evil.example/")}`;
    await errorPage(await server.fetch(new Request(url)));
    const url2 = authorizeUrl(codeRequest("web")) + "&client_id=spa";
    await errorPage(await server.fetch(new Request(url2)));
  });

  test("the error page escapes nothing from the request into markup and cannot be framed", async () => {
    const { server } = await fixture();
    const response = await getAuthorize(server, codeRequest("web", { redirect_uri: "https://x/<script>alert(1)</script>" }));
    const html = await errorPage(response);
    expect(html).not.toContain("<script>");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  });
});

describe("after that, errors go to the redirect_uri (RFC 6749 §4.1.2.1)", () => {
  const cases: [string, Record<string, string>, string, string?][] = [
    ["missing response_type", { response_type: "" }, "invalid_request"],
    ["response_type token", { response_type: "token" }, "unsupported_response_type"],
    ["missing scope", { scope: "" }, "invalid_scope"],
    ["two scopes", { scope: "read write" }, "invalid_scope"],
    ["a scope the client may not have", { scope: "admin" }, "invalid_scope"],
    ["an unknown scope", { scope: "everything" }, "invalid_scope"],
    ["public client without code_challenge", { code_challenge: "", code_challenge_method: "" }, "invalid_request", "spa"],
    ["code_challenge_method plain", { code_challenge_method: "plain" }, "invalid_request", "spa"],
    ["code_challenge without method", { code_challenge_method: "" }, "invalid_request", "spa"],
    ["malformed code_challenge", { code_challenge: "too-short" }, "invalid_request", "spa"],
    ["code_challenge_method without challenge", { code_challenge: "", code_challenge_method: "S256" }, "invalid_request"],
  ];
  test.each(cases)("%s → %s", async (_, override, expected, clientId = "web") => {
    const { server } = await fixture();
    const { challenge } = await pkce();
    const base = codeRequest(clientId, clientId === "spa" ? { code_challenge: challenge, code_challenge_method: "S256" } : {});
    const params: Record<string, string> = { ...base, ...override };
    for (const key of Object.keys(params)) if (params[key] === "") delete params[key];
    expect(redirectError(await getAuthorize(server, params))).toBe(expected);
  });

  test("a repeated parameter other than client_id/redirect_uri → invalid_request redirect", async () => {
    const { server } = await fixture();
    const response = await server.fetch(new Request(authorizeUrl(codeRequest("web")) + "&scope=read"));
    expect(redirectError(response)).toBe("invalid_request");
  });

  test("a client without the authorization_code grant → unauthorized_client", async () => {
    const { server } = await fixture();
    await server.clients.register({
      client_id: "cc-only", client_secret: "cc-only-secret-123456", name: "CC", type: "confidential",
      redirect_uris: [REDIRECT], scopes: ["read"], grant_types: ["client_credentials"],
    });
    expect(redirectError(await getAuthorize(server, codeRequest("cc-only")))).toBe("unauthorized_client");
  });

  test("Deny → access_denied with state and iss", async () => {
    const { server } = await fixture();
    const url = await consent(server, codeRequest("web"), "deny");
    expect(url.searchParams.get("error")).toBe("access_denied");
    expect(url.searchParams.get("state")).toBe("st-123");
    expect(url.searchParams.get("iss")).toBe(ISSUER);
    expect(url.searchParams.get("code")).toBeNull();
  });

  test("unknown extra parameters are ignored (RFC 6749 §3.1)", async () => {
    const { server } = await fixture();
    const url = await consent(server, codeRequest("web", { prompt: "consent", foo: "bar" }));
    expect(url.searchParams.get("code")).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});

describe("login and consent", () => {
  test("the user's hook decides: a Response from it is sent as it is", async () => {
    const { server } = await fixture();
    const response = await getAuthorize(server, codeRequest("web"), { "x-test-user": "none" });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("<form>login</form>");
  });

  test("the consent page names the client, the user and the scope with its description, and cannot be framed", async () => {
    const { server } = await fixture();
    const response = await getAuthorize(server, codeRequest("web", { scope: "write" }));
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain("Web app");
    expect(html).toContain("ALICE");
    expect(html).toContain("write");
    expect(html).toContain("Edit your reports");
    expect(html).toMatch(/name="decision" value="allow"/);
    expect(html).toMatch(/name="decision" value="deny"/);
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(response.headers.get("cache-control")).toBe("no-store");
  });

  test("Allow → 303 to the redirect_uri with code, the same state, and iss (RFC 9207)", async () => {
    const { server } = await fixture();
    const url = await consent(server, codeRequest("web", { state: "a b&c=d/é" }));
    expect(url.origin + url.pathname).toBe(REDIRECT);
    expect(url.searchParams.get("code")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get("state")).toBe("a b&c=d/é");
    expect(url.searchParams.get("iss")).toBe(ISSUER);
  });

  test("without state, none comes back", async () => {
    const { server } = await fixture();
    const params = codeRequest("web");
    delete params.state;
    const url = await consent(server, params);
    expect(url.searchParams.has("state")).toBe(false);
    expect(url.searchParams.get("code")).toBeTruthy();
  });

  test("a registered redirect_uri with its own query keeps it", async () => {
    const { server } = await fixture();
    await server.clients.register({
      client_id: "q", name: "Q", type: "confidential", client_secret: "q-secret-0123456789",
      redirect_uris: ["https://q.example/cb?tenant=7"], scopes: ["read"],
    });
    const url = await consent(server, codeRequest("q", { redirect_uri: "https://q.example/cb?tenant=7" }));
    expect(url.searchParams.get("tenant")).toBe("7");
    expect(url.searchParams.get("code")).toBeTruthy();
  });

  const post = (server: Awaited<ReturnType<typeof fixture>>["server"], params: Record<string, string>, body: Record<string, string>, user = "alice") =>
    server.fetch(new Request(authorizeUrl(params), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-test-user": user },
      body: new URLSearchParams(body).toString(),
    }));

  test("a consent POST without the CSRF token is refused and issues nothing", async () => {
    const { server, storage } = await fixture();
    const response = await post(server, codeRequest("web"), { decision: "allow" });
    expect(response.status).toBe(403);
    expect(response.headers.get("location")).toBeNull();
    expect(storage.size().codes).toBe(0);
  });

  test("a CSRF token is bound to its user and to the exact request", async () => {
    const { server, storage } = await fixture();
    const csrf = csrfOf(await (await getAuthorize(server, codeRequest("web"))).text());
    // Another user (a victim whose browser the attacker drives) cannot reuse it.
    expect((await post(server, codeRequest("web"), { decision: "allow", csrf }, "mallory")).status).toBe(403);
    // Nor can it approve another scope, redirect_uri, state or client.
    expect((await post(server, codeRequest("web", { scope: "write" }), { decision: "allow", csrf })).status).toBe(403);
    expect((await post(server, codeRequest("web", { redirect_uri: OTHER_REDIRECT }), { decision: "allow", csrf })).status).toBe(403);
    expect((await post(server, codeRequest("web", { state: "other" }), { decision: "allow", csrf })).status).toBe(403);
    expect(storage.size().codes).toBe(0);
    expect((await post(server, codeRequest("web"), { decision: "allow", csrf })).status).toBe(303);
    expect(storage.size().codes).toBe(1);
  });

  test("a CSRF token expires after ten minutes", async () => {
    const { server, clock } = await fixture();
    const csrf = csrfOf(await (await getAuthorize(server, codeRequest("web"))).text());
    clock.advance(601);
    expect((await post(server, codeRequest("web"), { decision: "allow", csrf })).status).toBe(403);
  });

  test("an unknown decision → invalid_request redirect", async () => {
    const { server } = await fixture();
    const csrf = csrfOf(await (await getAuthorize(server, codeRequest("web"))).text());
    const response = await post(server, codeRequest("web"), { decision: "maybe", csrf });
    expect(response.status).toBe(303);
    expect(new URL(response.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");
  });

  test("a hook that returns no usable user is a server error, reported, with no redirect", async () => {
    const { server, errors } = await fixture({ authenticateUser: () => ({ id: "" }) });
    const response = await getAuthorize(server, codeRequest("web"));
    expect(response.status).toBe(500);
    expect(response.headers.get("location")).toBeNull();
    expect(errors.length).toBe(1);
  });

  test("a hook that throws is a 500 page without details, reported to onError", async () => {
    const { server, errors } = await fixture({
      authenticateUser: () => {
        throw new Error("database password is hunter2");
      },
    });
    const response = await getAuthorize(server, codeRequest("web"));
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain("hunter2");
    expect(errors.length).toBe(1);
  });

  test("without an authentication hook the authorization endpoint does not exist", async () => {
    const { server } = await fixture({ authenticateUser: undefined as never });
    expect((await getAuthorize(server, codeRequest("web"))).status).toBe(404);
    expect((await server.fetch(new Request(`${ISSUER}/authorize`))).status).toBe(404);
  });
});

test("the clean path /authorize behaves like the spec address", async () => {
  const { server } = await fixture();
  const response = await server.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams(codeRequest("web"))}`));
  expect(response.status).toBe(200);
  expect(await response.text()).toContain('name="csrf"');
});

describe("the edges of an authorization request", () => {
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
});

describe("PKCE challenge", () => {
  test.each([
    ["44 characters", "a".repeat(44)],
    ["a prefix before 43 good ones", "!" + "a".repeat(43)],
    ["a suffix after 43 good ones", "a".repeat(43) + "!"],
  ])("a challenge with %s is malformed", async (_, challenge) => {
    const { server } = await fixture();
    const response = await getAuthorize(server, codeRequest("spa", { code_challenge: challenge, code_challenge_method: "S256" }));
    expect(response.status).toBe(302);
    expect(new URL(response.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");
  });

  test("a good challenge with a wrong verifier of the right shape is invalid_grant", async () => {
    const { server } = await fixture();
    const { code } = await spaCode(server);
    const other = await pkce();
    expect(await errorOf(await postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: other.verifier })))
      .toMatchObject({ error: "invalid_grant" });
  });
});

describe("one consent, one code", () => {
  const approve = (server: Awaited<ReturnType<typeof fixture>>["server"], params: Record<string, string>, csrf: string) =>
    server.fetch(new Request(authorizeUrl(params), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ decision: "allow", csrf }).toString(),
    }));

  test("a consent approval is single-use: 50 replays of the POST mint no code", async () => {
    const { server } = await fixture();
    const params = codeRequest("web");
    const csrf = csrfOf(await (await getAuthorize(server, params)).text());
    expect((await approve(server, params, csrf)).status).toBe(303);
    const replays = await Promise.all(Array.from({ length: 50 }, () => approve(server, params, csrf)));
    for (const replay of replays) {
      expect(replay.status).toBe(403);
      expect(replay.headers.get("location")).toBeNull();
    }
  });

  test("so is a denial: the POST cannot be turned into an approval", async () => {
    const { server } = await fixture();
    const params = codeRequest("web");
    const csrf = csrfOf(await (await getAuthorize(server, params)).text());
    const deny = await server.fetch(new Request(authorizeUrl(params), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ decision: "deny", csrf }).toString(),
    }));
    expect(new URL(deny.headers.get("location")!).searchParams.get("error")).toBe("access_denied");
    expect((await approve(server, params, csrf)).status).toBe(403);
  });

  test("at most 5 unredeemed codes per user and client: the oldest are dropped", async () => {
    const { server } = await fixture();
    const codes: string[] = [];
    for (let i = 0; i < 7; i++) codes.push(await webCode(server));
    const redeem = (code: string) =>
      postToken(server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code });
    expect(await errorOf(await redeem(codes[0]!))).toMatchObject({ error: "invalid_grant" });
    expect(await errorOf(await redeem(codes[1]!))).toMatchObject({ error: "invalid_grant" });
    for (const code of codes.slice(2)) expect((await redeem(code)).status).toBe(200);
  });
});
