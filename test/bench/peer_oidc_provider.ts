/**
 * oidc-provider (a devDependency) on one store, for the durable-store rows (`durable.ts`):
 *
 *   node peer_oidc_provider.js --store memory|postgres://…|redis://… [--pool 10]
 *
 * Configured as a plain OAuth 2.0 server would be (as `conformance/targets/oidc_provider.ts` is): the bench's two
 * clients, client_credentials on, refresh tokens for a client allowed the refresh_token grant, this project's
 * token lifetimes. The adapters (memory, PostgreSQL, Redis) are those of `peer_adapters.ts`; its own memory
 * adapter keeps only 1,000 records. Codes are created through its
 * own models (a Grant, then an AuthorizationCode of it), as its interaction flow ends. The resource port checks a
 * client_credentials token as an API in front of it does: the token found through the adapter, live, with the
 * scope.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import Provider from "oidc-provider";
import { arg, kindOf, openPostgres, openRedis, trips } from "./drivers.ts";
import { DURABLE_TOKEN_PATH, listen, serveDurable } from "./durable_server.ts";
import { BACKEND_SECRET, CHALLENGE, REDIRECT } from "./fixture.ts";
import { type OpAdapter, opMemory, opPostgres, opRedis } from "./peer_adapters.ts";

const url = arg("store");
const kind = kindOf(url);
let adapter: (model: string) => OpAdapter;
if (kind === "postgres") adapter = await opPostgres(openPostgres(url, Number(arg("pool", "10"))).query);
else if (kind === "redis") adapter = opRedis(openRedis(url).redis, () => void trips.count++);
else if (kind === "memory") adapter = opMemory();
else throw new Error("oidc-provider runs on memory, postgres://… or redis://…");

/** Stands for any port: the issuer is fixed, and requests come to whichever port the server listens on. */
const ISSUER = "http://127.0.0.1";

const provider = new Provider(ISSUER, {
  adapter: adapter as unknown as never,
  clients: [
    {
      client_id: "bench-backend",
      client_secret: BACKEND_SECRET,
      token_endpoint_auth_method: "client_secret_post",
      redirect_uris: [],
      grant_types: ["client_credentials"],
      response_types: [],
      scope: "read",
    },
    {
      client_id: "bench-spa",
      token_endpoint_auth_method: "none",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      scope: "read",
    },
  ],
  scopes: ["read"],
  features: { clientCredentials: { enabled: true }, devInteractions: { enabled: false } },
  issueRefreshToken: (_ctx, client) => client.grantTypeAllowed("refresh_token"),
  // This project's lifetimes: an hour for access tokens, ten minutes for codes, 30 days for a grant.
  ttl: { AccessToken: 3600, ClientCredentials: 3600, AuthorizationCode: 600, RefreshToken: 30 * 86_400, Grant: 30 * 86_400 },
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
  routes: { token: DURABLE_TOKEN_PATH },
});
const callback = provider.callback();

/** The models of oidc-provider the bench uses (the package ships no types). */
interface Models {
  Client: { find(id: string): Promise<unknown> };
  Grant: new (init: { accountId: string; clientId: string }) => { addOIDCScope(scope: string): void; save(): Promise<string> };
  AuthorizationCode: new (init: Record<string, unknown>) => { save(): Promise<string> };
  ClientCredentials: { find(value: string): Promise<{ isExpired: boolean; scope?: string; clientId: string } | undefined> };
}
const models = provider as unknown as Models;

await serveDurable({
  token: () => listen((req: IncomingMessage, res: ServerResponse) => callback(req, res)),
  resource: () =>
    listen((req, res) => {
      const value = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
      (value === undefined ? Promise.resolve(undefined) : models.ClientCredentials.find(value)).then(
        (token) => {
          if (!token || token.isExpired || !String(token.scope ?? "").split(" ").includes("read")) res.writeHead(401).end();
          else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ client_id: token.clientId }));
        },
        () => res.writeHead(500).end(),
      );
    }),
  issueCodes: async (n) => {
    const client = await models.Client.find("bench-spa");
    const codes: string[] = [];
    for (let i = 0; i < n; i++) {
      const accountId = `bench-user-${i}`;
      const grant = new models.Grant({ accountId, clientId: "bench-spa" });
      grant.addOIDCScope("read");
      const grantId = await grant.save();
      const code = new models.AuthorizationCode({
        accountId, client, grantId, scope: "read", redirectUri: REDIRECT, codeChallenge: CHALLENGE, codeChallengeMethod: "S256",
        authTime: Math.floor(Date.now() / 1000),
      });
      codes.push(await code.save());
    }
    return codes;
  },
});
