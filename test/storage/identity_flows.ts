/**
 * The machine-identity flows on one store, through the handler: a private_key_jwt client's token and its
 * replay, an identity assertion (ID-JAG) for Alice and its replay, a workload JWT, and token exchange with an
 * actor into an opaque and a JWT access token. Used by identity_stores.test.ts (memory, SQLite: every runtime) and
 * identity_databases.test.ts (PostgreSQL, Redis: Node 22), so each store runs the same assertions.
 *
 * `persists` says whether the store keeps a token record's optional `act` and `auth_time` (memory and Redis do;
 * SQLite and PostgreSQL from schema migration 4 on). Where it does not, the two assertions that read them back
 * from the store expect them absent, so the day migration 4 lands they fail and ask for the flag to be flipped.
 */
import * as jose from "jose";
import { expect, test } from "vitest";
import type { Storage } from "../../mod.ts";
import { SECRETS } from "../helpers.ts";
import { ACCESS_TOKEN_TYPE, clientAssertion, CLIENT_ASSERTION_TYPE, idJag, JWT_BEARER, testKey, TOKEN_EXCHANGE, workloadJwt } from "../identity_helpers.ts";
import { codeFlow, MCP, mcpFixture, post } from "../mcp_helpers.ts";

const IDP = "https://idp.example.com";
const PLATFORM = "https://kubernetes.default.svc";
const GATEWAY_SECRET = "gateway-secret-0123456789abcdef";
const AGENT_KEY = await testKey("ES256");
const IDP_KEY = await testKey("ES256");
const PLATFORM_KEY = await testKey("ES256");

