// Hardening of the identity inputs (issue 21 item 10): signed assertions (private_key_jwt, ID-JAG, workload JWTs,
// token-exchange subjects and actors) and the key sets behind them are attacker-controlled. Hostile key-set
// servers (slow, trickling, huge, compressed, redirecting, failing, changing keys, leaking private keys) behind an
// operator's jwks_uri; oversized assertions; algorithm confusion in every spelling; replays; and fuzzed
// assertions of every kind. The properties: a refusal with the right RFC 6749 §5.2 error, promptly; never a 5xx,
// a hang or an internal detail; nothing accepted that a key of the trusted set did not sign.
import type { Socket } from "node:net";
import fc from "fast-check";
import * as jose from "jose";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import type { AuthorizationServer } from "../../mod.ts";
import { fixture, type Fixture, ISSUER } from "../helpers.ts";
import {
  ACCESS_TOKEN_TYPE, assertionFields, clientAssertion, hmacSigned, idJag, JWT_BEARER, JWT_TOKEN_TYPE, seconds, testKey, TOKEN_EXCHANGE, unsigned,
  workloadJwt,
} from "../identity_helpers.ts";
import { BROTLI_BOMB_256_MIB, respond, startServer, type TestServer, trickle } from "../jose/fixtures/http_server.ts";
import { post } from "../mcp_helpers.ts";
import { envInt, figures, internalDetail, oauthErrorProblems, see, type Seen } from "./support.ts";

const RUNS = Math.max(100, Math.round(envInt("FUZZ_RUNS", 20_480) / 40));
const tally = { requests: 0, accepted: 0 };
afterAll(() => figures(`fuzz (identity): ${tally.requests} token requests with forged or mangled assertions, ${tally.accepted} accepted (each a genuine one)`));

const KEY = await testKey("ES256");
const IDP_KEY = await testKey("ES256");
const IDP = "https://idp.example.com";
const PLATFORM = "https://platform.example.com";
const AGENT_SECRET = "agent-secret-0123456789abcdef";
/** The deadline of one key-set fetch in these tests: a hostile server costs at most this. */
const TIMEOUT = 400;

let host: TestServer | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
});

const errors = ["invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope", "invalid_target", "slow_down"];

/** Checks a refusal: the expected error, a valid §5.2 body, no internals. */
function refusal(seen: Seen, error: string, label: string): void {
  expect(oauthErrorProblems(seen, errors), label).toEqual([]);
  expect(internalDetail(seen.body), label).toBeUndefined();
  expect(JSON.parse(seen.body).error, label).toBe(error);
}

/** A server with a signing client whose keys are at `jwksUri`, a trusted IdP there too, and token exchange. */
async function server(jwksUri: string, limits = {}): Promise<Fixture> {
  const f = await fixture({
    profile: "rfc6749",
    // Each refusal is checked for its own error; the throttle's slow_down is proven elsewhere.
    throttle: false,
    keySets: { timeout: TIMEOUT },
    trustedIssuers: [
      { issuer: IDP, jwksUri, kind: "id-jag", clients: ["agent"], scopes: ["read"] },
      { issuer: PLATFORM, jwks: IDP_KEY.jwks, kind: "workload", clients: ["agent"], scopes: ["read"] },
    ],
    tokenExchange: { enabled: true },
    linkUser: () => "alice",
    limits,
  });
  await f.server.clients.register({
    client_id: "signer", name: "Signer", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"],
    token_endpoint_auth_method: "private_key_jwt", jwks_uri: jwksUri,
  });
  await f.server.clients.register({
    client_id: "agent", client_secret: AGENT_SECRET, name: "Agent", type: "confidential", scopes: ["read"], grant_types: [JWT_BEARER, TOKEN_EXCHANGE],
  });
  return f;
}

const signIn = async (s: AuthorizationServer, now: number, key = KEY) =>
  see(await post(s, "/token", { grant_type: "client_credentials", scope: "read", ...assertionFields(await clientAssertion(key, "signer", now)) }));
const presentJag = async (s: AuthorizationServer, now: number, key = KEY) =>
  see(await post(s, "/token", { grant_type: JWT_BEARER, client_id: "agent", client_secret: AGENT_SECRET, assertion: await idJag(key, IDP, "agent", now) }));

