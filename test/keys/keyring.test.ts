// Signing keys kept in the store: rotation seen through /jwks and the tokens (a new key is published before it
// signs; a token signed before a rotation verifies until its key retires), the schedule, instances sharing one
// store (one key made when both start, one successor when both rotate), the algorithms, and what is refused.
import * as jose from "jose";
import { describe, expect, test } from "vitest";
import { type AuthorizationServer, type AuthorizationServerOptions, ConfigurationError, jwtTokenVerifier } from "../../mod.ts";
import { type Fixture, fixture, ISSUER, SECRETS } from "../helpers.ts";
import { post } from "../mcp_helpers.ts";

const SECRET = "keys-test-secret-0123456789abcdef-0123";
const MINUTE = 60;
const DAY = 86_400;
const jwtFixture = (overrides: Partial<AuthorizationServerOptions> = {}): Promise<Fixture> =>
  fixture({ accessTokenFormat: "jwt", secret: SECRET, ...overrides });

async function token(server: AuthorizationServer): Promise<string> {
  const response = await post(server, "/token", { grant_type: "client_credentials", scope: "export" }, {
    authorization: `Basic ${btoa(`backend:${SECRETS.backend}`)}`,
  });
  expect(response.status, await response.clone().text()).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

const kidOf = (jwt: string) => jose.decodeProtectedHeader(jwt).kid;
const kids = async (server: AuthorizationServer) =>
  ((await (await server.fetch(new Request(`${ISSUER}/jwks`))).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);

/** jose's verification against the server's /jwks at the fixture's time: true when it verifies. */
async function verifies(f: Fixture, jwt: string): Promise<boolean> {
  const set = await (await f.server.fetch(new Request(`${ISSUER}/jwks`))).json();
  return jose.jwtVerify(jwt, jose.createLocalJWKSet(set), { issuer: ISSUER, audience: ISSUER, currentDate: new Date(f.clock.now) })
    .then(() => true, () => false);
}

describe("rotation", () => {
  test("keys rotate: the successor is published at once and signs 15 minutes later; the old token verifies until its key retires", async () => {
    const f = await jwtFixture({ lifetimes: { accessToken: 10 * DAY }, signingKeys: { retireAfterDays: 30 } });
    const before = await token(f.server);
    const oldKid = kidOf(before);
    const { rotated, keys: listed } = await f.server.keys.rotate();
    expect(rotated).toBe(true);
    expect(listed.map((k) => [k.kid === oldKid, k.state])).toEqual([[true, "current"], [false, "next"]]);
    const newKid = listed[1]!.kid;
    expect(listed[0]!.retires_at).toBe(new Date(f.clock.now + 15 * MINUTE * 1000 + 30 * DAY * 1000).toISOString());
    // Published before it signs: resource servers that cache /jwks for up to 15 minutes already have it.
    expect(await kids(f.server)).toEqual([oldKid, newKid]);
    expect(kidOf(await token(f.server))).toBe(oldKid);
    f.clock.advance(15 * MINUTE);
    const after = await token(f.server);
    expect(kidOf(after)).toBe(newKid);
    expect((await f.server.keys.list()).map((k) => k.state)).toEqual(["previous", "current"]);
    // The token signed before the rotation keeps verifying, with jose and with the in-process verifier...
    const local = jwtTokenVerifier({ server: f.server, audience: ISSUER, now: f.clock.read, cacheSize: 0 });
    f.clock.advance(9 * DAY);
    expect(await verifies(f, before)).toBe(true);
    expect(await local(before)).toMatchObject({ client_id: "backend" });
    // ...until its key retires (30 days after it stopped signing): /jwks drops it, and neither jose (at the
    // token's own time) nor the in-process verifier accepts it any more. Its tokens have expired by then anyway.
    const issuedAt = f.clock.now - 9 * DAY * 1000;
    f.clock.advance(21 * DAY);
    expect(await kids(f.server)).toEqual([newKid]);
    expect((await f.server.keys.list())[0]!.state).toBe("retired");
    const set = await (await f.server.fetch(new Request(`${ISSUER}/jwks`))).json();
    await expect(jose.jwtVerify(before, jose.createLocalJWKSet(set), { currentDate: new Date(issuedAt) })).rejects.toThrow(/no applicable key/i);
    const atIssue = jwtTokenVerifier({ server: f.server, audience: ISSUER, now: () => issuedAt, cacheSize: 0 });
    expect(await atIssue(before)).toBeNull();
    expect(await verifies(f, await token(f.server))).toBe(true);
  });

  test("a second rotation while a successor waits changes nothing", async () => {
    const f = await jwtFixture();
    await token(f.server);
    const once = await f.server.keys.rotate();
    expect(await f.server.keys.rotate()).toEqual({ rotated: false, keys: once.keys });
    expect(await kids(f.server)).toHaveLength(2);
  });

  test("on schedule: the successor appears rotateAfterDays minus 15 minutes after the key began to sign, and takes over on the day", async () => {
    const f = await jwtFixture({ signingKeys: { rotateAfterDays: 2, retireAfterDays: 1 } });
    const first = kidOf(await token(f.server));
    f.clock.advance(2 * DAY - 16 * MINUTE);
    expect(kidOf(await token(f.server))).toBe(first);
    expect(await kids(f.server)).toEqual([first]);
    f.clock.advance(MINUTE);
    expect(kidOf(await token(f.server))).toBe(first);
    const [, second] = await kids(f.server);
    expect(second).toBeDefined();
    f.clock.advance(15 * MINUTE);
    expect(kidOf(await token(f.server))).toBe(second);
    f.clock.advance(DAY);
    expect(await kids(f.server)).toEqual([second]);
  });

  test("a changed algorithm takes effect at the next rotation", async () => {
    const f = await jwtFixture();
    const es = await token(f.server);
    const g = await jwtFixture({ storage: f.storage, clock: f.clock.read, signingKeys: { algorithm: "EdDSA" } });
    expect(jose.decodeProtectedHeader(await token(g.server)).alg).toBe("ES256");
    await g.server.keys.rotate();
    f.clock.advance(15 * MINUTE);
    const ed = await token(g.server);
    expect(jose.decodeProtectedHeader(ed).alg).toBe("EdDSA");
    expect([await verifies(f, es), await verifies(f, ed)]).toEqual([true, true]);
  });
});

describe("instances on one store", () => {
  test("two servers starting together make one key, and each verifies what the other signs", async () => {
    const a = await jwtFixture();
    const b = await jwtFixture({ storage: a.storage, clock: a.clock.read });
    await Promise.all([a.server.keys.ready(), b.server.keys.ready()]);
    expect(await kids(a.server)).toEqual(await kids(b.server));
    expect(await kids(a.server)).toHaveLength(1);
    const fromA = await token(a.server);
    const atB = jwtTokenVerifier({ server: b.server, audience: ISSUER, now: a.clock.read });
    expect(await atB(fromA)).toMatchObject({ client_id: "backend", scope: "export" });
  });

  test("racing rotations on two servers add one successor; each sees it within the refresh interval", async () => {
    const a = await jwtFixture();
    const b = await jwtFixture({ storage: a.storage, clock: a.clock.read });
    await Promise.all([token(a.server), token(b.server)]);
    const results = await Promise.all([a.server.keys.rotate(), b.server.keys.rotate()]);
    expect(results.map((r) => r.rotated).sort()).toEqual([false, true]);
    expect(results[0]!.keys).toEqual(results[1]!.keys);
    expect(results[0]!.keys).toHaveLength(2);
    a.clock.advance(15 * MINUTE);
    const next = results[0]!.keys[1]!.kid;
    // Each instance reads the set again in the background once its copy is 10 s old.
    await token(a.server);
    await token(b.server);
    expect([kidOf(await token(a.server)), kidOf(await token(b.server))]).toEqual([next, next]);
  });

  test("a key another instance made since the last read verifies at once (one read on the unknown kid)", async () => {
    const a = await jwtFixture();
    const b = await jwtFixture({ storage: a.storage, clock: a.clock.read });
    await Promise.all([a.server.keys.ready(), b.server.keys.ready()]);
    await a.server.keys.rotate();
    a.clock.advance(15 * MINUTE);
    const fresh = await token(a.server);
    const atB = jwtTokenVerifier({ server: b.server, audience: ISSUER, now: a.clock.read });
    expect(await atB(fresh)).toMatchObject({ client_id: "backend" });
  });
});

describe("algorithms", () => {
  test.each(["ES256", "EdDSA", "RS256", "PS256"] as const)("%s keys sign tokens that jose verifies with /jwks", async (algorithm) => {
    const f = await jwtFixture({ signingKeys: { algorithm } });
    const jwt = await token(f.server);
    expect(jose.decodeProtectedHeader(jwt)).toMatchObject({ alg: algorithm, typ: "at+jwt" });
    expect(await verifies(f, jwt)).toBe(true);
  });
});

describe("refused", () => {
  test("retireAfterDays shorter than the access-token lifetime (a server without signing keys may keep long tokens)", async () => {
    await expect(fixture({ signingKeys: { retireAfterDays: 1 }, lifetimes: { accessToken: 2 * DAY } })).rejects.toMatchObject({
      name: "ConfigurationError", option: "signingKeys.retireAfterDays",
    });
    await expect(fixture({ accessTokenFormat: "jwt", lifetimes: { accessToken: 8 * DAY } })).rejects.toMatchObject({ option: "signingKeys.retireAfterDays" });
    await expect(fixture({ lifetimes: { accessToken: 30 * DAY } })).resolves.toBeDefined();
  });

  test("unknown algorithms and bad periods, with the option's path", async () => {
    await expect(fixture({ signingKeys: { algorithm: "HS256" as "ES256" } })).rejects.toThrow(/"signingKeys.algorithm" must be one of "ES256", "EdDSA", "RS256", "PS256"/);
    await expect(fixture({ signingKeys: { rotateAfterDays: 0 } })).rejects.toThrow(/"signingKeys.rotateAfterDays" must be at least 1/);
    await expect(fixture({ accessTokenFormat: "JWT" as "jwt" })).rejects.toThrow(/"accessTokenFormat" must be one of "opaque", "jwt"/);
  });

  test("rotating keys on a server without signing keys", async () => {
    const f = await fixture();
    await expect(f.server.keys.rotate()).rejects.toBeInstanceOf(ConfigurationError);
    await expect(f.server.keys.ready()).resolves.toBeUndefined();
    expect(await f.server.keys.list()).toEqual([]);
  });
});
