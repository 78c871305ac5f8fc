/**
 * The example MCP server (examples/mcp_server.ts) with DPoP-bound tokens (RFC 9449 §7), in process: oauth4webapi
 * gets a token bound to its key for the MCP resource (client_credentials) and calls a tool with a proof per
 * request; the tool sees the key. The same token sent as a Bearer token, or with a proof of another key, or with a
 * replayed proof, is refused, whichever verifier the server uses (the store, or the JWT alone).
 */
import * as oauth from "oauth4webapi";
import { expect, test } from "vitest";
import { notesMcpServer } from "../../examples/mcp_server.ts";
import { createAuthorizationServer, jwtTokenVerifier, localTokenVerifier, type TokenVerifier } from "../../mod.ts";

const ISSUER = "https://auth.example.com";
const RESOURCE = "https://mcp.example.com/mcp";
const SECRET = "mcp-dpop-client-secret-0123456789";

async function setup(format: "opaque" | "jwt") {
  const server = createAuthorizationServer({
    issuer: ISSUER,
    profile: "rfc6749",
    scopes: { "notes.read": "Read your notes" },
    resources: [RESOURCE],
    accessTokenFormat: format,
    secret: "mcp-dpop-test-secret-0123456789abcdef",
    dpop: { enabled: true },
  });
  await server.keys.ready();
  await server.clients.register({
    client_id: "agent", client_secret: SECRET, name: "Agent", type: "confidential", scopes: ["notes.read"],
    grant_types: ["client_credentials"], dpop_bound_access_tokens: true,
  });
  const verify: TokenVerifier = format === "jwt" ? jwtTokenVerifier({ server, audience: RESOURCE }) : localTokenVerifier(server);
  const mcp = notesMcpServer({ resource: RESOURCE, authorizationServers: [ISSUER], verify, scopesSupported: ["notes.read"], dpop: { replay: server.storage } });
  const fetch = (url: string, init: object) => {
    const request = new Request(url, init as RequestInit);
    return new URL(url).origin === ISSUER ? server.fetch(request) : mcp(request);
  };
  const options = { [oauth.customFetch]: fetch };
  const as = await oauth.processDiscoveryResponse(new URL(ISSUER), await oauth.discoveryRequest(new URL(ISSUER), { algorithm: "oauth2", ...options }));
  return { server, mcp, as, options };
}

const whoami = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "whoami", arguments: {} } });
const headers = () => new Headers({ "content-type": "application/json", accept: "application/json, text/event-stream" });

for (const format of ["opaque", "jwt"] as const) {
  test(`${format}: a DPoP-bound token calls a tool with its proof, and only so`, async () => {
    const { mcp, as, options } = await setup(format);
    const client: oauth.Client = { client_id: "agent" };
    const DPoP = oauth.DPoP(client, await oauth.generateKeyPair("ES256"));
    const tokens = await oauth.processClientCredentialsResponse(as, client, await oauth.clientCredentialsGrantRequest(
      as, client, oauth.ClientSecretPost(SECRET), { scope: "notes.read", resource: RESOURCE }, { DPoP, ...options },
    ));
    expect(tokens.token_type).toBe("dpop");

    const response = await oauth.protectedResourceRequest(tokens.access_token, "POST", new URL(RESOURCE), headers(), whoami, { DPoP, ...options });
    expect(response.status).toBe(200);
    const result = await response.json() as { result: { content: { text: string }[] } };
    expect(JSON.parse(result.result.content[0]!.text)).toMatchObject({ client_id: "agent", jkt: await DPoP.calculateThumbprint() });

    const asBearer = await mcp(new Request(RESOURCE, { method: "POST", headers: { ...Object.fromEntries(headers()), authorization: `Bearer ${tokens.access_token}` }, body: whoami }));
    expect([asBearer.status, asBearer.headers.get("www-authenticate")]).toEqual([401, expect.stringContaining(`error="invalid_token"`)]);
    const thief = oauth.DPoP(client, await oauth.generateKeyPair("ES256"));
    const stolen = await oauth.protectedResourceRequest(tokens.access_token, "POST", new URL(RESOURCE), headers(), whoami, { DPoP: thief, ...options })
      .catch((error: unknown) => error);
    expect((stolen as oauth.WWWAuthenticateChallengeError).response?.status).toBe(401);
  });
}

test("a replayed proof is refused at the MCP server", async () => {
  const { mcp, as, options } = await setup("opaque");
  const client: oauth.Client = { client_id: "agent" };
  const DPoP = oauth.DPoP(client, await oauth.generateKeyPair("ES256"));
  const tokens = await oauth.processClientCredentialsResponse(as, client, await oauth.clientCredentialsGrantRequest(
    as, client, oauth.ClientSecretPost(SECRET), { scope: "notes.read", resource: RESOURCE }, { DPoP, ...options },
  ));
  let captured: Request | undefined;
  const capture = { [oauth.customFetch]: (url: string, init: object) => mcp(captured = new Request(url, init as RequestInit)) };
  expect((await oauth.protectedResourceRequest(tokens.access_token, "POST", new URL(RESOURCE), headers(), whoami, { DPoP, ...capture })).status).toBe(200);
  const replay = new Request(RESOURCE, { method: "POST", headers: captured!.headers, body: whoami });
  const refused = await mcp(replay);
  expect([refused.status, await refused.json()]).toEqual([401, { error: "invalid_dpop_proof", error_description: "The DPoP proof was already used" }]);
});
