/**
 * The server and the token request that test/storage/dpop.test.ts and its racer processes share.
 *
 * @module
 */
import type { AuthorizationServerOptions } from "../../mod.ts";

const ISSUER = "https://auth.example.com";
const SECRET = "dpop-race-client-secret-0123456789";

/** Every instance's options (the store aside), a token request with a proof, and the URL a proof names. */
export const DPOP_RACE: {
  options: Omit<AuthorizationServerOptions, "storage">;
  htu: string;
  client: { client_id: string; client_secret: string };
  request(proof: string): Request;
} = {
  options: { issuer: ISSUER, scopes: { export: "Run exports" }, secret: "dpop-race-server-secret-0123456789abcdef", dpop: { enabled: true } },
  htu: `${ISSUER}/token`,
  client: { client_id: "dpop-racer", client_secret: SECRET },
  request: (proof) =>
    new Request(`${ISSUER}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", dpop: proof },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: "dpop-racer", client_secret: SECRET, scope: "export" }).toString(),
    }),
};
