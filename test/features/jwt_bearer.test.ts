// The jwt-bearer grant (RFC 7523 §2.1) for trusted issuers: an identity assertion (ID-JAG,
// draft-ietf-oauth-identity-assertion-authz-grant §4.4) becomes a token for the user linked by the linkUser hook;
// a workload's platform JWT (MCP SEP-1933) a token for the workload. Every refusal is invalid_grant (or
// unauthorized_client, invalid_scope, invalid_target where those say it better) and an audit event.
import { describe, expect, test } from "vitest";
import type { AuditEvent, AuthorizationServerOptions } from "../../mod.ts";
import { type AuthorizationServer } from "../../mod.ts";
import { errorOf, fixture, type Fixture, ISSUER, SECRETS } from "../helpers.ts";
import { idJag, JWT_BEARER, seconds, testKey, type TestKey, workloadJwt } from "../identity_helpers.ts";
import { MCP, OTHER_RESOURCE, post } from "../mcp_helpers.ts";

const IDP = "https://idp.example.com";
const PLATFORM = "https://kubernetes.default.svc";
const IDP_KEY = await testKey("RS256");
const PLATFORM_KEY = await testKey("ES256");
const ROGUE = await testKey("RS256", IDP_KEY.kid);
const AGENT_SECRET = "agent-secret-0123456789abcdef";

