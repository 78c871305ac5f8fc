// private_key_jwt (RFC 7523 §2.2, §3; RFC 7521 §4.2): the client signs an assertion with its private key; the
// server holds its public keys (jwks, or jwks_uri). The client is found from the assertion when the request names
// none; every refusal is 401 invalid_client with the Basic challenge, and each one's reason reaches the audit
// trail. Assertions are made with jose, never with lib/jose.
import { describe, expect, test } from "vitest";
import type { AuditEvent } from "../../mod.ts";
import { errorOf, fixture, type Fixture, ISSUER, postToken, SECRETS, TOKEN_URL } from "../helpers.ts";
import { assertionFields, clientAssertion, hmacSigned, seconds, testKey, type TestKey, unsigned } from "../identity_helpers.ts";
import { respond, startServer } from "../jose/fixtures/http_server.ts";
import { approve, LOOPBACK, mcpFixture, post } from "../mcp_helpers.ts";

const KEY = await testKey("ES256");
const OTHER = await testKey("ES256", KEY.kid);

/** The fixture with `signer` (private_key_jwt, inline keys) and a record of the audit events. */
async function setup(keys: TestKey[] = [KEY]): Promise<Fixture & { events: AuditEvent[] }> {
  const events: AuditEvent[] = [];
  const f = await fixture({ onEvent: (event) => events.push(event) });
  await f.server.clients.register({
    client_id: "signer", name: "Signing service", type: "confidential", scopes: ["export", "read"],
    grant_types: ["client_credentials"], token_endpoint_auth_method: "private_key_jwt", jwks: { keys: keys.map((k) => k.publicJwk) },
  });
  return { ...f, events };
}

const cc = (fields: Record<string, string> = {}) => ({ grant_type: "client_credentials", scope: "export", ...fields });

async function accepted(f: Fixture, response: Response): Promise<Record<string, unknown>> {
  expect(response.status, await response.clone().text()).toBe(200);
  const body = await response.json() as Record<string, unknown>;
  expect((await f.server.verifyAuthorization(`Bearer ${body.access_token as string}`)).client_id).toBe("signer");
  return body;
}

async function refused(response: Response, label: string): Promise<void> {
  const error = await errorOf(response);
  expect({ status: error.status, error: error.error }, label).toEqual({ status: 401, error: "invalid_client" });
  expect(response.headers.get("www-authenticate"), label).toMatch(/^Basic realm=/);
}

describe("a client that signs its assertions", () => {
  test("gets a client_credentials token with the assertion alone: no client_id in the request (the MCP SDK's way)", async () => {
    const f = await setup();
    const body = await accepted(f, await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, "signer", f.clock.now)))));
    expect(body).toMatchObject({ token_type: "Bearer", scope: "export" });
  });

  test("and with its client_id in the request too", async () => {
    const f = await setup();
    await accepted(f, await postToken(f.server, cc({ client_id: "signer", ...assertionFields(await clientAssertion(KEY, "signer", f.clock.now)) })));
  });

  test("aud may be the issuer, or the URL of the endpoint the assertion is sent to (RFC 7523 §3, OpenID Connect Core §9)", async () => {
    const f = await setup();
    await accepted(f, await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { aud: TOKEN_URL })))));
    await accepted(f, await post(f.server, "/token", cc(assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { aud: `${ISSUER}/token` })))));
    await accepted(f, await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { aud: [ISSUER] })))));
  });

  test("every algorithm of the allow-list works: ES256, ES384, EdDSA, RS256, PS256", async () => {
    const keys = await Promise.all(["ES256", "ES384", "EdDSA", "RS256", "PS256"].map((alg) => testKey(alg)));
    const f = await setup(keys);
    for (const key of keys) await accepted(f, await postToken(f.server, cc(assertionFields(await clientAssertion(key, "signer", f.clock.now)))));
  });

  test("the same assertion authenticates at introspection and revocation (its jti spent once)", async () => {
    const f = await setup();
    const issued = await (await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, "signer", f.clock.now))))).json() as { access_token: string };
    const introspection = await post(f.server, "/introspect", { token: issued.access_token, ...assertionFields(await clientAssertion(KEY, "signer", f.clock.now)) });
    expect(await introspection.json()).toMatchObject({ active: true, client_id: "signer" });
    const revocation = await post(f.server, "/revoke", { token: issued.access_token, ...assertionFields(await clientAssertion(KEY, "signer", f.clock.now)) });
    expect(revocation.status).toBe(200);
    await expect(f.server.verifyAuthorization(`Bearer ${issued.access_token}`)).rejects.toMatchObject({ code: "invalid_token" });
  });
});