/** A server on `storage` with every identity feature on, its clients registered. */
async function identityServer(storage: Storage) {
  const f = await mcpFixture({
    storage,
    secret: "identity-flows-secret-0123456789abcdef",
    signingKeys: { algorithm: "ES256" },
    tokenExchange: { enabled: true },
    trustedIssuers: [
      { issuer: IDP, jwks: IDP_KEY.jwks, kind: "id-jag", clients: ["agent"], scopes: ["read"] },
      { issuer: PLATFORM, jwks: PLATFORM_KEY.jwks, kind: "workload", clients: ["billing"], scopes: ["export"] },
    ],
    linkUser: ({ email }) => (email === "alice@example.com" ? "alice" : null),
  });
  const register = f.server.clients.register;
  await register({
    client_id: "agent", name: "Agent", type: "confidential", scopes: ["read", "export"], grant_types: ["client_credentials", JWT_BEARER],
    token_endpoint_auth_method: "private_key_jwt", jwks: AGENT_KEY.jwks,
  });
  await register({ client_id: "billing", name: "Billing workload", type: "public", scopes: ["export"], grant_types: [JWT_BEARER] });
  for (const [client_id, format] of [["gateway", "opaque"], ["gateway-jwt", "jwt"]] as const) {
    await register({
      client_id, client_secret: GATEWAY_SECRET, name: `Gateway (${format})`, type: "confidential", scopes: ["read", "write"],
      grant_types: ["client_credentials", TOKEN_EXCHANGE], access_token_format: format,
    });
  }
  await register({ client_id: "rs", client_secret: SECRETS.other, name: "Resource server", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"], introspection: "all" });
  const json = async (response: Response) => ({ status: response.status, body: (await response.json()) as Record<string, unknown> });
  return {
    ...f,
    token: async (fields: Record<string, string>) => json(await post(f.server, "/token", fields)),
    introspect: async (token: string) => (await json(await post(f.server, "/introspect", { token, client_id: "rs", client_secret: SECRETS.other }))).body,
  };
}

/** Registers the flows as tests, for a store made by `open` (a fresh one per test). */
export function identityFlows(open: () => Promise<Storage>, persists: boolean): void {
  test("private_key_jwt: a signed assertion gets a client_credentials token; the same assertion again is invalid_client", async () => {
    const s = await identityServer(await open());
    const fields = { grant_type: "client_credentials", scope: "export", client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: await clientAssertion(AGENT_KEY, "agent", s.clock.now) };
    expect(await s.token(fields)).toMatchObject({ status: 200, body: { scope: "export" } });
    expect(await s.token(fields)).toMatchObject({ status: 401, body: { error: "invalid_client" } });
  });

  test("an ID-JAG becomes Alice's token once; a workload JWT a token for the workload", async () => {
    const s = await identityServer(await open());
    const auth = async () => ({ client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: await clientAssertion(AGENT_KEY, "agent", s.clock.now) });
    const assertion = await idJag(IDP_KEY, IDP, "agent", s.clock.now, { scope: "read" });
    const first = await s.token({ grant_type: JWT_BEARER, assertion, ...(await auth()) });
    expect(first).toMatchObject({ status: 200, body: { scope: "read" } });
    expect(await s.introspect(first.body.access_token as string)).toMatchObject({ active: true, sub: "alice", client_id: "agent" });
    expect(await s.token({ grant_type: JWT_BEARER, assertion, ...(await auth()) })).toMatchObject({ status: 400, body: { error: "invalid_grant" } });

    const workload = await s.token({ grant_type: JWT_BEARER, client_id: "billing", assertion: await workloadJwt(PLATFORM_KEY, PLATFORM, s.clock.now), scope: "export" });
    expect(workload.status).toBe(200);
    expect(await s.introspect(workload.body.access_token as string)).toMatchObject({ active: true, sub: "system:serviceaccount:prod:billing", client_id: "billing" });
  });

  test("token exchange with an actor: act in the JWT; in the opaque token's record where the store keeps it", async () => {
    const s = await identityServer(await open());
    const alice = await codeFlow(s.server, { scope: "read write", resource: MCP });
    expect(alice.status).toBe(200);
    const exchange = async (client_id: string) => {
      const actor = await s.token({ grant_type: "client_credentials", scope: "read", client_id, client_secret: GATEWAY_SECRET });
      return s.token({
        grant_type: TOKEN_EXCHANGE, client_id, client_secret: GATEWAY_SECRET, scope: "read",
        subject_token: alice.body.access_token as string, subject_token_type: ACCESS_TOKEN_TYPE,
        actor_token: actor.body.access_token as string, actor_token_type: ACCESS_TOKEN_TYPE,
      });
    };
    const jwt = await exchange("gateway-jwt");
    expect(jwt).toMatchObject({ status: 200, body: { issued_token_type: ACCESS_TOKEN_TYPE, scope: "read" } });
    expect(jose.decodeJwt(jwt.body.access_token as string)).toMatchObject({ sub: "alice", client_id: "gateway-jwt", act: { sub: "gateway-jwt" } });

    const opaque = await exchange("gateway");
    expect(opaque.status).toBe(200);
    const seen = await s.introspect(opaque.body.access_token as string);
    expect(seen).toMatchObject({ active: true, sub: "alice", client_id: "gateway", scope: "read" });
    // Store-level: the access token record's act (waits for migration 4 on SQLite and PostgreSQL).
    expect(seen.act).toEqual(persists ? { sub: "gateway" } : undefined);
  });

  test("an ID-JAG's auth_time reaches the token exchanged from its opaque token where the store keeps it", async () => {
    const s = await identityServer(await open());
    const authTime = Math.floor(s.clock.now / 1000) - 120;
    const agentAuth = async () => ({ client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: await clientAssertion(AGENT_KEY, "agent", s.clock.now) });
    const jag = await s.token({ grant_type: JWT_BEARER, assertion: await idJag(IDP_KEY, IDP, "agent", s.clock.now, { scope: "read", auth_time: authTime }), ...(await agentAuth()) });
    expect(jag.status).toBe(200);
    const exchanged = await s.token({
      grant_type: TOKEN_EXCHANGE, client_id: "gateway-jwt", client_secret: GATEWAY_SECRET,
      subject_token: jag.body.access_token as string, subject_token_type: ACCESS_TOKEN_TYPE,
    });
    expect(exchanged.status).toBe(200);
    // Store-level: the opaque subject token record's auth_time (waits for migration 4 on SQLite and PostgreSQL).
    expect(jose.decodeJwt(exchanged.body.access_token as string).auth_time).toEqual(persists ? authTime : undefined);
  });
}
