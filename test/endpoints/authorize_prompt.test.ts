// The prompt parameter at /authorize (OpenID Connect Core §3.1.2.1), as MCP 2026-07-28 hosts send it: consent
// shows the consent page, login asks for the password again (the built-in password login honours it), none shows
// no page at all and answers login_required or consent_required by redirect, with state and iss.
import { describe, expect, test } from "vitest";
import { passwordLogin } from "../../lib/consent/login.ts";
import { csrfOf, ISSUER, pkce } from "../helpers.ts";
import { LOOPBACK, mcpFixture } from "../mcp_helpers.ts";

const FORM = { "content-type": "application/x-www-form-urlencoded" };

async function authorizeUrl(extra: Record<string, string>): Promise<string> {
  const { challenge } = await pkce();
  return `${ISSUER}/authorize?${new URLSearchParams({
    response_type: "code", client_id: "cli", redirect_uri: LOOPBACK, scope: "read", state: "st-1",
    code_challenge: challenge, code_challenge_method: "S256", ...extra,
  })}`;
}

/** The redirect's parameters, or null for no redirect. */
const redirected = (response: Response) => {
  const location = response.headers.get("location");
  return location === null ? null : Object.fromEntries(new URL(location).searchParams);
};

describe("prompt=none", () => {
  test("a user who is not signed in: login_required by redirect, with state and iss; never a page", async () => {
    const { server } = await mcpFixture();
    const response = await server.fetch(new Request(await authorizeUrl({ prompt: "none" }), { headers: { "x-test-user": "none" } }));
    expect(response.status).toBe(302);
    expect(redirected(response)).toMatchObject({ error: "login_required", state: "st-1", iss: ISSUER });
  });

  test("a signed-in user: consent_required (consent is never remembered, so the page would be needed)", async () => {
    const { server } = await mcpFixture();
    const response = await server.fetch(new Request(await authorizeUrl({ prompt: "none" })));
    expect(response.status).toBe(302);
    expect(redirected(response)).toMatchObject({ error: "consent_required", state: "st-1", iss: ISSUER });
    expect(redirected(response)).not.toHaveProperty("code");
  });

  test("none with another value, or a value this server does not act on, is invalid_request by redirect", async () => {
    const { server } = await mcpFixture();
    for (const prompt of ["none login", "consent none", "select_account", "loginx", "login  consent"]) {
      const response = await server.fetch(new Request(await authorizeUrl({ prompt })));
      expect(redirected(response), prompt).toMatchObject({ error: "invalid_request", iss: ISSUER });
    }
  });
});

describe("prompt=consent", () => {
  test("shows the consent page and goes on to a code, as without it", async () => {
    const { server } = await mcpFixture();
    const url = await authorizeUrl({ prompt: "consent" });
    const page = await server.fetch(new Request(url));
    expect(page.status).toBe(200);
    const answer = await server.fetch(new Request(url, { method: "POST", headers: FORM, body: new URLSearchParams({ decision: "allow", csrf: csrfOf(await page.text()) }) }));
    expect(redirected(answer)).toMatchObject({ state: "st-1", iss: ISSUER, code: expect.any(String) });
  });
});

describe("prompt=login with the built-in password login", () => {
  const login = passwordLogin({
    secret: "0123456789abcdef0123456789abcdef",
    verify: (username, password) => (username === "alice" && password === "correct horse" ? { id: "alice", name: "Alice" } : null),
  });
  const cookieOf = (response: Response, name: string) =>
    response.headers.getSetCookie().find((c) => c.startsWith(`${name}=`))?.split(";")[0];

  /** Signs in at `url`'s login form; returns the session cookie. */
  async function signIn(server: { fetch: (r: Request) => Promise<Response> }, url: string, cookie = ""): Promise<string> {
    const page = await server.fetch(new Request(url, { headers: { cookie } }));
    const html = await page.text();
    expect(html, "a login form").toContain('name="password"');
    const nonce = cookieOf(page, "oauth2_session_login");
    const cookies = [cookie, nonce].filter((c) => c).join("; ");
    const posted = await server.fetch(new Request(url, {
      method: "POST", headers: { ...FORM, cookie: cookies },
      body: new URLSearchParams({ username: "alice", password: "correct horse", csrf: csrfOf(html) }),
    }));
    expect(posted.status).toBe(303);
    return cookieOf(posted, "oauth2_session")!;
  }

  test("a live session is not enough: the password again, then the consent page and a code for this request", async () => {
    const { server } = await mcpFixture({ authenticateUser: login });
    const session = await signIn(server, await authorizeUrl({}));
    // Without prompt the session goes straight to the consent page.
    const plain = await server.fetch(new Request(await authorizeUrl({}), { headers: { cookie: session } }));
    expect(await plain.text()).toContain('name="decision"');

    const url = await authorizeUrl({ prompt: "login" });
    const again = await server.fetch(new Request(url, { headers: { cookie: session } }));
    expect(await again.text(), "the login form, despite the session").toContain('name="password"');
    const fresh = await signIn(server, url, session);
    const consent = await server.fetch(new Request(url, { headers: { cookie: fresh } }));
    const html = await consent.text();
    expect(html).toContain('name="decision"');
    const answer = await server.fetch(new Request(url, {
      method: "POST", headers: { ...FORM, cookie: fresh }, body: new URLSearchParams({ decision: "allow", csrf: csrfOf(html) }),
    }));
    expect(redirected(answer)).toMatchObject({ code: expect.any(String), iss: ISSUER });

    // That sign-in was for that request: another request with prompt=login asks again.
    const next = await server.fetch(new Request(await authorizeUrl({ prompt: "login", state: "st-2" }), { headers: { cookie: fresh } }));
    expect(await next.text()).toContain('name="password"');
  });
});