describe("refused with invalid_client, its reason in the audit trail", () => {
  const cases: [string, string, (f: Fixture) => Promise<Record<string, string>>][] = [
    ["alg none", "algorithm", async (f) => assertionFields(unsigned(await clientAssertion(KEY, "signer", f.clock.now)))],
    ["HS256 keyed with the client's public JWK", "algorithm", async (f) =>
      assertionFields(await hmacSigned(await clientAssertion(KEY, "signer", f.clock.now), JSON.stringify(KEY.publicJwk)))],
    ["HS256 keyed with the public key's x", "algorithm", async (f) =>
      assertionFields(await hmacSigned(await clientAssertion(KEY, "signer", f.clock.now), KEY.publicJwk.x!))],
    ["another key under the client's kid", "signature", async (f) => assertionFields(await clientAssertion(OTHER, "signer", f.clock.now))],
    ["a kid the client does not have", "unknown_key", async (f) => assertionFields(await clientAssertion({ ...KEY, kid: "nope" }, "signer", f.clock.now))],
    ["iss another client", "issuer", async (f) => assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { iss: "backend" }))],
    ["sub another client", "claims", async (f) => ({ client_id: "signer", ...assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { sub: "backend" })) })],
    // The client is the form's: a client with a secret, which has no keys to verify with.
    ["a form client_id that is not the assertion's", "", async (f) => ({ client_id: "backend", ...assertionFields(await clientAssertion(KEY, "signer", f.clock.now)) })],
    ["an expired assertion", "expired", async (f) => assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { iat: seconds(f.clock.now) - 400, exp: seconds(f.clock.now) - 60 }))],
    ["an assertion for later (nbf)", "not_yet_valid", async (f) => assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { nbf: seconds(f.clock.now) + 600 }))],
    ["a lifetime of an hour", "lifetime", async (f) => assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { exp: seconds(f.clock.now) + 3600 }))],
    ["no iat and an exp an hour away", "lifetime", async (f) => assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { iat: undefined, exp: seconds(f.clock.now) + 3600 }))],
    ["another audience", "audience", async (f) => assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { aud: "https://other.example.com" }))],
    ["this server and another audience", "audience", async (f) => assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { aud: [ISSUER, "https://other.example.com"] }))],
    ["no jti", "claims", async (f) => assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { jti: undefined }))],
    ["no exp", "claims", async (f) => assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { exp: undefined }))],
    ["typ at+jwt (an access token signed with the client's key)", "typ", async (f) => assertionFields(await clientAssertion(KEY, "signer", f.clock.now, {}, { typ: "at+jwt" }))],
    ["typ dpop+jwt", "typ", async (f) => assertionFields(await clientAssertion(KEY, "signer", f.clock.now, {}, { typ: "dpop+jwt" }))],
  ];
  test.each(cases)("%s", async (_, reason, fields) => {
    const f = await setup();
    await refused(await postToken(f.server, cc(await fields(f))), reason);
    expect(f.events.filter((e) => e.type === "client_assertion.refused").map((e) => e.reason)).toEqual(reason === "" ? [] : [reason]);
  });

  test("a replay: the second use of one assertion, also once the token it got is revoked", async () => {
    const f = await setup();
    const fields = cc(assertionFields(await clientAssertion(KEY, "signer", f.clock.now)));
    const first = await accepted(f, await postToken(f.server, fields));
    await post(f.server, "/revoke", { token: first.access_token as string, ...assertionFields(await clientAssertion(KEY, "signer", f.clock.now)) });
    await refused(await postToken(f.server, fields), "replay");
    f.clock.advance(200);
    await refused(await postToken(f.server, fields), "replay, later");
    expect(f.events.filter((e) => e.type === "client_assertion.refused").map((e) => e.reason)).toEqual(["replay", "replay"]);
  });

  test("a replay race: of 20 concurrent uses of one assertion, one wins", async () => {
    const f = await setup();
    const fields = cc(assertionFields(await clientAssertion(KEY, "signer", f.clock.now)));
    const statuses = await Promise.all(Array.from({ length: 20 }, () => postToken(f.server, fields).then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 401)).toHaveLength(19);
  });

  test("one jti per client: another client may use the same jti", async () => {
    const f = await setup();
    await f.server.clients.register({
      client_id: "signer-2", name: "Second signer", type: "confidential", scopes: ["export"], grant_types: ["client_credentials"],
      token_endpoint_auth_method: "private_key_jwt", jwks: KEY.jwks,
    });
    await accepted(f, await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { jti: "shared" })))));
    const second = await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, "signer-2", f.clock.now, { jti: "shared" }))));
    expect(second.status).toBe(200);
  });

  test("a client with a secret cannot present an assertion, and a signing client has no secret to present", async () => {
    const f = await setup();
    await refused(await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, "backend", f.clock.now)))), "secret client");
    await refused(await postToken(f.server, cc({ client_id: "signer", client_secret: "anything-at-all-0123456789" })), "no secret");
    await refused(await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, "nobody", f.clock.now)))), "unknown client");
  });

  test("malformed requests: another assertion type, no assertion, an assertion naming no client", async () => {
    const f = await setup();
    const assertion = await clientAssertion(KEY, "signer", f.clock.now);
    await refused(await postToken(f.server, cc({ client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:saml2-bearer", client_assertion: assertion })), "type");
    await refused(await postToken(f.server, cc({ client_assertion_type: assertionFields("").client_assertion_type! })), "missing");
    await refused(await postToken(f.server, cc(assertionFields("not.a.jwt"))), "garbage");
    await refused(await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, "signer", f.clock.now, { sub: undefined })))), "no sub");
  });

  test("an assertion beside a secret is two methods: invalid_request", async () => {
    const f = await setup();
    const response = await postToken(f.server, cc({ client_id: "backend", client_secret: SECRETS.backend, ...assertionFields(await clientAssertion(KEY, "signer", f.clock.now)) }));
    expect(await errorOf(response)).toMatchObject({ status: 400, error: "invalid_request" });
  });

  test("a paused client's assertion is refused", async () => {
    const f = await setup();
    await f.server.clients.pause("signer");
    await refused(await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, "signer", f.clock.now)))), "paused");
  });
});

