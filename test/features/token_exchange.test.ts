// Token exchange (RFC 8693), opt-in: a service trades a user's access token (opaque or JWT) or a trusted issuer's
// JWT for a token of its own, for the audience it names, never wider in scope; an actor token makes a delegation,
// shown as act (§4.1) in JWT access tokens and in introspection, nested over an earlier actor. Refused: a revoked
// or expired subject token and what the policy hook forbids (invalid_request, §2.2.2), a wider scope
// (invalid_scope), a client without the grant (unauthorized_client).
import * as jose from "jose";
import { describe, expect, test } from "vitest";
import type { AuditEvent, AuthorizationServer, AuthorizationServerOptions } from "../../mod.ts";
import { errorOf, type Fixture, SECRETS } from "../helpers.ts";
import { ACCESS_TOKEN_TYPE, idJag, JWT_BEARER, JWT_TOKEN_TYPE, testKey, TOKEN_EXCHANGE, workloadJwt } from "../identity_helpers.ts";
import { codeFlow, MCP, mcpFixture, OTHER_RESOURCE, post } from "../mcp_helpers.ts";

const GATEWAY_SECRET = "gateway-secret-0123456789abcdef";
const PLATFORM = "https://kubernetes.default.svc";
const IDP = "https://idp.example.com";
const PLATFORM_KEY = await testKey("ES256");
const IDP_KEY = await testKey("ES256");

async function setup(overrides: Partial<AuthorizationServerOptions> = {}): Promise<Fixture & { events: AuditEvent[] }> {
  const events: AuditEvent[] = [];
  const f = await mcpFixture({
    tokenExchange: { enabled: true },
    onEvent: (event) => events.push(event),
    trustedIssuers: [
      { issuer: PLATFORM, jwks: PLATFORM_KEY.jwks, kind: "workload", clients: ["gateway"], scopes: ["export", "read"] },
      { issuer: IDP, jwks: IDP_KEY.jwks, kind: "id-jag", clients: ["gateway"], scopes: ["read"] },
    ],
    linkUser: ({ email }) => (email === "alice@example.com" ? "alice" : null),
    ...overrides,
  });
  await f.server.clients.register({
    client_id: "gateway", client_secret: GATEWAY_SECRET, name: "API gateway", type: "confidential",
    scopes: ["read", "write", "export"], grant_types: [TOKEN_EXCHANGE, "client_credentials", JWT_BEARER],
  });
  await f.server.clients.register({
    client_id: "rs", client_secret: SECRETS.other, name: "Resource server", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"], introspection: "all",
  });
  return { ...f, events };
}

const gateway = { client_id: "gateway", client_secret: GATEWAY_SECRET };
const exchange = (server: AuthorizationServer, fields: Record<string, string>, auth: Record<string, string> = gateway) =>
  post(server, "/token", { grant_type: TOKEN_EXCHANGE, ...auth, ...fields });

/** Alice's access token for the MCP resource, scope "read write", from the code flow of the public client `cli`. */
async function aliceToken(server: AuthorizationServer): Promise<string> {
  const { status, body } = await codeFlow(server, { scope: "read write", resource: MCP });
  expect(status).toBe(200);
  return body.access_token as string;
}

async function gatewayToken(server: AuthorizationServer): Promise<string> {
  const response = await post(server, "/token", { grant_type: "client_credentials", scope: "read", ...gateway });
  return ((await response.json()) as { access_token: string }).access_token;
}

const introspect = async (server: AuthorizationServer, token: string) =>
  (await (await post(server, "/introspect", { token, client_id: "rs", client_secret: SECRETS.other })).json()) as Record<string, unknown>;

async function exchanged(response: Response): Promise<Record<string, unknown>> {
  expect(response.status, await response.clone().text()).toBe(200);
  expect(response.headers.get("cache-control")).toBe("no-store");
  const body = await response.json() as Record<string, unknown>;
  expect(body).toMatchObject({ token_type: "Bearer", issued_token_type: ACCESS_TOKEN_TYPE });
  expect(body.refresh_token).toBeUndefined();
  return body;
}