/** A server trusting the IdP (for `agent`) and the platform (for `billing`), linking users by email. */
async function setup(overrides: Partial<AuthorizationServerOptions> = {}): Promise<Fixture & { events: AuditEvent[] }> {
  const events: AuditEvent[] = [];
  const f = await fixture({
    profile: "rfc6749",
    resources: [MCP, OTHER_RESOURCE],
    onEvent: (event) => events.push(event),
    trustedIssuers: [
      { issuer: IDP, jwks: IDP_KEY.jwks, kind: "id-jag", clients: ["agent"], scopes: ["read", "write"] },
      { issuer: PLATFORM, jwks: PLATFORM_KEY.jwks, kind: "workload", clients: ["billing", "agent"], scopes: ["export", "read"] },
    ],
    linkUser: ({ email }) => (email === "alice@example.com" ? "alice" : null),
    ...overrides,
  });
  await f.server.clients.register({
    client_id: "agent", client_secret: AGENT_SECRET, name: "Agent", type: "confidential", scopes: ["read", "write", "export"], grant_types: [JWT_BEARER],
  });
  await f.server.clients.register({ client_id: "billing", name: "Billing workload", type: "public", scopes: ["export", "read"], grant_types: [JWT_BEARER] });
  await f.server.clients.register({ client_id: "rs", client_secret: SECRETS.other, name: "Resource server", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"], introspection: "all" });
  await f.server.clients.register({ client_id: "intruder", name: "Public agent", type: "public", scopes: ["read"], grant_types: [JWT_BEARER] });
  return { ...f, events };
}

/** POSTs to the clean token path (the rfc6749 profile serves no spec addresses). */
const postToken = (server: AuthorizationServer, fields: Record<string, string>) => post(server, "/token", fields);

const agent = (assertion: string, extra: Record<string, string> = {}) =>
  ({ grant_type: JWT_BEARER, assertion, client_id: "agent", client_secret: AGENT_SECRET, ...extra });
const workload = (assertion: string, extra: Record<string, string> = {}) => ({ grant_type: JWT_BEARER, assertion, client_id: "billing", ...extra });

async function issued(f: Fixture, response: Response): Promise<{ body: Record<string, unknown>; introspection: Record<string, unknown> }> {
  expect(response.status, await response.clone().text()).toBe(200);
  const body = await response.json() as Record<string, unknown>;
  expect(body.refresh_token).toBeUndefined();
  const introspection = await (await post(f.server, "/introspect", { token: body.access_token as string, client_id: "rs", client_secret: SECRETS.other })).json();
  return { body, introspection: introspection as Record<string, unknown> };
}

async function refused(f: Fixture & { events: AuditEvent[] }, response: Response, error: string, reason: string): Promise<void> {
  expect(await errorOf(response), reason).toMatchObject({ status: 400, error });
  expect(f.events.filter((e) => e.type === "assertion.refused").map((e) => e.reason), reason).toEqual([reason]);
  expect(f.events.filter((e) => e.type === "assertion.accepted")).toEqual([]);
}

describe("an identity assertion (ID-JAG)", () => {
  test("becomes a token for the linked user, its scope and resource from the assertion, without a refresh token", async () => {
    const f = await setup();
    const { body, introspection } = await issued(f, await postToken(f.server, agent(await idJag(IDP_KEY, IDP, "agent", f.clock.now, { scope: "read", resource: MCP }))));
    expect(body).toMatchObject({ token_type: "Bearer", scope: "read" });
    expect(introspection).toMatchObject({ active: true, sub: "alice", client_id: "agent", scope: "read", aud: MCP });
    expect(f.events.filter((e) => e.type === "assertion.accepted")).toEqual([expect.objectContaining({ client_id: "agent", user_id: "alice", reason: "id-jag" })]);
  });

  test("the scope is within the issuer's, the client's and the assertion's; a request may narrow it", async () => {
    const f = await setup();
    const jag = (claims: Record<string, unknown>) => idJag(IDP_KEY, IDP, "agent", f.clock.now, claims);
    // The assertion offers read, write and export; the issuer grants at most read and write.
    expect((await issued(f, await postToken(f.server, agent(await jag({ scope: "read write export" }))))).body.scope).toBe("read write");
    expect((await issued(f, await postToken(f.server, agent(await jag({ scope: "read write" }), { scope: "write" })))).body.scope).toBe("write");
    expect((await issued(f, await postToken(f.server, agent(await jag({})) ))).body.scope).toBe("read write");
    const wider = await postToken(f.server, agent(await jag({ scope: "read" }), { scope: "write" }));
    expect(await errorOf(wider)).toMatchObject({ status: 400, error: "invalid_scope" });
  });

  test("a resource asked for must be among the assertion's, and known here", async () => {
    const f = await setup();
    const jag = () => idJag(IDP_KEY, IDP, "agent", f.clock.now, { scope: "read", resource: [MCP] });
    expect((await issued(f, await postToken(f.server, agent(await jag(), { resource: MCP })))).introspection.aud).toBe(MCP);
    expect(await errorOf(await postToken(f.server, agent(await jag(), { resource: OTHER_RESOURCE })))).toMatchObject({ error: "invalid_target" });
    const unknown = await idJag(IDP_KEY, IDP, "agent", f.clock.now, { scope: "read", resource: "https://elsewhere.example.com/api" });
    expect(await errorOf(await postToken(f.server, agent(unknown)))).toMatchObject({ error: "invalid_target" });
  });

  const REFUSALS: [string, string, (f: Fixture) => Promise<string>][] = [
    ["an unknown issuer", "unknown_issuer", (f) => idJag(IDP_KEY, "https://other-idp.example.com", "agent", f.clock.now)],
    ["typ JWT", "typ", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, {}, { typ: "JWT" })],
    ["no typ", "typ", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, {}, { typ: undefined })],
    ["another aud", "audience", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, { aud: "https://other-as.example.com" })],
    ["the token endpoint as aud (an ID-JAG names the issuer)", "audience", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, { aud: `${ISSUER}/token` })],
    ["this server and another as aud", "audience", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, { aud: [ISSUER, "https://other-as.example.com"] })],
    ["client_id another client", "client_mismatch", (f) => idJag(IDP_KEY, IDP, "billing", f.clock.now)],
    ["an expired assertion", "expired", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, { iat: seconds(f.clock.now) - 600, exp: seconds(f.clock.now) - 60 })],
    ["a lifetime of two hours", "lifetime", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, { exp: seconds(f.clock.now) + 7200 })],
    ["another key under the IdP's kid", "signature", (f) => idJag(ROGUE, IDP, "agent", f.clock.now)],
    ["a kid the IdP does not publish", "unknown_key", (f) => idJag({ ...IDP_KEY, kid: "rotated-away" } as TestKey, IDP, "agent", f.clock.now)],
    ["the platform's key (no key of the IdP's fits ES256)", "unknown_key", (f) => idJag({ ...PLATFORM_KEY, kid: IDP_KEY.kid }, IDP, "agent", f.clock.now)],
    ["no jti", "claims", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, { jti: undefined })],
    ["no client_id", "claims", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, { client_id: undefined })],
    ["a user nobody here is", "unknown_user", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, { email: "mallory@example.com" })],
    ["an email the IdP says is unverified", "unknown_user", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, { email_verified: false })],
    ["no email", "unknown_user", (f) => idJag(IDP_KEY, IDP, "agent", f.clock.now, { email: undefined })],
    ["not a JWT", "unknown_issuer", async () => "not-a-jwt"],
  ];
  test.each(REFUSALS)("refuses %s with invalid_grant", async (_, reason, make) => {
    const f = await setup();
    await refused(f, await postToken(f.server, agent(await make(f))), "invalid_grant", reason);
  });

  test("refuses a replay, across the refusal of a request that asked too much (the jti is spent last)", async () => {
    const f = await setup();
    const jag = await idJag(IDP_KEY, IDP, "agent", f.clock.now, { scope: "read" });
    expect(await errorOf(await postToken(f.server, agent(jag, { scope: "write" })))).toMatchObject({ error: "invalid_scope" });
    await issued(f, await postToken(f.server, agent(jag)));
    f.events.length = 0;
    await refused(f, await postToken(f.server, agent(jag)), "invalid_grant", "replay");
  });

  test("of 20 concurrent presentations of one ID-JAG, one gets a token", async () => {
    const f = await setup();
    const jag = await idJag(IDP_KEY, IDP, "agent", f.clock.now);
    const statuses = await Promise.all(Array.from({ length: 20 }, () => postToken(f.server, agent(jag)).then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
  });

  test("needs a confidential client: a public one gets unauthorized_client; a client not listed for the issuer, invalid_grant", async () => {
    const f = await setup({
      trustedIssuers: [{ issuer: IDP, jwks: IDP_KEY.jwks, kind: "id-jag", clients: ["agent", "intruder"], scopes: ["read"] }],
    });
    const response = await postToken(f.server, { grant_type: JWT_BEARER, assertion: await idJag(IDP_KEY, IDP, "intruder", f.clock.now), client_id: "intruder" });
    expect(await errorOf(response)).toMatchObject({ status: 400, error: "unauthorized_client" });
    const g = await setup();
    await g.server.clients.register({ client_id: "other-agent", client_secret: AGENT_SECRET, name: "Other", type: "confidential", scopes: ["read"], grant_types: [JWT_BEARER] });
    const unlisted = await postToken(g.server, { grant_type: JWT_BEARER, assertion: await idJag(IDP_KEY, IDP, "other-agent", g.clock.now), client_id: "other-agent", client_secret: AGENT_SECRET });
    await refused(g, unlisted, "invalid_grant", "client_mismatch");
  });

  test("without a linkUser hook, every identity assertion is refused: unknown user", async () => {
    const f = await setup({ linkUser: undefined } as never);
    await refused(f, await postToken(f.server, agent(await idJag(IDP_KEY, IDP, "agent", f.clock.now))), "invalid_grant", "unknown_user");
  });

  test("a client that authenticates wrongly gets invalid_client, before its assertion is looked at", async () => {
    const f = await setup();
    const response = await postToken(f.server, agent(await idJag(IDP_KEY, IDP, "agent", f.clock.now), { client_secret: "wrong-secret-0123456789" }));
    expect(await errorOf(response)).toMatchObject({ status: 401, error: "invalid_client" });
    expect(f.events.filter((e) => e.type.startsWith("assertion."))).toEqual([]);
  });
});

