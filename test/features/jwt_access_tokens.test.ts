// JWT access tokens (RFC 9068): what every grant issues when the format is "jwt" (server-wide or per client),
// checked with jose and oauth4webapi against the server's own /jwks; /jwks itself; and revocation, grant
// revocation, pausing and introspection reaching JWTs as they reach opaque tokens.
import * as jose from "jose";
import * as oauth from "oauth4webapi";
import { describe, expect, test } from "vitest";
import type { AuthorizationServer, AuthorizationServerOptions } from "../../mod.ts";
import { bearer, errorOf, type Fixture, fixture, ISSUER, postToken, REDIRECT, SECRETS, spaTokens, webCode } from "../helpers.ts";
import { codeFlow, MCP, mcpFixture, post } from "../mcp_helpers.ts";
import { issueTokens } from "../../lib/issue_tokens.ts";
import type { JwtAccessTokens } from "../../lib/features/jwt_access_tokens.ts";

const SECRET = "jwt-test-secret-0123456789abcdef-0123";
const jwtFixture = (overrides: Partial<AuthorizationServerOptions> = {}): Promise<Fixture> =>
  fixture({ accessTokenFormat: "jwt", secret: SECRET, ...overrides });

const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

async function clientCredentials(server: AuthorizationServer, fields: Record<string, string> = {}): Promise<Record<string, unknown>> {
  // The clean path: every profile serves it.
  const response = await post(server, "/token", { grant_type: "client_credentials", scope: "export", ...fields }, basic("backend", SECRETS.backend));
  expect(response.status, await response.clone().text()).toBe(200);
  return response.json();
}

async function jwks(server: AuthorizationServer): Promise<{ keys: jose.JWK[] }> {
  const response = await server.fetch(new Request(`${ISSUER}/jwks`));
  expect(response.status).toBe(200);
  return response.json();
}

/** jose's jwtVerify, as a resource server would call it, against the server's /jwks at the fixture's time. */
async function joseVerify(f: Fixture, token: string, audience: string = ISSUER) {
  return jose.jwtVerify(token, jose.createLocalJWKSet(await jwks(f.server)), {
    issuer: ISSUER, audience, typ: "at+jwt", algorithms: ["ES256"], currentDate: new Date(f.clock.now),
  });
}

/** oauth4webapi's resource-side validation, fetching /jwks from the server through its discovered metadata. */
async function validateWithOauth4webapi(f: Fixture, token: string, audience: string = ISSUER) {
  const customFetch = (url: string, init: object) => f.server.fetch(new Request(url, init as RequestInit));
  const skew = Math.round((f.clock.now - Date.now()) / 1000);
  const discovery = await oauth.discoveryRequest(new URL(ISSUER), { algorithm: "oauth2", [oauth.customFetch]: customFetch });
  const as = await oauth.processDiscoveryResponse(new URL(ISSUER), discovery);
  const request = new Request("https://api.example/x", { headers: { authorization: `Bearer ${token}` } });
  return oauth.validateJwtAccessToken(as, request, audience, { [oauth.customFetch]: customFetch, [oauth.clockSkew]: skew });
}