describe("hostile key-set servers behind an operator's jwks_uri", () => {
  const json = (body: unknown, headers: Record<string, string> = {}) => (socket: Socket) =>
    respond(socket, 200, { "content-type": "application/json", ...headers }, JSON.stringify(body));
  const HOSTILE: [string, (socket: Socket) => void][] = [
    ["slow: headers never come", () => {}],
    ["trickling: one byte every 50 ms", (socket) => trickle(socket, 50)],
    ["huge: 100 KiB of keys", json({ keys: Array.from({ length: 1500 }, (_, i) => ({ ...KEY.publicJwk, kid: `k${i}` })) })],
    ["a declared length far past the cap", (socket) => {
      socket.write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 10000000\r\n\r\n{");
    }],
    ["a brotli bomb (211 bytes, 256 MiB)", (socket) => respond(socket, 200, { "content-type": "application/json", "content-encoding": "br" }, BROTLI_BOMB_256_MIB)],
    ["a redirect to a set that would verify", (socket) => respond(socket, 302, { location: "http://127.0.0.1:9/jwks" })],
    ["a 500", (socket) => respond(socket, 500, {}, "oops")],
    ["not JSON", (socket) => respond(socket, 200, { "content-type": "application/json" }, "<html>")],
    ["a set with the private key", json({ keys: [{ ...KEY.publicJwk, d: "AAAA" }] })],
    ["a set of only another key", json({ keys: [{ ...IDP_KEY.publicJwk, kid: KEY.kid }] })],
  ];
  test.each(HOSTILE)("%s: invalid_client and invalid_grant within the deadline, and nothing fetched again at once", async (_, answer) => {
    host = await startServer((_request, socket) => answer(socket));
    const f = await server(`${host.origin}/jwks`);
    const started = Date.now();
    refusal(await signIn(f.server, f.clock.now), "invalid_client", "client");
    refusal(await presentJag(f.server, f.clock.now), "invalid_grant", "id-jag");
    expect(Date.now() - started).toBeLessThan(2 * TIMEOUT + 1500);
    const fetched = host.requests.length;
    // A failed set is not fetched again within the cooldown: a flood of requests costs the host nothing more.
    for (let i = 0; i < 5; i++) refusal(await signIn(f.server, f.clock.now), "invalid_client", "again");
    expect(host.requests.length).toBe(fetched);
    expect(f.errors).toEqual([]);
  });

  test("a set that changes at every fetch: one refetch per unknown kid per 30 s, whatever the flood", async () => {
    let n = 0;
    host = await startServer((_request, socket) => json({ keys: [{ ...KEY.publicJwk, kid: `rotating-${n++}` }] })(socket));
    const f = await server(`${host.origin}/jwks`);
    for (let i = 0; i < 10; i++) await signIn(f.server, f.clock.now, { ...KEY, kid: `made-up-${i}` });
    expect(host.requests.length).toBe(1);
    f.clock.advance(31);
    await signIn(f.server, f.clock.now, { ...KEY, kid: "made-up-again" });
    expect(host.requests.length).toBe(2);
  });

  test("a set that recovers: the last good set stays when a refetch fails", async () => {
    let fail = false;
    host = await startServer((_request, socket) => (fail ? respond(socket, 503, {}) : json(KEY.jwks, { "cache-control": "max-age=60" })(socket)));
    const f = await server(`${host.origin}/jwks`);
    expect((await signIn(f.server, f.clock.now)).status).toBe(200);
    fail = true;
    f.clock.advance(120);
    for (let i = 0; i < 3; i++) expect((await signIn(f.server, f.clock.now)).status).toBe(200);
  });
});

describe("oversized and malformed assertions", () => {
  test("an assertion past 8 KiB is refused unread, even where the form allows it", async () => {
    host = await startServer((_request, socket) => respond(socket, 200, { "content-type": "application/json" }, JSON.stringify(KEY.jwks)));
    const f = await server(`${host.origin}/jwks`, { maxParameterLength: 64 * 1024, maxBodyBytes: 256 * 1024 });
    const padded = await clientAssertion(KEY, "signer", f.clock.now, { pad: "x".repeat(9000) });
    refusal(await see(await post(f.server, "/token", { grant_type: "client_credentials", client_id: "signer", scope: "read", ...assertionFields(padded) })), "invalid_client", "client");
    const jag = await idJag(KEY, IDP, "agent", f.clock.now, { pad: "x".repeat(9000) });
    refusal(await see(await post(f.server, "/token", { grant_type: JWT_BEARER, client_id: "agent", client_secret: AGENT_SECRET, assertion: jag })), "invalid_grant", "id-jag");
    expect(host.requests).toHaveLength(0);
  });

  test("with the default limits an assertion of 40 KiB is a 4xx at the form, never a 5xx", async () => {
    const f = await server("https://keys.example.com/jwks");
    const seen = await see(await post(f.server, "/token", { grant_type: JWT_BEARER, client_id: "agent", client_secret: AGENT_SECRET, assertion: "e".repeat(40_000) }));
    expect(seen.status).toBeGreaterThanOrEqual(400);
    expect(seen.status).toBeLessThan(500);
  });
});

describe("algorithm confusion", () => {
  test("every spelling of none, every HMAC, and a key of another type under the right kid: refused", async () => {
    host = await startServer((_request, socket) => respond(socket, 200, { "content-type": "application/json" }, JSON.stringify(KEY.jwks)));
    const f = await server(`${host.origin}/jwks`);
    const genuine = await clientAssertion(KEY, "signer", f.clock.now);
    const [header, payload] = genuine.split(".");
    const b64 = (value: unknown) => jose.base64url.encode(JSON.stringify(value));
    const base = JSON.parse(new TextDecoder().decode(jose.base64url.decode(header!)));
    const forged: string[] = [unsigned(genuine)];
    for (const alg of ["None", "NONE", "nOnE", "none ", "", "ES256 ", "es256", "HS256", "HS384", "HS512", "RS256", "PS256", "EdDSA", "ES512"]) {
      forged.push(`${b64({ ...base, alg })}.${payload}.${genuine.split(".")[2]}`);
    }
    for (const secret of [JSON.stringify(KEY.publicJwk), KEY.publicJwk.x!, KEY.publicJwk.y!, JSON.stringify(KEY.jwks)]) forged.push(await hmacSigned(genuine, secret));
    const rsa = await testKey("RS256", KEY.kid);
    forged.push(await clientAssertion(rsa, "signer", f.clock.now));
    forged.push(`${b64({ ...base, jwk: KEY.publicJwk, alg: "ES256" })}.${payload}.${genuine.split(".")[2]!.slice(0, -4)}AAAA`);
    forged.push(`${b64({ ...base, crit: ["exp"] })}.${payload}.${genuine.split(".")[2]}`);
    for (const token of forged) {
      tally.requests++;
      refusal(await see(await post(f.server, "/token", { grant_type: "client_credentials", scope: "read", client_id: "signer", ...assertionFields(token) })), "invalid_client", token.slice(0, 40));
    }
    expect((await signIn(f.server, f.clock.now)).status).toBe(200);
  });
});

describe("fuzzed assertions", () => {
  /** A JWT from parts, base64url-encoded as given (a string is taken as already encoded). */
  const jwt = (header: unknown, payload: unknown, signature: string) =>
    [header, payload].map((p) => (typeof p === "string" ? p : jose.base64url.encode(JSON.stringify(p)))).join(".") + "." + signature;
  const claimValue = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 3 }), fc.object({ maxDepth: 1 }));
  const mangled = (genuine: () => Promise<string>) =>
    fc.record({
      header: fc.dictionary(fc.constantFrom("alg", "typ", "kid", "crit", "jwk", "b64", "x5u", "jku"), claimValue),
      payload: fc.dictionary(fc.constantFrom("iss", "sub", "aud", "exp", "iat", "nbf", "jti", "client_id", "email", "scope", "resource", "act"), claimValue),
      signature: fc.oneof(fc.constant(""), fc.base64String(), fc.string()),
      raw: fc.option(fc.string({ maxLength: 300 }), { nil: undefined }),
      useGenuineSignature: fc.boolean(),
    }).map(async (p) => {
      if (p.raw !== undefined) return p.raw;
      const real = await genuine();
      return jwt(p.header, p.payload, p.useGenuineSignature ? real.split(".")[2]! : p.signature);
    });

  test("client assertions, ID-JAGs, workload JWTs and token-exchange subjects and actors: refused, never a 5xx", async () => {
    const f = await server("http://127.0.0.1:9/unused");
    await f.server.clients.register({
      client_id: "signer", name: "Signer", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"],
      token_endpoint_auth_method: "private_key_jwt", jwks: KEY.jwks,
    });
    const slots: [string, (token: string) => Record<string, string>][] = [
      ["client_assertion", (t) => ({ grant_type: "client_credentials", scope: "read", ...assertionFields(t) })],
      ["client_assertion with client_id", (t) => ({ grant_type: "client_credentials", scope: "read", client_id: "signer", ...assertionFields(t) })],
      ["assertion", (t) => ({ grant_type: JWT_BEARER, client_id: "agent", client_secret: AGENT_SECRET, assertion: t })],
      ["subject_token", (t) => ({ grant_type: TOKEN_EXCHANGE, client_id: "agent", client_secret: AGENT_SECRET, subject_token: t, subject_token_type: JWT_TOKEN_TYPE })],
      ["subject_token as access token", (t) => ({ grant_type: TOKEN_EXCHANGE, client_id: "agent", client_secret: AGENT_SECRET, subject_token: t, subject_token_type: ACCESS_TOKEN_TYPE })],
    ];
    const genuine = () => workloadJwt(IDP_KEY, PLATFORM, f.clock.now);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...slots), mangled(genuine), async ([slot, fields], tokenPromise) => {
        const token = await tokenPromise;
        tally.requests++;
        const seen = await see(await post(f.server, "/token", fields(token)));
        expect(seen.status, slot).toBeLessThan(500);
        if (seen.status === 200) {
          // Only a JWT the platform's key really signed may pass: its signature must verify with that key.
          tally.accepted++;
          await expect(jose.compactVerify(token, await jose.importJWK(IDP_KEY.publicJwk, "ES256")), slot).resolves.toBeTruthy();
          return;
        }
        expect(oauthErrorProblems(seen, errors), `${slot}: ${token.slice(0, 60)}`).toEqual([]);
        expect(internalDetail(seen.body), slot).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
    expect(f.errors).toEqual([]);
  }, 120_000);

  test("a genuine ID-JAG with each claim changed: refused unless the change is harmless, and its jti single-use throughout", async () => {
    host = await startServer((_request, socket) => respond(socket, 200, { "content-type": "application/json", "cache-control": "max-age=3600" }, JSON.stringify(KEY.jwks)));
    const f = await server(`${host.origin}/jwks`);
    const now = seconds(f.clock.now);
    const changes: Record<string, unknown>[] = [
      { iss: "https://idp.example.com/" }, { aud: `${ISSUER}/` }, { aud: [ISSUER, ISSUER] }, { client_id: "Agent" }, { exp: now - 31 },
      { iat: now + 600 }, { nbf: now + 600 }, { exp: "soon" }, { jti: 7 }, { sub: 7 }, { client_id: ["agent"] }, { scope: 7 }, { resource: 7 },
    ];
    for (const change of changes) {
      tally.requests++;
      const seen = await see(await post(f.server, "/token", { grant_type: JWT_BEARER, client_id: "agent", client_secret: AGENT_SECRET, assertion: await idJag(KEY, IDP, "agent", f.clock.now, change) }));
      expect(seen.status, JSON.stringify(change)).toBe(400);
      expect(internalDetail(seen.body)).toBeUndefined();
    }
    const jti = "one-and-only";
    const first = await see(await post(f.server, "/token", { grant_type: JWT_BEARER, client_id: "agent", client_secret: AGENT_SECRET, assertion: await idJag(KEY, IDP, "agent", f.clock.now, { jti }) }));
    expect(first.status).toBe(200);
    // The same jti in another assertion (another iat) is still a replay: the jti, not the token, is spent.
    const again = await see(await post(f.server, "/token", { grant_type: JWT_BEARER, client_id: "agent", client_secret: AGENT_SECRET, assertion: await idJag(KEY, IDP, "agent", f.clock.now + 1000, { jti }) }));
    refusal(again, "invalid_grant", "same jti");
  });
});