describe("a workload's platform JWT", () => {
  test("becomes a token for the workload, for a client with no secret (SEP-1933: method none)", async () => {
    const f = await setup();
    const { body, introspection } = await issued(f, await postToken(f.server, workload(await workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now), { scope: "export" })));
    expect(body.scope).toBe("export");
    expect(introspection).toMatchObject({ active: true, sub: "system:serviceaccount:prod:billing", client_id: "billing" });
    expect(f.events.filter((e) => e.type === "assertion.accepted")).toEqual([expect.objectContaining({ client_id: "billing", reason: "workload" })]);
  });

  test("may be presented again: a platform token is reused until the platform rotates it", async () => {
    const f = await setup();
    const jwt = await workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now, { jti: "k8s-token-1" });
    await issued(f, await postToken(f.server, workload(jwt, { scope: "export" })));
    await issued(f, await postToken(f.server, workload(jwt, { scope: "export" })));
  });

  test("aud: the issuer, or the URL it is sent to, or an audience the operator lists", async () => {
    const f = await setup();
    await issued(f, await post(f.server, "/token", workload(await workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now, { aud: `${ISSUER}/token` }), { scope: "export" })));
    const g = await setup({
      trustedIssuers: [{ issuer: PLATFORM, jwks: PLATFORM_KEY.jwks, kind: "workload", clients: ["billing"], scopes: ["export"], audiences: ["sts.example.com"] }],
    });
    await issued(g, await postToken(g.server, workload(await workloadJwt(PLATFORM_KEY, PLATFORM, g.clock.now, { aud: ["sts.example.com", "api"] }), { scope: "export" })));
    g.events.length = 0;
    await refused(g, await postToken(g.server, workload(await workloadJwt(PLATFORM_KEY, PLATFORM, g.clock.now), { scope: "export" })), "invalid_grant", "audience");
  });

  const REFUSALS: [string, string, (f: Fixture) => Promise<string>][] = [
    ["another aud", "audience", (f) => workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now, { aud: "https://vault.example.com" })],
    ["typ at+jwt (an access token)", "typ", (f) => workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now, {}, { typ: "at+jwt" })],
    ["typ oauth-id-jag+jwt", "typ", (f) => workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now, {}, { typ: "oauth-id-jag+jwt" })],
    ["an expired token", "expired", (f) => workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now, { iat: seconds(f.clock.now) - 7200, exp: seconds(f.clock.now) - 3600 })],
    ["a lifetime of two days", "lifetime", (f) => workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now, { exp: seconds(f.clock.now) + 172_800 })],
    ["the IdP's key (no key of the platform's fits RS256)", "unknown_key", (f) => workloadJwt({ ...IDP_KEY, kid: PLATFORM_KEY.kid, alg: "RS256" }, PLATFORM, f.clock.now)],
    ["no sub", "claims", (f) => workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now, { sub: undefined })],
  ];
  test.each(REFUSALS)("refuses %s with invalid_grant", async (_, reason, make) => {
    const f = await setup();
    await refused(f, await postToken(f.server, workload(await make(f), { scope: "export" })), "invalid_grant", reason);
  });

  test("a client the issuer does not list is refused; a scope beyond the issuer's is invalid_scope", async () => {
    const f = await setup();
    await f.server.clients.register({ client_id: "stranger", name: "Stranger", type: "public", scopes: ["export"], grant_types: [JWT_BEARER] });
    const response = await postToken(f.server, { grant_type: JWT_BEARER, assertion: await workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now), client_id: "stranger", scope: "export" });
    await refused(f, response, "invalid_grant", "client_mismatch");
    const g = await setup();
    await g.server.clients.register({ client_id: "billing", name: "Billing", type: "public", scopes: ["export", "write"], grant_types: [JWT_BEARER] });
    const wide = await postToken(g.server, workload(await workloadJwt(PLATFORM_KEY, PLATFORM, g.clock.now), { scope: "write" }));
    expect(await errorOf(wide)).toMatchObject({ error: "invalid_scope" });
  });
});