describe("what each grant issues", () => {
  test("client_credentials: an at+jwt signed by a /jwks key, sub and client_id the client (RFC 9068 §2.2)", async () => {
    const f = await jwtFixture();
    const body = await clientCredentials(f.server);
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "export" });
    const { payload, protectedHeader } = await joseVerify(f, body.access_token as string);
    const keys = await jwks(f.server);
    expect(protectedHeader).toEqual({ alg: "ES256", typ: "at+jwt", kid: keys.keys[0]!.kid });
    const iat = Math.floor(f.clock.now / 1000);
    expect(payload).toEqual({
      iss: ISSUER, aud: ISSUER, sub: "backend", client_id: "backend", scope: "export", iat, exp: iat + 3600, jti: expect.stringMatching(/^[\w-]{22}$/),
    });
    const claims = await validateWithOauth4webapi(f, body.access_token as string);
    expect(claims.client_id).toBe("backend");
  });

  test("the code flow and refresh: sub is the user; the refresh token stays opaque; jose and oauth4webapi accept both", async () => {
    const f = await jwtFixture();
    const first = await spaTokens(f.server);
    expect(first.refresh_token).toMatch(/^[\w-]{43}$/);
    for (const token of [first.access_token]) {
      const { payload } = await joseVerify(f, token);
      expect(payload).toMatchObject({ sub: "alice", client_id: "spa", scope: "read" });
      expect((await validateWithOauth4webapi(f, token)).sub).toBe("alice");
    }
    f.clock.advance(60);
    const response = await postToken(f.server, { grant_type: "refresh_token", client_id: "spa", refresh_token: first.refresh_token });
    const second = await response.json() as { access_token: string; refresh_token: string };
    expect(second.refresh_token).toMatch(/^[\w-]{43}$/);
    const { payload } = await joseVerify(f, second.access_token);
    expect(payload).toMatchObject({ sub: "alice", client_id: "spa", iat: Math.floor(f.clock.now / 1000) });
    expect((await validateWithOauth4webapi(f, second.access_token)).sub).toBe("alice");
  });

  test("auth_time: the sign-in time the hook reports, carried by the code and kept across refreshes (RFC 9068 §2.2.1)", async () => {
    const signedIn = 1_700_000_000;
    const f = await jwtFixture({ authenticateUser: () => ({ id: "alice", auth_time: signedIn }) });
    const first = await spaTokens(f.server);
    expect((await joseVerify(f, first.access_token)).payload.auth_time).toBe(signedIn);
    f.clock.advance(60);
    const response = await postToken(f.server, { grant_type: "refresh_token", client_id: "spa", refresh_token: first.refresh_token });
    const second = await response.json() as { access_token: string };
    expect((await joseVerify(f, second.access_token)).payload.auth_time).toBe(signedIn);
    // A hook that does not know it gives tokens without it, and client_credentials has no user to have signed in.
    const unknown = await jwtFixture();
    expect((await joseVerify(unknown, (await spaTokens(unknown.server)).access_token)).payload).not.toHaveProperty("auth_time");
  });

  test("a confidential client's code, without PKCE: sub alice, client_id web", async () => {
    const f = await jwtFixture();
    const code = await webCode(f.server);
    const response = await postToken(f.server, { grant_type: "authorization_code", code, redirect_uri: REDIRECT }, basic("web", SECRETS.web));
    const { access_token } = await response.json() as { access_token: string };
    expect((await joseVerify(f, access_token)).payload).toMatchObject({ sub: "alice", client_id: "web" });
  });

  test("aud is the bound resource (RFC 8707), at /authorize and with client_credentials", async () => {
    const f = await mcpFixture({ accessTokenFormat: "jwt", secret: SECRET });
    const { body } = await codeFlow(f.server, { resource: MCP });
    expect((await joseVerify(f, body.access_token as string, MCP)).payload.aud).toBe(MCP);
    expect((await validateWithOauth4webapi(f, body.access_token as string, MCP)).aud).toBe(MCP);
    const cc = await clientCredentials(f.server, { resource: MCP });
    expect((await joseVerify(f, cc.access_token as string, MCP)).payload.aud).toBe(MCP);
    // The same token is refused by a resource server that expects another audience.
    await expect(joseVerify(f, cc.access_token as string, "https://other.example.com/api")).rejects.toThrow(/aud/);
  });

  test("accessTokenAudience names the audience of tokens bound to no resource", async () => {
    const f = await jwtFixture({ accessTokenAudience: "https://api.example.com" });
    const body = await clientCredentials(f.server);
    expect((await joseVerify(f, body.access_token as string, "https://api.example.com")).payload.aud).toBe("https://api.example.com");
  });

  test("the lifetime follows lifetimes.accessToken", async () => {
    const f = await jwtFixture({ lifetimes: { accessToken: 300 } });
    const body = await clientCredentials(f.server);
    const { payload } = await joseVerify(f, body.access_token as string);
    expect([body.expires_in, payload.exp! - payload.iat!]).toEqual([300, 300]);
    f.clock.advance(301);
    await expect(joseVerify(f, body.access_token as string)).rejects.toThrow(/exp/);
  });
});

