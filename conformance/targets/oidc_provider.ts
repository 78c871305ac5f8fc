/**
 * oidc-provider (panva/node-oidc-provider, a devDependency) as a conformance target: a server nobody here
 * wrote. Starts it on a free loopback port with the clients of `oidc-provider.json`, its development login
 * and consent pages (any login name and password are accepted; the consent page has a Continue button and a
 * Cancel link) and prints `listening on http://127.0.0.1:PORT`. Stops by itself after ten minutes.
 *
 *   npx tsx conformance/cli.ts --target conformance/targets/oidc-provider.json \
 *     --serve "tsx conformance/targets/oidc_provider.ts" --expect conformance/targets/oidc-provider.expect.jsonc
 *
 * Configured as a plain OAuth 2.0 server would be: client_credentials and revocation on, refresh tokens for
 * every client allowed the refresh_token grant (not only with offline_access), and each client held to its
 * own scopes; and, for the JWT access-token cases, every access token a JWT (RFC 9068) for one default resource.
 * Everything else is oidc-provider's default.
 *
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import Provider from "oidc-provider";

const REDIRECT = "http://127.0.0.1:9999/callback";
const SCOPES = ["reports.read", "reports.write", "exports", "admin"];
/** The one resource server every access token is for (RFC 8707), in the JWT format (RFC 9068). */
const API = "https://api.example.com/";

const server = createServer();
await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
const { port } = server.address() as AddressInfo;
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "spa",
      token_endpoint_auth_method: "none",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      scope: "reports.read reports.write",
    },
    {
      client_id: "web",
      client_secret: "web-secret-0123456789",
      token_endpoint_auth_method: "client_secret_post",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      scope: "reports.read reports.write",
    },
    {
      client_id: "backend",
      client_secret: "backend-secret-0123456789",
      token_endpoint_auth_method: "client_secret_post",
      redirect_uris: [],
      grant_types: ["client_credentials"],
      response_types: [],
      scope: "exports reports.read",
    },
    {
      client_id: "other",
      token_endpoint_auth_method: "none",
      redirect_uris: ["http://127.0.0.1:9999/other"],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      scope: "reports.read",
    },
  ],
  scopes: SCOPES,
  features: {
    clientCredentials: { enabled: true },
    revocation: { enabled: true },
    devInteractions: { enabled: true },
    // JWT access tokens (RFC 9068) are per resource server in oidc-provider: every token is for one default API,
    // in the JWT format, so the suite's JWT cases run.
    resourceIndicators: {
      enabled: true,
      defaultResource: () => API,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({ scope: SCOPES.join(" "), audience: API, accessTokenFormat: "jwt", accessTokenTTL: 3600 }),
    },
  },
  // A plain OAuth 2.0 server: a client allowed the refresh_token grant gets refresh tokens.
  issueRefreshToken: (_ctx, client) => client.grantTypeAllowed("refresh_token"),
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
});

server.on("request", provider.callback());
console.log(`listening on ${issuer}`);
// Bounded in time: a launcher left behind stops by itself.
setTimeout(() => process.exit(0), 600_000).unref();
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => process.exit(0));