describe("the one door", () => {
  test("the metadata lists private_key_jwt and the algorithms it takes (RFC 8414 §2)", async () => {
    const f = await fixture();
    const metadata = f.server.metadata();
    expect(metadata.token_endpoint_auth_methods_supported).toContain("private_key_jwt");
    for (const endpoint of ["token_endpoint", "revocation_endpoint", "introspection_endpoint"]) {
      expect(metadata[`${endpoint}_auth_signing_alg_values_supported`]).toEqual(["ES256", "ES384", "EdDSA", "RS256", "PS256"]);
    }
  });

  const register = (f: Fixture, extra: Record<string, unknown>) =>
    f.server.clients.register({ client_id: "k", name: "K", type: "confidential", scopes: ["export"], grant_types: ["client_credentials"], ...extra } as never);

  test.each([
    ["a secret beside the keys", { token_endpoint_auth_method: "private_key_jwt", jwks: KEY.jwks, client_secret: "a-secret-of-enough-length" }, "client_secret"],
    ["neither jwks nor jwks_uri", { token_endpoint_auth_method: "private_key_jwt" }, "jwks"],
    ["both jwks and jwks_uri", { token_endpoint_auth_method: "private_key_jwt", jwks: KEY.jwks, jwks_uri: "https://k.example.com/jwks" }, "jwks"],
    ["keys without private_key_jwt", { jwks: KEY.jwks }, "jwks"],
    ["a private key in jwks", { token_endpoint_auth_method: "private_key_jwt", jwks: { keys: [{ ...KEY.publicJwk, d: "AAAA" }] } }, "jwks"],
    ["a jwks with no usable key", { token_endpoint_auth_method: "private_key_jwt", jwks: { keys: [{ kty: "oct", k: "c2VjcmV0" }] } }, "jwks"],
    ["a jwks_uri that is not a URL", { token_endpoint_auth_method: "private_key_jwt", jwks_uri: "keys.json" }, "jwks_uri"],
    ["an unknown method", { token_endpoint_auth_method: "client_secret_jwt" }, "token_endpoint_auth_method"],
    ["none for a confidential client", { token_endpoint_auth_method: "none" }, "token_endpoint_auth_method"],
  ])("refuses %s", async (_, extra, field) => {
    const f = await fixture();
    await expect(register(f, extra)).rejects.toMatchObject({ name: "AdmissionError", field });
  });

  test("refuses private_key_jwt for a public client, and a secret rotation for a signing client", async () => {
    const f = await setup();
    await expect(f.server.clients.register({ client_id: "p", name: "P", type: "public", scopes: ["read"], redirect_uris: ["https://p.example.com/cb"], token_endpoint_auth_method: "private_key_jwt", jwks: KEY.jwks }))
      .rejects.toMatchObject({ field: "token_endpoint_auth_method" });
    await expect(f.server.clients.rotateSecret("signer")).rejects.toThrow(/private_key_jwt/);
  });

  test("an operator's client may name an http jwks_uri on loopback; the record keeps the method and keys", async () => {
    const f = await fixture();
    const { client, client_secret } = await register(f, { token_endpoint_auth_method: "private_key_jwt", jwks_uri: "http://127.0.0.1:9/jwks" });
    expect(client_secret).toBeUndefined();
    expect(client.secret_hash).toBeUndefined();
    expect(client.metadata).toEqual({ token_endpoint_auth_method: "private_key_jwt", jwks_uri: "http://127.0.0.1:9/jwks" });
  });
});