describe("the format, server-wide and per client", () => {
  test("opaque by default: no /jwks, no jwks_uri, tokens are 43 random characters", async () => {
    const f = await fixture();
    const body = await clientCredentials(f.server);
    expect(body.access_token).toMatch(/^[\w-]{43}$/);
    expect((await f.server.fetch(new Request(`${ISSUER}/jwks`))).status).toBe(404);
    expect(f.server.metadata().jwks_uri).toBeUndefined();
  });

  test("a client's access_token_format overrides the server's, both ways", async () => {
    const f = await fixture({ signingKeys: {}, secret: SECRET });
    await f.server.clients.register({
      client_id: "jwt-backend", client_secret: SECRETS.backend, name: "JWT backend", type: "confidential",
      scopes: ["export"], grant_types: ["client_credentials"], access_token_format: "jwt",
    });
    expect((await clientCredentials(f.server)).access_token).toMatch(/^[\w-]{43}$/);
    const response = await postToken(f.server, { grant_type: "client_credentials", scope: "export" }, basic("jwt-backend", SECRETS.backend));
    const { access_token } = await response.json() as { access_token: string };
    expect((await joseVerify(f, access_token)).payload.client_id).toBe("jwt-backend");

    const g = await jwtFixture();
    await g.server.clients.register({
      client_id: "opaque-backend", client_secret: SECRETS.backend, name: "Opaque", type: "confidential",
      scopes: ["export"], grant_types: ["client_credentials"], access_token_format: "opaque",
    });
    const opaque = await postToken(g.server, { grant_type: "client_credentials", scope: "export" }, basic("opaque-backend", SECRETS.backend));
    expect((await opaque.json() as { access_token: string }).access_token).toMatch(/^[\w-]{43}$/);
  });

  test("a client cannot ask for JWTs from a server without signing keys, nor for a format that does not exist", async () => {
    const f = await fixture();
    const reg = { client_id: "x", client_secret: SECRETS.backend, name: "X", type: "confidential" as const, scopes: ["export"], grant_types: ["client_credentials"] };
    await expect(f.server.clients.register({ ...reg, access_token_format: "jwt" })).rejects.toThrow(/has no signing keys/);
    const g = await jwtFixture();
    await expect(g.server.clients.register({ ...reg, access_token_format: "paseto" as "jwt" })).rejects.toThrow(/must be "opaque" or "jwt"/);
  });

  test("metadata: jwks_uri points at /jwks", async () => {
    const f = await jwtFixture();
    expect(f.server.metadata().jwks_uri).toBe(`${ISSUER}/jwks`);
  });
});