describe("an exchange of this server's access token", () => {
  test("impersonation: the gateway gets a token for Alice, same scope and audience, no act", async () => {
    const f = await setup();
    const body = await exchanged(await exchange(f.server, { subject_token: await aliceToken(f.server), subject_token_type: ACCESS_TOKEN_TYPE }));
    expect(body.scope).toBe("read write");
    const info = await introspect(f.server, body.access_token as string);
    expect(info).toMatchObject({ active: true, sub: "alice", client_id: "gateway", scope: "read write", aud: MCP });
    expect(info.act).toBeUndefined();
    expect(f.events.filter((e) => e.type === "token.exchanged")).toEqual([expect.objectContaining({ client_id: "gateway", user_id: "alice", reason: "impersonation" })]);
  });

  test("delegation: with the gateway's own token as actor, the new token names it in act, in introspection and in the JWT", async () => {
    const f = await setup({ accessTokenFormat: "jwt" });
    const body = await exchanged(await exchange(f.server, {
      subject_token: await aliceToken(f.server), subject_token_type: ACCESS_TOKEN_TYPE,
      actor_token: await gatewayToken(f.server), actor_token_type: ACCESS_TOKEN_TYPE,
      resource: OTHER_RESOURCE, scope: "read",
    }));
    const claims = jose.decodeJwt(body.access_token as string);
    expect(claims).toMatchObject({ sub: "alice", client_id: "gateway", aud: OTHER_RESOURCE, scope: "read", act: { sub: "gateway" } });
    expect(await introspect(f.server, body.access_token as string)).toMatchObject({ active: true, sub: "alice", act: { sub: "gateway" } });
    expect(f.events.filter((e) => e.type === "token.exchanged").map((e) => e.reason)).toEqual(["delegation"]);
  });

  test("a delegated token exchanged again with another actor nests the earlier actor (RFC 8693 §4.1)", async () => {
    const f = await setup();
    await f.server.clients.register({
      client_id: "worker", client_secret: "worker-secret-0123456789abcdef", name: "Worker", type: "confidential", scopes: ["read"],
      grant_types: [TOKEN_EXCHANGE, "client_credentials"],
    });
    const first = await exchanged(await exchange(f.server, {
      subject_token: await aliceToken(f.server), subject_token_type: ACCESS_TOKEN_TYPE,
      actor_token: await gatewayToken(f.server), actor_token_type: ACCESS_TOKEN_TYPE,
    }));
    const worker = { client_id: "worker", client_secret: "worker-secret-0123456789abcdef" };
    const workerToken = ((await (await post(f.server, "/token", { grant_type: "client_credentials", scope: "read", ...worker })).json()) as { access_token: string }).access_token;
    const second = await exchanged(await exchange(f.server, {
      subject_token: first.access_token as string, subject_token_type: ACCESS_TOKEN_TYPE, actor_token: workerToken, actor_token_type: ACCESS_TOKEN_TYPE, scope: "read",
    }, worker));
    expect((await introspect(f.server, second.access_token as string)).act).toEqual({ sub: "worker", act: { sub: "gateway" } });
  });

  test("a JWT access token may be presented as an access token or as a JWT", async () => {
    const f = await setup({ accessTokenFormat: "jwt" });
    for (const type of [ACCESS_TOKEN_TYPE, JWT_TOKEN_TYPE]) {
      const body = await exchanged(await exchange(f.server, { subject_token: await aliceToken(f.server), subject_token_type: type }));
      expect(jose.decodeJwt(body.access_token as string)).toMatchObject({ sub: "alice", client_id: "gateway" });
    }
  });

  test("audience and resource select the target; a target this server does not know is invalid_target", async () => {
    const f = await setup();
    const subject = await aliceToken(f.server);
    const to = async (fields: Record<string, string>) => exchange(f.server, { subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE, ...fields });
    expect((await introspect(f.server, (await exchanged(await to({ audience: OTHER_RESOURCE }))).access_token as string)).aud).toBe(OTHER_RESOURCE);
    expect((await introspect(f.server, (await exchanged(await to({ resource: OTHER_RESOURCE, audience: OTHER_RESOURCE }))).access_token as string)).aud).toBe(OTHER_RESOURCE);
    expect(await errorOf(await to({ resource: OTHER_RESOURCE, audience: MCP }))).toMatchObject({ error: "invalid_target" });
    expect(await errorOf(await to({ audience: "https://unknown.example.com/api" }))).toMatchObject({ error: "invalid_target" });
  });

  test("the scope only narrows: a scope the subject token lacks is invalid_scope", async () => {
    const f = await setup();
    const subject = await aliceToken(f.server);
    const narrowed = await exchanged(await exchange(f.server, { subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE, scope: "read" }));
    expect(narrowed.scope).toBe("read");
    const wider = await exchange(f.server, { subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE, scope: "read export" });
    expect(await errorOf(wider)).toMatchObject({ status: 400, error: "invalid_scope" });
    expect(f.events.filter((e) => e.type === "token_exchange.refused").map((e) => e.reason)).toEqual(["scope"]);
  });

  test("refused with invalid_request (RFC 8693 §2.2.2): a revoked subject token, an expired one, one whose client is paused, an unknown one", async () => {
    const f = await setup();
    const revoked = await aliceToken(f.server);
    await post(f.server, "/revoke", { token: revoked, client_id: "cli" });
    const expired = await aliceToken(f.server);
    const paused = await gatewayToken(f.server);
    const refuse = async (token: string, label: string) =>
      expect(await errorOf(await exchange(f.server, { subject_token: token, subject_token_type: ACCESS_TOKEN_TYPE })), label).toMatchObject({ status: 400, error: "invalid_request" });
    await refuse(revoked, "revoked");
    await refuse("not-a-token-of-this-server", "unknown");
    await f.server.clients.register({ client_id: "other-gw", client_secret: GATEWAY_SECRET, name: "Other", type: "confidential", scopes: ["read"], grant_types: [TOKEN_EXCHANGE] });
    await f.server.clients.pause("gateway");
    const byOther = await exchange(f.server, { subject_token: paused, subject_token_type: ACCESS_TOKEN_TYPE }, { client_id: "other-gw", client_secret: GATEWAY_SECRET });
    expect(await errorOf(byOther), "paused").toMatchObject({ error: "invalid_request" });
    await f.server.clients.resume("gateway");
    f.clock.advance(3601);
    await refuse(expired, "expired");
  });

  test("revoking the subject's grant revokes the exchanged token with it", async () => {
    const f = await setup();
    const { body } = await codeFlow(f.server, { scope: "read", resource: MCP });
    const issued = await exchanged(await exchange(f.server, { subject_token: body.access_token as string, subject_token_type: ACCESS_TOKEN_TYPE }));
    await post(f.server, "/revoke", { token: body.refresh_token as string, client_id: "cli" });
    expect(await introspect(f.server, issued.access_token as string)).toEqual({ active: false });
  });

  test("a client without the grant gets unauthorized_client; a public client cannot authenticate for it", async () => {
    const f = await setup();
    const subject = await aliceToken(f.server);
    const other = await exchange(f.server, { subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE }, { client_id: "backend", client_secret: SECRETS.backend });
    expect(await errorOf(other)).toMatchObject({ status: 400, error: "unauthorized_client" });
    const open = await exchange(f.server, { subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE }, { client_id: "cli" });
    expect(await errorOf(open)).toMatchObject({ status: 401, error: "invalid_client" });
  });

  test("the policy hook decides who may exchange what; false is invalid_request (RFC 8693 §2.2.2)", async () => {
    const seen: unknown[] = [];
    const f = await setup({
      tokenExchange: {
        enabled: true,
        policy: (request) => {
          seen.push({ client: request.client.client_id, subject: request.subject, actor: request.actor, scope: request.scope, resource: request.resource });
          return request.resource?.[0] !== OTHER_RESOURCE;
        },
      },
    });
    const subject = await aliceToken(f.server);
    await exchanged(await exchange(f.server, { subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE, scope: "read" }));
    const denied = await exchange(f.server, { subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE, resource: OTHER_RESOURCE });
    expect(await errorOf(denied)).toMatchObject({ error: "invalid_request" });
    expect(seen[0]).toEqual({
      client: "gateway", subject: { issuer: "https://auth.example.com", subject: "alice", client_id: "cli", scope: "read write" }, actor: undefined, scope: "read", resource: [MCP],
    });
    expect(f.events.filter((e) => e.type === "token_exchange.refused").map((e) => e.reason)).toEqual(["policy"]);
  });

  test.each([
    ["no subject_token", { subject_token_type: ACCESS_TOKEN_TYPE }],
    ["no subject_token_type", { subject_token: "x" }],
    ["an unsupported subject_token_type", { subject_token: "x", subject_token_type: "urn:ietf:params:oauth:token-type:saml2" }],
    ["a requested_token_type other than an access token", { subject_token: "x", subject_token_type: ACCESS_TOKEN_TYPE, requested_token_type: "urn:ietf:params:oauth:token-type:refresh_token" }],
    ["an actor_token_type without an actor_token", { subject_token: "x", subject_token_type: ACCESS_TOKEN_TYPE, actor_token_type: ACCESS_TOKEN_TYPE }],
  ])("%s is invalid_request", async (_, fields) => {
    const f = await setup();
    expect(await errorOf(await exchange(f.server, fields))).toMatchObject({ status: 400, error: "invalid_request" });
  });
});

