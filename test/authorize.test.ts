// The authorization endpoint (spec §4.1; RFC 6749 §4.1.1-4.1.2.1, RFC 7636 §4.3, RFC 9207).
import { describe, expect, test } from "vitest";
import {
  authorizeUrl, codeRequest, consent, csrfOf, fixture, getAuthorize, ISSUER, OTHER_REDIRECT, pkce, REDIRECT,
} from "./helpers.ts";

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