describe("the grant at the token endpoint and in the metadata", () => {
  test("no assertion is invalid_request; a client without the grant is unauthorized_client", async () => {
    const f = await setup();
    expect(await errorOf(await postToken(f.server, { grant_type: JWT_BEARER, client_id: "billing" }))).toMatchObject({ error: "invalid_request" });
    const other = await postToken(f.server, { grant_type: JWT_BEARER, assertion: await workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now), client_id: "backend", client_secret: SECRETS.backend });
    expect(await errorOf(other)).toMatchObject({ error: "unauthorized_client" });
  });

  test("the grant and the ID-JAG profile are announced only with trusted issuers", async () => {
    const f = await setup();
    expect(f.server.metadata().grant_types_supported).toContain(JWT_BEARER);
    expect(f.server.metadata().authorization_grant_profiles_supported).toEqual(["urn:ietf:params:oauth:grant-profile:id-jag"]);
    const plain = await fixture();
    expect(plain.server.metadata().grant_types_supported).not.toContain(JWT_BEARER);
    expect(plain.server.metadata().authorization_grant_profiles_supported).toBeUndefined();
    expect(await errorOf(await postToken(plain.server, { grant_type: JWT_BEARER, assertion: "x", client_id: "spa" }))).toMatchObject({ error: "unsupported_grant_type" });
    const workloads = await setup({ trustedIssuers: [{ issuer: PLATFORM, jwks: PLATFORM_KEY.jwks, kind: "workload", clients: ["billing"], scopes: ["export"] }] });
    expect(workloads.server.metadata().authorization_grant_profiles_supported).toBeUndefined();
  });

  test("open registration never admits the grant: it needs the operator (or the initial access token)", async () => {
    const f = await setup({ registration: { enabled: true } });
    const response = await f.server.fetch(new Request(`${ISSUER}/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "Self-made agent", grant_types: [JWT_BEARER], scope: "read", token_endpoint_auth_method: "client_secret_basic" }),
    }));
    expect(await errorOf(response)).toMatchObject({ status: 400, error: "invalid_client_metadata" });
  });

  test.each([
    ["both keys", { issuer: IDP, jwks: IDP_KEY.jwks, jwksUri: "https://idp.example.com/jwks" }, "trustedIssuers[0].jwks"],
    ["no keys", { issuer: IDP }, "trustedIssuers[0].jwks"],
    ["a private key", { issuer: IDP, jwks: { keys: [{ ...IDP_KEY.publicJwk, d: "AAAA" }] } }, "trustedIssuers[0].jwks"],
    ["an issuer that is not a URL", { issuer: "idp", jwks: IDP_KEY.jwks }, "trustedIssuers[0].issuer"],
    ["an unknown scope", { issuer: IDP, jwks: IDP_KEY.jwks, scopes: ["nope"] }, "trustedIssuers[0].scopes"],
    ["audiences for an identity provider", { issuer: IDP, jwks: IDP_KEY.jwks, audiences: ["x"] }, "trustedIssuers[0].audiences"],
    ["a jwks_uri that is not a URL", { issuer: IDP, jwksUri: "jwks.json" }, "trustedIssuers[0].jwksUri"],
  ])("a trusted issuer with %s is a configuration error", async (_, entry, option) => {
    await expect(fixture({ trustedIssuers: [{ kind: "id-jag", clients: ["agent"], scopes: ["read"], ...entry } as never] })).rejects.toMatchObject({ option });
  });
});