describe("dynamic registration (RFC 7591 §2)", () => {
  const registration = (f: Fixture, body: Record<string, unknown>, token = "initial-access-token-0123456789") =>
    f.server.fetch(new Request(`${ISSUER}/register`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    }));
  const registering = () => fixture({ registration: { enabled: true, initialAccessToken: "initial-access-token-0123456789" } });

  test("registers a private_key_jwt client with inline keys, which then signs in with them", async () => {
    const f = await registering();
    const response = await registration(f, {
      client_name: "Agent", grant_types: ["client_credentials"], scope: "export", token_endpoint_auth_method: "private_key_jwt", jwks: KEY.jwks,
    });
    expect(response.status).toBe(201);
    const body = await response.json() as Record<string, unknown>;
    expect(body).toMatchObject({ token_endpoint_auth_method: "private_key_jwt", jwks: KEY.jwks });
    expect(body.client_secret).toBeUndefined();
    const issued = await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, body.client_id as string, f.clock.now))));
    expect(issued.status).toBe(200);
  });

  test.each([
    ["a jwks_uri on a private host", { jwks_uri: "https://127.0.0.1/jwks" }],
    ["an http jwks_uri", { jwks_uri: "http://keys.example.com/jwks" }],
    ["a private key", { jwks: { keys: [{ ...KEY.publicJwk, d: "AAAA" }] } }],
    ["no keys", {}],
  ])("refuses %s with invalid_client_metadata", async (_, extra) => {
    const f = await registering();
    const response = await registration(f, { client_name: "Agent", grant_types: ["client_credentials"], scope: "export", token_endpoint_auth_method: "private_key_jwt", ...extra });
    expect(await errorOf(response)).toMatchObject({ status: 400, error: "invalid_client_metadata" });
  });
});

