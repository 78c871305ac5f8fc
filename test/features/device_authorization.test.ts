// The device authorization grant (RFC 8628) through the handler: the device asks, the user approves or denies
// at /device, and each poll answers with its RFC 8628 §3.5 error until the tokens come, once.
import { describe, expect, test } from "vitest";
import type { AuthorizationServer } from "../../mod.ts";
import { csrfOf, errorOf, fixture, ISSUER, postToken } from "../helpers.ts";

const GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

async function setup(options: { interval?: number; expiresIn?: number } = {}) {
  const f = await fixture({ deviceAuthorization: { enabled: true, ...options } });
  await f.server.clients.register({
    client_id: "tv", name: "Living-room TV", type: "public", scopes: ["read", "write"], grant_types: [GRANT, "refresh_token"],
  });
  return f;
}

const form = (fields: Record<string, string>) => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
});

interface Started {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

async function start(server: AuthorizationServer, fields: Record<string, string> = { client_id: "tv", scope: "read" }) {
  const response = await server.fetch(new Request(`${ISSUER}/device_authorization`, form(fields)));
  return { response, body: await response.json() as Started & { error?: string } };
}

const poll = (server: AuthorizationServer, deviceCode: string, clientId = "tv") =>
  postToken(server, { grant_type: GRANT, device_code: deviceCode, client_id: clientId });

/** Opens the user-code page as `user` (the fixture's hook signs in whoever x-test-user names) and decides. */
async function decide(server: AuthorizationServer, userCode: string, decision: "allow" | "deny", user = "alice") {
  const url = `${ISSUER}/device?user_code=${encodeURIComponent(userCode)}`;
  const page = await server.fetch(new Request(url, { headers: { "x-test-user": user } }));
  const html = await page.text();
  const init = form({ decision, csrf: csrfOf(html) });
  const done = await server.fetch(new Request(url, { ...init, headers: { ...init.headers, "x-test-user": user } }));
  return { page, html, done, text: await done.text(), init, url };
}

describe("device authorization endpoint", () => {
  test("is advertised with the grant type, and answers the RFC 8628 §3.2 fields", async () => {
    const { server } = await setup();
    const metadata = await (await server.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`))).json();
    expect(metadata.device_authorization_endpoint).toBe(`${ISSUER}/device_authorization`);
    expect(metadata.grant_types_supported).toContain(GRANT);
    const { response, body } = await start(server);
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(body.user_code).toMatch(CODE);
    expect(body.verification_uri).toBe(`${ISSUER}/device`);
    expect(body.verification_uri_complete).toBe(`${ISSUER}/device?user_code=${body.user_code}`);
    expect(body).toMatchObject({ expires_in: 600, interval: 5 });
    expect(body.device_code.length).toBeGreaterThanOrEqual(43);
  });

  test("only for clients registered with the grant type, and with the token endpoint's client authentication", async () => {
    const { server } = await setup();
    expect((await start(server, { client_id: "spa", scope: "read" })).body.error).toBe("unauthorized_client");
    expect((await start(server, { client_id: "web", client_secret: "wrong", scope: "read" })).response.status).toBe(401);
    expect((await start(server, { client_id: "tv", scope: "admin" })).body.error).toBe("invalid_scope");
  });

  test("off by default: no endpoint, and the grant type is unknown to the one door", async () => {
    const { server } = await fixture();
    expect((await server.fetch(new Request(`${ISSUER}/device_authorization`, form({ client_id: "spa" })))).status).toBe(404);
    await expect(server.clients.register({ client_id: "tv", name: "TV", type: "public", scopes: ["read"], grant_types: [GRANT] }))
      .rejects.toThrow(/unknown grant type/);
  });
});

describe("polling", () => {
  test("pending, slow_down (+5 s), then after approval the tokens exactly once", async () => {
    const { server, clock } = await setup();
    const { body } = await start(server);
    expect(await errorOf(await poll(server, body.device_code))).toMatchObject({ status: 400, error: "authorization_pending" });
    clock.advance(1);
    expect((await errorOf(await poll(server, body.device_code))).error).toBe("slow_down");
    clock.advance(6); // 6 s after the last poll, but the interval is now 10 s
    expect((await errorOf(await poll(server, body.device_code))).error).toBe("slow_down");
    clock.advance(15);
    expect((await errorOf(await poll(server, body.device_code))).error).toBe("authorization_pending");

    // Typed forgivingly: lower case, no dash.
    const { page, html, done, text } = await decide(server, body.user_code.replace("-", "").toLowerCase(), "allow");
    expect(page.status).toBe(200);
    expect(html).toContain("Living-room TV");
    expect(html).toContain("Read your reports");
    expect(html).toContain(body.user_code);
    expect(html).toContain(new Date(clock.now - 22_000).toISOString().slice(0, 16).replace("T", " "));
    expect(done.status).toBe(200);
    expect(text).toContain("Device connected");

    clock.advance(20);
    const tokens = await poll(server, body.device_code);
    expect(tokens.status).toBe(200);
    const issued = await tokens.json() as Record<string, string>;
    expect(issued.scope).toBe("read");
    expect(issued.refresh_token).toBeDefined();
    expect((await server.verifyAuthorization(`Bearer ${issued.access_token}`)).user_id).toBe("alice");
    clock.advance(20);
    expect((await errorOf(await poll(server, body.device_code))).error).toBe("invalid_grant");
  });

  test("a denial gives access_denied, and the device code never yields tokens", async () => {
    const { server, clock } = await setup();
    const { body } = await start(server);
    const { text } = await decide(server, body.user_code, "deny");
    expect(text).toContain("Request denied");
    expect(await errorOf(await poll(server, body.device_code))).toMatchObject({ status: 400, error: "access_denied" });
    clock.advance(30);
    expect((await errorOf(await poll(server, body.device_code))).error).toBe("access_denied");
  });

  test("past expires_in: expired_token, and the code can no longer be approved", async () => {
    const { server, clock } = await setup({ expiresIn: 60 });
    const { body } = await start(server);
    clock.advance(60);
    expect(await errorOf(await poll(server, body.device_code))).toMatchObject({ status: 400, error: "expired_token" });
    const page = await server.fetch(new Request(`${ISSUER}/device?user_code=${body.user_code}`));
    expect(page.status).toBe(400);
    expect(await page.text()).not.toContain('name="decision"');
  });

  test("another client's poll with a device code gets invalid_grant", async () => {
    const { server } = await setup();
    await server.clients.register({ client_id: "tv2", name: "TV 2", type: "public", scopes: ["read"], grant_types: [GRANT] });
    const { body } = await start(server);
    expect((await errorOf(await poll(server, body.device_code, "tv2"))).error).toBe("invalid_grant");
    expect((await errorOf(await poll(server, "no-such-code"))).error).toBe("invalid_grant");
  });
});

describe("the /device page", () => {
  test("cannot be framed, and a forged, replayed or cross-user decision does nothing", async () => {
    const { server } = await setup();
    const { body } = await start(server);
    const url = `${ISSUER}/device?user_code=${body.user_code}`;
    const page = await server.fetch(new Request(url));
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const csrf = csrfOf(await page.text());
    // No token, and a token made for alice presented by mallory: refused.
    expect((await server.fetch(new Request(url, form({ decision: "allow" })))).status).toBe(403);
    const init = form({ decision: "allow", csrf });
    expect((await server.fetch(new Request(url, { ...init, headers: { ...init.headers, "x-test-user": "mallory" } }))).status).toBe(403);
    expect((await errorOf(await poll(server, body.device_code))).error).toBe("authorization_pending");
    // The real decision, then its replay.
    expect((await server.fetch(new Request(url, init))).status).toBe(200);
    const replay = await server.fetch(new Request(url, init));
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain("already used");
  });

  test("one decision per code: a second form for the same code cannot change it", async () => {
    const { server, clock } = await setup();
    const { body } = await start(server);
    const url = `${ISSUER}/device?user_code=${body.user_code}`;
    const first = csrfOf(await (await server.fetch(new Request(url))).text());
    const second = csrfOf(await (await server.fetch(new Request(url))).text());
    expect((await server.fetch(new Request(url, form({ decision: "deny", csrf: first })))).status).toBe(200);
    expect((await server.fetch(new Request(url, form({ decision: "allow", csrf: second })))).status).toBe(400);
    clock.advance(10);
    expect((await errorOf(await poll(server, body.device_code))).error).toBe("access_denied");
  });

  test("signs the user in through authenticateUser first", async () => {
    const { server } = await setup();
    const { body } = await start(server);
    const page = await server.fetch(new Request(`${ISSUER}/device?user_code=${body.user_code}`, { headers: { "x-test-user": "none" } }));
    expect(await page.text()).toBe("<form>login</form>");
  });

  test("without a code, asks for one; wrong codes are throttled per address", async () => {
    const { server } = await setup();
    const entry = await server.fetch(new Request(`${ISSUER}/device`));
    expect(entry.status).toBe(200);
    expect(await entry.text()).toContain('name="user_code"');
    const statuses: number[] = [];
    for (const guess of ["BCDF-GHJK", "BCDF-GHJL", "BCDF-GHJM", "BCDF-GHJN", "BCDF-GHJP", "BCDF-GHJQ", "AEIO-UAEI"]) {
      statuses.push((await server.fetch(new Request(`${ISSUER}/device?user_code=${guess}`, { headers: { "x-forwarded-for": "x" } }))).status);
    }
    expect(statuses.slice(0, 5)).toEqual([400, 400, 400, 400, 400]);
    expect(statuses.slice(5)).toEqual([429, 429]);
    // Even the right code waits now, from that address.
    const { body } = await start(server);
    expect((await server.fetch(new Request(`${ISSUER}/device?user_code=${body.user_code}`))).status).toBe(429);
  });
});