describe("/jwks", () => {
  test("public keys only, as a JWK Set, cacheable for five minutes, readable across origins", async () => {
    const f = await jwtFixture();
    const response = await f.server.fetch(new Request(`${ISSUER}/jwks`, { headers: { origin: "https://app.example" } }));
    expect(response.headers.get("content-type")).toBe("application/jwk-set+json");
    expect(response.headers.get("cache-control")).toBe("public, max-age=300");
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    const set = await response.json() as { keys: Record<string, unknown>[] };
    expect(set.keys).toHaveLength(1);
    expect(Object.keys(set.keys[0]!).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x", "y"]);
    expect(set.keys[0]!.kid).toBe(await jose.calculateJwkThumbprint(set.keys[0] as jose.JWK));
  });

  test("the store holds the private key sealed: no private member in clear, and only this secret opens it", async () => {
    const f = await jwtFixture();
    await clientCredentials(f.server);
    const stored = await f.storage.getSetting("signing_keys");
    const doc = JSON.parse(stored!) as { keys: { jwk: Record<string, unknown>; sealed: string }[] };
    expect(doc.keys[0]!.jwk.d).toBeUndefined();
    expect(stored).not.toMatch(/"d"\s*:/);
    // Another server on the same store with another secret can publish the keys but not use them.
    const errors: unknown[] = [];
    const other = await fixture({ storage: f.storage, clock: f.clock.read, accessTokenFormat: "jwt", secret: "another-secret-0123456789abcdef-xyz", onError: (e) => errors.push(e) });
    await expect(other.server.keys.ready()).rejects.toThrow(/sealed under another secret/);
    const refused = await postToken(other.server, { grant_type: "client_credentials", scope: "export" }, basic("backend", SECRETS.backend));
    expect(refused.status).toBe(500);
    expect(String(errors[0])).toMatch(/sealed under another secret/);
    expect((await jwks(other.server)).keys).toEqual((await jwks(f.server)).keys);
    // Nor add one: a key sealed under its secret would leave the set half unreadable to the others.
    await expect(other.server.keys.rotate()).rejects.toThrow(/sealed under another secret/);
    expect(await f.server.keys.list()).toHaveLength(1);
  });
});

describe("revocation and introspection reach JWT access tokens", () => {
  test("a revoked JWT is refused by server.protect and inactive at introspection", async () => {
    const f = await jwtFixture();
    const { access_token } = await clientCredentials(f.server) as { access_token: string };
    expect((await bearer(f.server, access_token)).client_id).toBe("backend");
    const introspect = () => post(f.server, "/introspect", { token: access_token }, basic("backend", SECRETS.backend)).then((r) => r.json());
    expect(await introspect()).toMatchObject({ active: true, client_id: "backend", scope: "export", token_type: "Bearer", iss: ISSUER });
    expect((await post(f.server, "/revoke", { token: access_token }, basic("backend", SECRETS.backend))).status).toBe(200);
    await expect(bearer(f.server, access_token)).rejects.toMatchObject({ code: "invalid_token" });
    expect(await introspect()).toEqual({ active: false });
    // The trade-off: a resource server that verifies locally still accepts it until it expires.
    expect((await joseVerify(f, access_token)).payload.client_id).toBe("backend");
  });

  test("a refresh token reused revokes the grant: its JWT access tokens stop working at server.protect", async () => {
    const f = await jwtFixture();
    const first = await spaTokens(f.server);
    await postToken(f.server, { grant_type: "refresh_token", client_id: "spa", refresh_token: first.refresh_token });
    const reuse = await postToken(f.server, { grant_type: "refresh_token", client_id: "spa", refresh_token: first.refresh_token });
    expect((await errorOf(reuse)).error).toBe("invalid_grant");
    await expect(bearer(f.server, first.access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("a paused client's JWTs are refused by server.protect", async () => {
    const f = await jwtFixture();
    const { access_token } = await clientCredentials(f.server) as { access_token: string };
    await f.server.clients.pause("backend");
    await expect(bearer(f.server, access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("a JWT signed with the right kid by another key is nobody's token", async () => {
    const f = await jwtFixture();
    const { access_token } = await clientCredentials(f.server) as { access_token: string };
    const { kid } = jose.decodeProtectedHeader(access_token);
    const { privateKey } = await jose.generateKeyPair("ES256");
    const forged = await new jose.SignJWT(jose.decodeJwt(access_token)).setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: kid! }).sign(privateKey);
    await expect(bearer(f.server, forged)).rejects.toMatchObject({ code: "invalid_token" });
    expect(await post(f.server, "/introspect", { token: forged }, basic("backend", SECRETS.backend)).then((r) => r.json())).toEqual({ active: false });
  });
});

describe("the minting extension point (act for token exchange, cnf for DPoP)", () => {
  test("further claims join the JWT; a claim RFC 9068 defines cannot be replaced", async () => {
    const f = await jwtFixture();
    await f.server.keys.ready();
    // The feature's state, as a grant's view holds it.
    const { jwtAccessTokens } = await import("../../lib/features/jwt_access_tokens.ts");
    const jwt: JwtAccessTokens = jwtAccessTokens.setup({ accessTokenFormat: "jwt", secret: SECRET } as never, {
      issuer: ISSUER, storage: f.storage, clock: f.clock.read, secret: new TextEncoder().encode(SECRET), accessTokenTtl: 3_600_000,
    } as never);
    const context = { accessTokenTtl: 3_600_000, features: { jwt_access_tokens: jwt } };
    const request = { client_id: "backend", scope: "export", claims: { act: { sub: "agent-7" }, cnf: { jkt: "abc" } }, jkt: undefined };
    const { response } = await issueTokens(request, { type: "confidential" }, context, f.clock.now);
    const { payload } = await joseVerify(f, response.access_token);
    expect(payload).toMatchObject({ act: { sub: "agent-7" }, cnf: { jkt: "abc" }, sub: "backend", client_id: "backend" });
    for (const name of ["sub", "aud", "scope", "iss", "client_id", "exp", "jti"]) {
      await expect(issueTokens({ ...request, claims: { [name]: "x" } }, { type: "confidential" }, context, f.clock.now), name).rejects.toThrow(`the claim "${name}" is set by the server`);
    }
  });
});
