// The profile option (issue 14 item 3; issue 11 item 1): the spec's addresses and scope rule, or RFC 6749's;
// default scopes; narrowing on refresh; and loopback redirect URIs on any port (RFC 8252 §7.3, §8.3).
import { describe, expect, test } from "vitest";
import type { AuthorizationServer } from "../../mod.ts";
import { createReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, parseConfig } from "../../lib/reference/config.ts";
import { csrfOf, errorOf, fixture, ISSUER, pkce, postToken, SECRETS } from "../helpers.ts";

const LOOPBACK = "http://127.0.0.1/callback";

/** A server with the given profile, and a public client `cli` registered with loopback redirect URIs. */
async function server(profile: unknown, extra: Record<string, unknown> = {}, client: Record<string, unknown> = {}) {
  const f = await fixture({ profile: profile as never, ...extra });
  await f.server.clients.register({
    client_id: "cli", name: "Command line", type: "public",
    redirect_uris: [LOOPBACK, "http://[::1]:8080/cb", "http://localhost/cb?x=1", "https://app.example.com:8443/cb"],
    scopes: ["read", "write", "export"], ...client,
  });
  return f;
}

/** Runs /authorize (clean path) through consent; returns the redirect or the refusal. */
async function authorize(s: AuthorizationServer, params: Record<string, string>): Promise<Response> {
  const url = `${ISSUER}/authorize?${new URLSearchParams(params)}`;
  const page = await s.fetch(new Request(url));
  if (page.status !== 200) return page;
  const html = await page.text();
  return s.fetch(new Request(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ decision: "allow", csrf: csrfOf(html) }),
  }));
}

async function tokens(s: AuthorizationServer, params: Record<string, string> & { redirect_uri: string }) {
  const { verifier, challenge } = await pkce();
  const all: Record<string, string> = { response_type: "code", client_id: "cli", code_challenge: challenge, code_challenge_method: "S256", ...params };
  const response = await authorize(s, all);
  const location = new URL(response.headers.get("location")!);
  const code = location.searchParams.get("code");
  if (code === null) throw new Error(`no code: ${location}`);
  const token = await s.fetch(new Request(`${ISSUER}/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "authorization_code", client_id: "cli", code, code_verifier: verifier, redirect_uri: all.redirect_uri! }),
  }));
  return { status: token.status, body: await token.json() as Record<string, string> };
}

const refresh = (s: AuthorizationServer, token: string, scope?: string) =>
  s.fetch(new Request(`${ISSUER}/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "refresh_token", client_id: "cli", refresh_token: token, ...(scope ? { scope } : {}) }),
  }));

describe("the spec profile (the default)", () => {
  test("serves index.php and refuses two scopes in one request", async () => {
    const { server: s } = await server(undefined);
    const response = await authorize(s, { response_type: "code", client_id: "cli", redirect_uri: LOOPBACK, scope: "read write", code_challenge: "x".repeat(43), code_challenge_method: "S256" });
    expect(new URL(response.headers.get("location")!).searchParams.get("error")).toBe("invalid_scope");
    expect((await postToken(s, { grant_type: "client_credentials" })).status).not.toBe(404);
    expect(s.metadata().token_endpoint).toBe(`${ISSUER}/token`);
  });

  test("without a scope and without a default scope the request is refused", async () => {
    const { server: s } = await server("spec");
    const response = await authorize(s, { response_type: "code", client_id: "cli", redirect_uri: LOOPBACK, code_challenge: "x".repeat(43), code_challenge_method: "S256" });
    expect(new URL(response.headers.get("location")!).searchParams.get("error")).toBe("invalid_scope");
  });

  test("a client's default scope is granted when the request names none", async () => {
    const { server: s } = await server("spec", {}, { default_scope: "write" });
    const { body } = await tokens(s, { redirect_uri: LOOPBACK });
    expect(body.scope).toBe("write");
  });

  test("a refresh keeps the one-scope rule: two scopes, even the granted one twice, or another scope is invalid_scope", async () => {
    const { server: s } = await server("spec");
    const { body } = await tokens(s, { redirect_uri: LOOPBACK, scope: "read" });
    const twice = await errorOf(await refresh(s, body.refresh_token!, "read read"));
    expect([twice.status, twice.error, twice.description]).toEqual([400, "invalid_scope", "Exactly one scope per request is allowed"]);
    const other = await errorOf(await refresh(s, body.refresh_token!, "write"));
    expect([other.status, other.error, other.description]).toEqual([400, "invalid_scope", "A refresh cannot change the scope"]);
    const same = await refresh(s, body.refresh_token!, "read");
    expect([same.status, ((await same.json()) as Record<string, string>).scope]).toEqual([200, "read"]);
  });

  test("a default scope of two scopes is refused under the single policy", async () => {
    await expect(server("spec", {}, { default_scope: "read write" })).rejects.toThrow(/one scope/);
    await expect(server("spec", { defaultScope: "read write" })).rejects.toThrow(/defaultScope/);
  });
});

