// jwtTokenVerifier, a resource server's local check of RFC 9068 tokens: against the server's /jwks (fetched
// through its fetch handler) or its keys in memory; every refusal (issuer, audience, expiry, type, algorithm
// confusion, a forged signature) is null, an unreachable key set is an error (503 at the resource); verified
// tokens are remembered until they expire.
import * as jose from "jose";
import { describe, expect, test } from "vitest";
import { type AuthorizationServer, jwtTokenVerifier, protectedResource } from "../mod.ts";
import { localJwks } from "../lib/jose/jwks.ts";
import type { KeySource } from "../lib/jose/jws.ts";
import { fixture, ISSUER, SECRETS, spaTokens } from "./helpers.ts";
import { MCP, post } from "./mcp_helpers.ts";

const SECRET = "verifier-test-secret-0123456789abcdef";
const API = "https://api.example.com";

async function jwtServer() {
  return fixture({ accessTokenFormat: "jwt", accessTokenAudience: API, secret: SECRET, resources: [MCP] });
}

async function token(server: AuthorizationServer, fields: Record<string, string> = {}): Promise<string> {
  const response = await post(server, "/token", { grant_type: "client_credentials", scope: "export", ...fields }, {
    authorization: `Basic ${btoa(`backend:${SECRETS.backend}`)}`,
  });
  return ((await response.json()) as { access_token: string }).access_token;
}

/** A key pair and a verifier trusting it as the issuer's, to test the checks on tokens signed here. */
async function ownIssuer(options: { cacheSize?: number } = {}) {
  const { privateKey, publicKey } = await jose.generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await jose.exportJWK(publicKey)), kid: "k1", alg: "ES256", use: "sig" };
  const now = 1_800_000_000;
  const keySource: KeySource = localJwks({ keys: [jwk] });
  const verify = jwtTokenVerifier({ server: { issuer: ISSUER, keys: { keySource } }, audience: API, now: () => now * 1000, ...options });
  const claims = { iss: ISSUER, aud: API, sub: "alice", client_id: "spa", scope: "read", iat: now, exp: now + 60, jti: "j1" };
  const sign = (payload: Record<string, unknown> = claims, header: jose.JWTHeaderParameters = { alg: "ES256", typ: "at+jwt", kid: "k1" }) =>
    new jose.SignJWT(payload).setProtectedHeader(header).sign(privateKey);
  return { verify, sign, claims, jwk, now };
}

describe("against the server's /jwks", () => {
  test("tokens of client_credentials and of the code flow resolve to what they grant", async () => {
    const f = await jwtServer();
    const verify = jwtTokenVerifier({
      issuer: ISSUER, jwksUri: `${ISSUER}/jwks`, audience: API, now: f.clock.read, jwks: { fetch: (request) => f.server.fetch(request) },
    });
    const cc = await token(f.server);
    expect(await verify(cc)).toEqual({ client_id: "backend", scope: "export", exp: Math.floor(f.clock.now / 1000) + 3600, aud: [API] });
    const { access_token } = await spaTokens(f.server);
    expect(await verify(access_token)).toMatchObject({ client_id: "spa", user_id: "alice", scope: "read" });
    // Bound to another resource: not for this API.
    expect(await verify(await token(f.server, { resource: MCP }))).toBeNull();
    // An opaque token, or anything else, is simply not valid here.
    expect(await verify("mF_9.B5f-4.1JqM")).toBeNull();
    expect(await verify("not-a-jwt")).toBeNull();
  });

  test("a key rotated in after the set was fetched: one refetch on the unknown kid", async () => {
    const f = await jwtServer();
    let fetches = 0;
    const verify = jwtTokenVerifier({
      issuer: ISSUER, jwksUri: `${ISSUER}/jwks`, audience: API, now: f.clock.read,
      jwks: { fetch: (request) => (fetches++, f.server.fetch(request)) },
    });
    expect(await verify(await token(f.server))).not.toBeNull();
    await f.server.keys.rotate();
    f.clock.advance(15 * 60 + 31);
    expect(await verify(await token(f.server))).not.toBeNull();
    expect(fetches).toBe(2);
  });

  test("an unreachable key set is an error, so the resource answers 503, not 401", async () => {
    const f = await jwtServer();
    const verify = jwtTokenVerifier({
      issuer: ISSUER, jwksUri: `${ISSUER}/jwks`, audience: API, now: f.clock.read, jwks: { fetch: () => Promise.reject(new TypeError("down")) },
    });
    const jwt = await token(f.server);
    await expect(verify(jwt)).rejects.toMatchObject({ code: "ERR_JWKS_FETCH_FAILED" });
    const api = protectedResource({ resource: API, authorizationServers: [ISSUER], verify });
    const answer = await api.protect(undefined, () => new Response("ok"))(new Request(API, { headers: { authorization: `Bearer ${jwt}` } }));
    expect(answer.status).toBe(503);
  });
});