describe("keys at a jwks_uri", () => {
  test("an operator's loopback jwks_uri: fetched once and cached; a new kid (a rotation) costs one refetch, at most every 30 s", async () => {
    let keys = [KEY];
    const host = await startServer((_, socket) => respond(socket, 200, { "content-type": "application/json", "cache-control": "max-age=600" }, JSON.stringify({ keys: keys.map((k) => k.publicJwk) })));
    try {
      const f = await fixture();
      await f.server.clients.register({
        client_id: "remote", name: "Remote keys", type: "confidential", scopes: ["export"], grant_types: ["client_credentials"],
        token_endpoint_auth_method: "private_key_jwt", jwks_uri: `${host.origin}/jwks`,
      });
      for (let i = 0; i < 3; i++) expect((await postToken(f.server, cc(assertionFields(await clientAssertion(KEY, "remote", f.clock.now))))).status).toBe(200);
      expect(host.requests).toHaveLength(1);
      const next = await testKey("EdDSA");
      keys = [KEY, next];
      // Within 30 s of the last fetch an unknown kid fetches nothing: a flood of made-up kids costs the host nothing.
      expect((await postToken(f.server, cc(assertionFields(await clientAssertion(next, "remote", f.clock.now))))).status).toBe(401);
      expect(host.requests).toHaveLength(1);
      f.clock.advance(31);
      expect((await postToken(f.server, cc(assertionFields(await clientAssertion(next, "remote", f.clock.now))))).status).toBe(200);
      expect((await postToken(f.server, cc(assertionFields(await clientAssertion(next, "remote", f.clock.now))))).status).toBe(200);
      expect(host.requests).toHaveLength(2);
    } finally {
      await host.close();
    }
  });

  test("a client metadata document may publish its keys and sign in with private_key_jwt at the token endpoint", async () => {
    const CLIENT_ID = "https://agent.example.com/oauth/client.json";
    const document = {
      client_id: CLIENT_ID, client_name: "Signing agent", redirect_uris: [LOOPBACK], grant_types: ["authorization_code"],
      token_endpoint_auth_method: "private_key_jwt", jwks_uri: "https://agent.example.com/oauth/jwks.json",
    };
    const fetched: string[] = [];
    const fetch = async (request: Request) => {
      fetched.push(request.url);
      return Response.json(request.url.endsWith("jwks.json") ? KEY.jwks : document);
    };
    const f = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch }, keySets: { fetch }, defaultScope: "read" });
    const authorize = await approve(f.server, { response_type: "code", client_id: CLIENT_ID, redirect_uri: LOOPBACK, scope: "read", state: "s" });
    const code = new URL(authorize.headers.get("location")!).searchParams.get("code")!;
    expect((await f.server.clients.get(CLIENT_ID))).toMatchObject({ type: "confidential", metadata: { token_endpoint_auth_method: "private_key_jwt" } });
    const redeem = await post(f.server, "/token", {
      grant_type: "authorization_code", code, redirect_uri: LOOPBACK, ...assertionFields(await clientAssertion(KEY, CLIENT_ID, f.clock.now)),
    });
    expect(redeem.status, await redeem.clone().text()).toBe(200);
    expect(fetched).toEqual([CLIENT_ID, document.jwks_uri]);
    const unsigned = await post(f.server, "/token", { grant_type: "authorization_code", code, redirect_uri: LOOPBACK, client_id: CLIENT_ID });
    expect((await errorOf(unsigned)).error).toBe("invalid_client");
  });

  test("a document's jwks_uri on a private host is refused with the document", async () => {
    const CLIENT_ID = "https://agent.example.com/oauth/client.json";
    const fetch = async () => Response.json({
      client_id: CLIENT_ID, client_name: "Agent", redirect_uris: [LOOPBACK], token_endpoint_auth_method: "private_key_jwt", jwks_uri: "https://169.254.169.254/keys",
    });
    const f = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch }, defaultScope: "read" });
    const authorize = await approve(f.server, { response_type: "code", client_id: CLIENT_ID, redirect_uri: LOOPBACK, scope: "read", state: "s" });
    expect(authorize.status).toBe(400);
    expect(await authorize.text()).toMatch(/jwks_uri/);
  });
});