describe("an exchange of a trusted issuer's JWT", () => {
  test("a workload's JWT becomes a token for the workload, within the issuer's scopes", async () => {
    const f = await setup();
    const body = await exchanged(await exchange(f.server, { subject_token: await workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now), subject_token_type: JWT_TOKEN_TYPE, scope: "export" }));
    expect(await introspect(f.server, body.access_token as string)).toMatchObject({ sub: "system:serviceaccount:prod:billing", client_id: "gateway", scope: "export" });
    const wider = await exchange(f.server, { subject_token: await workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now), subject_token_type: JWT_TOKEN_TYPE, scope: "write" });
    expect(await errorOf(wider)).toMatchObject({ error: "invalid_scope" });
  });

  test("an ID-JAG as subject: its user, its jti spent once; as actor of a user's token it is named with its issuer", async () => {
    const f = await setup();
    const jag = await idJag(IDP_KEY, IDP, "gateway", f.clock.now, { scope: "read" });
    const body = await exchanged(await exchange(f.server, { subject_token: jag, subject_token_type: JWT_TOKEN_TYPE }));
    expect(await introspect(f.server, body.access_token as string)).toMatchObject({ sub: "alice", scope: "read" });
    expect(await errorOf(await exchange(f.server, { subject_token: jag, subject_token_type: JWT_TOKEN_TYPE }))).toMatchObject({ error: "invalid_request" });
    const delegated = await exchanged(await exchange(f.server, {
      subject_token: await aliceToken(f.server), subject_token_type: ACCESS_TOKEN_TYPE, scope: "read",
      actor_token: await workloadJwt(PLATFORM_KEY, PLATFORM, f.clock.now), actor_token_type: JWT_TOKEN_TYPE,
    }));
    expect((await introspect(f.server, delegated.access_token as string)).act).toEqual({ sub: "system:serviceaccount:prod:billing", iss: PLATFORM });
  });

  test("an untrusted issuer's JWT, or a trusted one signed with another key, is invalid_request", async () => {
    const f = await setup();
    const rogue = await testKey("ES256", PLATFORM_KEY.kid);
    for (const token of [await workloadJwt(PLATFORM_KEY, "https://rogue.example.com", f.clock.now), await workloadJwt(rogue, PLATFORM, f.clock.now)]) {
      expect(await errorOf(await exchange(f.server, { subject_token: token, subject_token_type: JWT_TOKEN_TYPE, scope: "export" }))).toMatchObject({ error: "invalid_request" });
    }
    expect(f.events.filter((e) => e.type === "token_exchange.refused").map((e) => e.reason)).toEqual(["subject_unknown_issuer", "subject_signature"]);
  });
});

describe("opt-in", () => {
  test("off by default: the grant is neither served nor announced, and no client may have it", async () => {
    const f = await mcpFixture();
    expect(f.server.metadata().grant_types_supported).not.toContain(TOKEN_EXCHANGE);
    expect(await errorOf(await post(f.server, "/token", { grant_type: TOKEN_EXCHANGE, client_id: "cli" }))).toMatchObject({ error: "unsupported_grant_type" });
    await expect(f.server.clients.register({ client_id: "g", name: "G", type: "confidential", scopes: ["read"], grant_types: [TOKEN_EXCHANGE] }))
      .rejects.toMatchObject({ field: "grant_types" });
    expect((await setup()).server.metadata().grant_types_supported).toContain(TOKEN_EXCHANGE);
  });
});
