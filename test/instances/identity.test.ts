// Single use across instances: two reference-server processes of one issuer on one PostgreSQL, then on one Redis.
// A private_key_jwt client assertion or an identity assertion (ID-JAG) spent at one instance is refused at the
// other, and of the same assertion sent to both at once exactly one gets a token: the jti is marked through the
// store's markOnce, atomic across processes. Real servers on random loopback ports; skipped with a reason where
// not installed.
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { type Database, type Skipped, started, startPostgres, startRedis } from "../support/databases.ts";
import { clientAssertion, CLIENT_ASSERTION_TYPE, idJag, JWT_BEARER, testKey } from "../identity_helpers.ts";
import { killInstances, startInstance, token, writeConfig } from "./support.ts";

const servers: (Database | Skipped)[] = await Promise.all([startPostgres(), startRedis()]);
afterEach(killInstances);
afterAll(async () => {
  for (const server of servers) if (started(server)) await server.stop();
}, 60_000);

/** The issuer both instances serve: the audience of every assertion. */
const ISSUER = "https://as.example.com";
const IDP = "https://idp.example.com";
const AGENT_KEY = await testKey("ES256");
const IDP_KEY = await testKey("ES256");

const identityConfig = () => writeConfig({
  users: [{ username: "alice", password: "correct horse battery staple", email: "alice@example.com" }],
  clients: [{
    client_id: "agent", name: "Agent", redirect_uris: [], scopes: ["read", "export"], grant_types: ["client_credentials", JWT_BEARER],
    token_endpoint_auth_method: "private_key_jwt", jwks: AGENT_KEY.jwks,
  }],
  trusted_issuers: [{ issuer: IDP, jwks: IDP_KEY.jwks, kind: "id-jag", clients: ["agent"], scopes: ["read"] }],
  secret: "identity-instances-secret-0123456789abcdef",
});

for (const [name, server] of [["PostgreSQL", servers[0]], ["Redis", servers[1]]] as const) {
  describe.skipIf(!started(server))(`two instances on one ${name}`, () => {
    const db = server as Database;
    const both = () => {
      const file = identityConfig();
      return Promise.all([0, 1].map(() => startInstance(file, ["--store", db.url, "--issuer", ISSUER])));
    };
    const now = () => Date.now();
    const signed = async () => ({
      grant_type: "client_credentials", scope: "export", client_assertion_type: CLIENT_ASSERTION_TYPE,
      client_assertion: await clientAssertion(AGENT_KEY, "agent", now(), { aud: ISSUER }),
    });

    test("a client assertion spent at one is refused at the other; sent to both at once, one wins", async () => {
      const [a, b] = await both();
      const fields = await signed();
      expect((await token(a!.url, fields)).status).toBe(200);
      expect(await token(b!.url, fields)).toMatchObject({ status: 401, body: { error: "invalid_client" } });
      for (let round = 0; round < 5; round++) {
        const race = await signed();
        const statuses = (await Promise.all([a, b, a, b].map((i) => token(i!.url, race)))).map((r) => r.status).sort();
        expect(statuses).toEqual([200, 401, 401, 401]);
      }
    }, 120_000);

    test("an identity assertion becomes Alice's token once, whichever instance sees it first", async () => {
      const [a, b] = await both();
      for (let round = 0; round < 5; round++) {
        const assertion = await idJag(IDP_KEY, IDP, "agent", now(), { aud: ISSUER, scope: "read" });
        // Each request authenticates afresh (its own client assertion), so only the ID-JAG's jti decides.
        const requests = await Promise.all([a, b, b, a].map(async (i) => {
          const { client_assertion_type, client_assertion } = await signed();
          return { url: i!.url, fields: { grant_type: JWT_BEARER, assertion, client_assertion_type, client_assertion } };
        }));
        const results = await Promise.all(requests.map(({ url, fields }) => token(url, fields)));
        expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400, 400]);
        expect(results.find((r) => r.status === 200)!.body).toMatchObject({ scope: "read" });
        expect(results.filter((r) => r.status === 400).map((r) => r.body.error)).toEqual(["invalid_grant", "invalid_grant", "invalid_grant"]);
      }
    }, 120_000);
  });
}