describe("the server's keys in memory", () => {
  test("protectedResource with the in-process verifier: 200, 403 insufficient_scope, 401 for another audience", async () => {
    const f = await jwtServer();
    const verify = jwtTokenVerifier({ server: f.server, audience: API, now: f.clock.read });
    const api = protectedResource({ resource: API, authorizationServers: [ISSUER], verify });
    const call = async (jwt: string, scopes: string[]) =>
      (await api.protect(scopes, (_, t) => Response.json(t))(new Request(API, { headers: { authorization: `Bearer ${jwt}` } })));
    const ok = await call(await token(f.server), ["export"]);
    expect([ok.status, await ok.json()]).toEqual([200, expect.objectContaining({ client_id: "backend" })]);
    expect((await call(await token(f.server), ["read"])).headers.get("www-authenticate")).toMatch(/error="insufficient_scope"/);
    expect((await call(await token(f.server, { resource: MCP }), ["export"])).status).toBe(401);
  });

  test("no store call per verification: the key set is read once, then again only on an unknown kid (at most every 5 s)", async () => {
    const f = await jwtServer();
    const jwt = await token(f.server);
    let reads = 0;
    const getSetting = f.storage.getSetting.bind(f.storage);
    f.storage.getSetting = (name) => (reads++, getSetting(name));
    const verify = jwtTokenVerifier({ server: f.server, audience: API, now: f.clock.read, cacheSize: 0 });
    for (let i = 0; i < 100; i++) expect(await verify(jwt)).not.toBeNull();
    expect(reads).toBe(0);
    const [head, body] = jwt.split(".");
    const header = JSON.parse(atob(head!.replace(/-/g, "+").replace(/_/g, "/")));
    const unknown = `${btoa(JSON.stringify({ ...header, kid: "nope" })).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")}.${body}.${jwt.split(".")[2]}`;
    for (let i = 0; i < 20; i++) expect(await verify(unknown)).toBeNull();
    expect(reads).toBe(1);
  });
});

describe("the checks", () => {
  test("a valid token resolves; issuer, audience, expiry and type are checked exactly", async () => {
    const t = await ownIssuer({ cacheSize: 0 });
    expect(await t.verify(await t.sign())).toEqual({ client_id: "spa", user_id: "alice", scope: "read", exp: t.now + 60, aud: [API] });
    expect(await t.verify(await t.sign({ ...t.claims, iss: `${ISSUER}/` }))).toBeNull();
    expect(await t.verify(await t.sign({ ...t.claims, aud: `${API}/` }))).toBeNull();
    expect(await t.verify(await t.sign({ ...t.claims, aud: ["https://other.example", API] }))).not.toBeNull();
    expect(await t.verify(await t.sign({ ...t.claims, exp: t.now }))).toBeNull();
    expect(await t.verify(await t.sign(t.claims, { alg: "ES256", typ: "JWT", kid: "k1" }))).toBeNull();
    expect(await t.verify(await t.sign(t.claims, { alg: "ES256", kid: "k1" }))).toBeNull();
    expect(await t.verify(await t.sign(t.claims, { alg: "ES256", typ: "application/at+jwt", kid: "k1" }))).not.toBeNull();
    for (const claim of ["iss", "exp", "aud", "sub", "client_id", "iat", "jti"]) {
      const { [claim]: _, ...rest } = t.claims as Record<string, unknown>;
      expect(await t.verify(await t.sign(rest)), claim).toBeNull();
    }
    // sub equal to client_id: a client_credentials token, acting for the client itself (RFC 9068 §2.2).
    expect((await t.verify(await t.sign({ ...t.claims, sub: "spa" })))!.user_id).toBeUndefined();
  });

  test("algorithm confusion: none, and HS256 keyed with the public key, are refused", async () => {
    const t = await ownIssuer({ cacheSize: 0 });
    const enc = (o: unknown) => btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
    expect(await t.verify(`${enc({ alg: "none", typ: "at+jwt", kid: "k1" })}.${enc(t.claims)}.`)).toBeNull();
    for (const secret of [JSON.stringify(t.jwk), t.jwk.x!]) {
      const hs = await new jose.SignJWT(t.claims).setProtectedHeader({ alg: "HS256", typ: "at+jwt", kid: "k1" }).sign(new TextEncoder().encode(secret));
      expect(await t.verify(hs)).toBeNull();
    }
    const { privateKey } = await jose.generateKeyPair("ES256");
    const forged = await new jose.SignJWT(t.claims).setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: "k1" }).sign(privateKey);
    expect(await t.verify(forged)).toBeNull();
  });

  test("a verified token is remembered until it expires, a refused one never", async () => {
    let now = 1_800_000_000_000;
    const t = await ownIssuer();
    const verify = jwtTokenVerifier({ server: { issuer: ISSUER, keys: { keySource: localJwks({ keys: [t.jwk] }) } }, audience: API, now: () => now });
    let lookups = 0;
    const counting = jwtTokenVerifier({
      server: { issuer: ISSUER, keys: { keySource: (h) => (lookups++, localJwks({ keys: [t.jwk] })(h)) } }, audience: API, now: () => now,
    });
    const jwt = await t.sign({ ...t.claims, iat: now / 1000, exp: now / 1000 + 30 });
    for (let i = 0; i < 5; i++) expect(await counting(jwt)).not.toBeNull();
    expect(lookups).toBe(1);
    const info = await verify(jwt);
    expect(Object.isFrozen(info)).toBe(true);
    now += 30_000;
    expect(await counting(jwt)).toBeNull();
    expect(await verify(jwt)).toBeNull();
    expect(lookups).toBe(2);
    const bad = await t.sign({ ...t.claims, aud: "https://elsewhere.example" });
    await counting(bad);
    await counting(bad);
    expect(lookups).toBe(4);
  });

  test("options that would check nothing are refused", () => {
    expect(() => jwtTokenVerifier({ audience: API } as never)).toThrow(/"issuer" \(or "server"\) is required/);
    expect(() => jwtTokenVerifier({ issuer: ISSUER, audience: API })).toThrow(/give "jwksUri" or "server"/);
    expect(() => jwtTokenVerifier({ issuer: ISSUER, jwksUri: `${ISSUER}/jwks`, audience: "" })).toThrow(/"audience" is required/);
  });
});