describe("the rfc6749 profile", () => {
  test("has no index.php addresses, in routing or in metadata", async () => {
    const { server: s } = await server("rfc6749");
    const response = await s.fetch(new Request(`${ISSUER}/index.php?module=OAuth2&action=token`, { method: "POST" }));
    expect(response.status).toBe(404);
    const doc = JSON.stringify(s.metadata());
    expect(doc).not.toContain("index.php");
  });

  test("grants several scopes, lists each on the consent page, and reports the granted scope", async () => {
    const { server: s } = await server("rfc6749");
    const page = await s.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams({
      response_type: "code", client_id: "cli", redirect_uri: LOOPBACK, scope: "read write", code_challenge: "x".repeat(43), code_challenge_method: "S256",
    })}`));
    const html = await page.text();
    expect(html).toContain("Read your reports");
    expect(html).toContain("Edit your reports");
    const { status, body } = await tokens(s, { redirect_uri: LOOPBACK, scope: "read write read" });
    expect(status).toBe(200);
    expect(body.scope).toBe("read write");
  });

  test("only scopes the client lacks, an unknown scope, or a malformed list, is invalid_scope", async () => {
    const { server: s } = await server("rfc6749");
    for (const scope of ["admin", "admin admin", "read unknown.scope", "read  write", " read", "read\twrite"]) {
      const response = await authorize(s, { response_type: "code", client_id: "cli", redirect_uri: LOOPBACK, scope, code_challenge: "x".repeat(43), code_challenge_method: "S256" });
      expect(new URL(response.headers.get("location")!).searchParams.get("error"), scope).toBe("invalid_scope");
    }
  });

  test("a refresh may narrow the access token's scope; the grant keeps its own", async () => {
    const { server: s } = await server("rfc6749");
    const { body } = await tokens(s, { redirect_uri: LOOPBACK, scope: "read write export" });
    const narrowed = await refresh(s, body.refresh_token!, "write");
    const first = await narrowed.json() as Record<string, string>;
    expect(first.scope).toBe("write");
    const again = await (await refresh(s, first.refresh_token!)).json() as Record<string, string>;
    expect(again.scope).toBe("read write export");
    const wider = await refresh(s, again.refresh_token!, "read admin");
    expect((await errorOf(wider)).error).toBe("invalid_scope");
  });

  test("an object profile picks each part; the server-wide default scope must be known", async () => {
    const { server: s } = await server({ scopePolicy: "multiple" }, {}, { default_scope: "read export" });
    const { body } = await tokens(s, { redirect_uri: LOOPBACK });
    expect(body.scope).toBe("read export");
    expect(s.metadata().token_endpoint).toBe(`${ISSUER}/token`);
    await expect(server({ scopePolicy: "several" })).rejects.toThrow(/scopePolicy/);
    await expect(server("rfc6749", { defaultScope: "nope" })).rejects.toThrow(/defaultScope/);
  });
});

describe("loopback redirect URIs match on any port (RFC 8252 §7.3, §8.3)", () => {
  test.each([
    ["127.0.0.1 registered without a port", "http://127.0.0.1:51234/callback"],
    ["127.0.0.1 without a port either", "http://127.0.0.1/callback"],
    ["[::1] registered with another port", "http://[::1]:1/cb"],
    ["localhost, query kept", "http://localhost:65535/cb?x=1"],
  ])("%s", async (_, uri) => {
    const { server: s } = await server("rfc6749");
    const { status } = await tokens(s, { redirect_uri: uri, scope: "read" });
    expect(status).toBe(200);
  });

  test.each([
    ["a different path", "http://127.0.0.1:5000/callback/"],
    ["a different query", "http://localhost:5000/cb?x=2"],
    ["userinfo that moves the host", "http://127.0.0.1:5000@evil.example/callback"],
    ["a host that only starts like localhost", "http://localhost.evil.example:5000/cb?x=1"],
    ["https on a loopback host", "https://127.0.0.1:5000/callback"],
    ["port out of range", "http://127.0.0.1:70000/callback"],
    ["a non-loopback host on another port", "https://app.example.com:9443/cb"],
    ["a different loopback host", "http://localhost:5000/callback"],
  ])("no match for %s: error page, no redirect", async (_, uri) => {
    const { server: s } = await server("rfc6749");
    const response = await s.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams({ response_type: "code", client_id: "cli", redirect_uri: uri, scope: "read" })}`));
    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
  });

  test("the token request must repeat the exact redirect URI, port included", async () => {
    const { server: s } = await server("rfc6749");
    const { verifier, challenge } = await pkce();
    const response = await authorize(s, { response_type: "code", client_id: "cli", redirect_uri: "http://127.0.0.1:4000/callback", scope: "read", code_challenge: challenge, code_challenge_method: "S256" });
    const code = new URL(response.headers.get("location")!).searchParams.get("code")!;
    const token = await s.fetch(new Request(`${ISSUER}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "authorization_code", client_id: "cli", code, code_verifier: verifier, redirect_uri: "http://127.0.0.1:4001/callback" }),
    }));
    expect((await errorOf(token)).error).toBe("invalid_grant");
  });
});

describe("the reference server's scope_policy key sets the scope part of the spec profile", () => {
  const ask = async (scopePolicy: "single" | "multiple" | undefined) => {
    const config = parseConfig({ ...DEMO_CONFIG, ...(scopePolicy ? { scope_policy: scopePolicy } : {}) }, "test");
    const app = await createReferenceApp({ issuer: "http://127.0.0.1:1", config, passwordIterations: 1 });
    return app.fetch(new Request("http://127.0.0.1:1/index.php?module=OAuth2&action=token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "client_credentials", client_id: "demo-backend", client_secret: "demo-backend-secret-change-me", scope: "exports reports.read",
      }),
    }));
  };
  test("default single: two scopes refused; multiple: granted on the spec address", async () => {
    expect((await errorOf(await ask(undefined))).error).toBe("invalid_scope");
    const granted = await ask("multiple");
    expect(granted.status).toBe(200);
    expect((await granted.json() as { scope: string }).scope).toBe("exports reports.read");
    expect(() => parseConfig({ ...DEMO_CONFIG, scope_policy: "many" }, "test")).toThrow(/scope_policy/);
  });
});

// Scope narrowing under the multiple policy (RFC 6749 §3.3; MCP hosts ask for every scope a resource lists).
describe("the rfc6749 profile narrows a request to the client's scopes", () => {
  const ask = { response_type: "code", client_id: "cli", redirect_uri: LOOPBACK, code_challenge: "x".repeat(43), code_challenge_method: "S256" };

  test("the consent page, the code and the token response carry the allowed part, in the order asked", async () => {
    const { server: s } = await server("rfc6749");
    const page = await s.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams({ ...ask, scope: "admin write read" })}`));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("Edit your reports");
    expect(html).toContain("Read your reports");
    expect(html).not.toContain("Administer");
    const { status, body } = await tokens(s, { redirect_uri: LOOPBACK, scope: "admin write read" });
    expect([status, body.scope]).toEqual([200, "write read"]);
    // The grant holds what was granted: a refresh keeps exactly that, and cannot reach for the rest.
    const refreshed = await (await refresh(s, body.refresh_token!)).json();
    expect(refreshed.scope).toBe("write read");
    expect((await errorOf(await refresh(s, refreshed.refresh_token, "read admin"))).error).toBe("invalid_scope");
  });

  test("client_credentials narrows the same way", async () => {
    const { server: s } = await server("rfc6749");
    const response = await s.fetch(new Request(`${ISSUER}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "admin export write" }),
    }));
    expect([response.status, (await response.json()).scope]).toEqual([200, "export"]);
  });

  test("the spec profile keeps its exact rule: a scope the client lacks is invalid_scope", async () => {
    const { server: s } = await server(undefined);
    const response = await authorize(s, { ...ask, scope: "admin" });
    expect(new URL(response.headers.get("location")!).searchParams.get("error")).toBe("invalid_scope");
    expect((await errorOf(await postToken(s, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "admin" }))).error)
      .toBe("invalid_scope");
  });
});
