// oauth4webapi's DPoP support against the reference server ("dpop": { "enabled": true }, JWT access tokens), in
// process on every runtime: client_credentials, the code flow through the login and consent pages with dpop_jkt,
// and refresh, each ending in a DPoP-bound token that oauth4webapi's own resource-side check
// (validateJwtAccessToken) and the sample API accept with the proof oauth4webapi made. A refresh with another
// key is refused; with nonces on, oauth4webapi's one retry on use_dpop_nonce gets the token.
import * as oauth from "oauth4webapi";
import { expect, test } from "vitest";
import { htmlFormDriver } from "../../conformance/drivers/html_form.ts";
import { createReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, DEMO_REDIRECT_URI, type ReferenceConfig } from "../../lib/reference/config.ts";

const ISSUER = "http://127.0.0.1:8080";
const API = new URL(`${ISSUER}/api/reports`);

async function setup(dpop: NonNullable<ReferenceConfig["dpop"]>) {
  const app = await createReferenceApp({
    issuer: ISSUER, config: { ...DEMO_CONFIG, access_token_format: "jwt", dpop }, passwordIterations: 1000,
    secret: "reference-dpop-secret-0123456789abcdef",
  });
  // Every request oauth4webapi makes, as the Request it built, so the test can show it to the resource-side check too.
  const sent: Request[] = [];
  const customFetch = (url: string, init: object) => {
    const request = new Request(url, init as RequestInit);
    sent.push(request.clone());
    return app.fetch(request);
  };
  const options = { [oauth.customFetch]: customFetch, [oauth.allowInsecureRequests]: true };
  const as = await oauth.processDiscoveryResponse(new URL(ISSUER), await oauth.discoveryRequest(new URL(ISSUER), { algorithm: "oauth2", ...options }));
  return { app, as, options, sent };
}

/** Calls the sample API with oauth4webapi's proof; checks the request with validateJwtAccessToken too. */
async function useAtApi(as: oauth.AuthorizationServer, options: object, sent: Request[], token: string, DPoP: oauth.DPoPHandle) {
  const response = await oauth.protectedResourceRequest(token, "GET", API, new Headers(), null, { DPoP, ...options });
  const request = sent.at(-1)!;
  expect(request.headers.get("authorization")).toBe(`DPoP ${token}`);
  const claims = await oauth.validateJwtAccessToken(as, request, ISSUER, { ...options, requireDPoP: true });
  return { status: response.status, claims };
}

test("client_credentials, the code flow with dpop_jkt, and refresh: DPoP-bound tokens the resource checks accept", async () => {
  const { app, as, options, sent } = await setup({ enabled: true });
  const keyPair = await oauth.generateKeyPair("ES256");

  // client_credentials.
  const backend: oauth.Client = { client_id: "demo-backend" };
  const DPoP = oauth.DPoP(backend, keyPair);
  const cc = await oauth.processClientCredentialsResponse(as, backend, await oauth.clientCredentialsGrantRequest(
    as, backend, oauth.ClientSecretPost("demo-backend-secret-change-me"), { scope: "reports.read" }, { DPoP, ...options },
  ));
  expect(cc.token_type).toBe("dpop");
  const thumbprint = await DPoP.calculateThumbprint();
  const ccUse = await useAtApi(as, options, sent, cc.access_token, DPoP);
  expect([ccUse.status, ccUse.claims.cnf]).toEqual([200, { jkt: thumbprint }]);

  // The code flow of the public client, its code bound with dpop_jkt.
  const spa: oauth.Client = { client_id: "demo-spa" };
  const spaKeys = await oauth.generateKeyPair("EdDSA");
  const spaDPoP = oauth.DPoP(spa, spaKeys);
  const verifier = oauth.generateRandomCodeVerifier();
  const authorize = new URL(as.authorization_endpoint!);
  for (const [name, value] of Object.entries({
    response_type: "code", client_id: "demo-spa", redirect_uri: DEMO_REDIRECT_URI, scope: "reports.read", state: "st",
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256", dpop_jkt: await spaDPoP.calculateThumbprint(),
  })) authorize.searchParams.set(name, value);
  const redirect = await htmlFormDriver({ username: "demo", password: "demo-password" }).approve(authorize, { deny: false, fetch: app.fetch });
  const params = oauth.validateAuthResponse(as, spa, redirect, "st");
  const code = await oauth.processAuthorizationCodeResponse(as, spa, await oauth.authorizationCodeGrantRequest(
    as, spa, oauth.None(), params, DEMO_REDIRECT_URI, verifier, { DPoP: spaDPoP, ...options },
  ));
  expect(code.token_type).toBe("dpop");
  const codeUse = await useAtApi(as, options, sent, code.access_token, spaDPoP);
  expect([codeUse.status, codeUse.claims.sub, codeUse.claims.cnf]).toEqual([200, "demo", { jkt: await spaDPoP.calculateThumbprint() }]);

  // Refresh: another key is refused, the client's own key gets a token bound to it.
  const thief = oauth.DPoP(spa, await oauth.generateKeyPair("ES256"));
  const stolen = oauth.refreshTokenGrantRequest(as, spa, oauth.None(), code.refresh_token!, { DPoP: thief, ...options })
    .then((response) => oauth.processRefreshTokenResponse(as, spa, response));
  await expect(stolen).rejects.toMatchObject({ error: "invalid_grant" });
  const refreshed = await oauth.processRefreshTokenResponse(as, spa, await oauth.refreshTokenGrantRequest(
    as, spa, oauth.None(), code.refresh_token!, { DPoP: spaDPoP, ...options },
  ));
  expect(refreshed.token_type).toBe("dpop");
  expect((await useAtApi(as, options, sent, refreshed.access_token, spaDPoP)).status).toBe(200);

  // The same token with a proof of another key, or sent as a Bearer token, opens nothing.
  const refused = await oauth.protectedResourceRequest(refreshed.access_token, "GET", API, new Headers(), null, { DPoP: thief, ...options })
    .catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
  expect((refused as oauth.WWWAuthenticateChallengeError).response.status).toBe(401);
  expect((await app.fetch(new Request(API, { headers: { authorization: `Bearer ${refreshed.access_token}` } }))).status).toBe(401);
  app.close();
});

test("with nonces required, oauth4webapi's one retry on use_dpop_nonce gets the token", async () => {
  const { app, as, options } = await setup({ enabled: true, require_nonce: true });
  const backend: oauth.Client = { client_id: "demo-backend" };
  const DPoP = oauth.DPoP(backend, await oauth.generateKeyPair("ES256"));
  const grant = () =>
    oauth.clientCredentialsGrantRequest(as, backend, oauth.ClientSecretPost("demo-backend-secret-change-me"), { scope: "exports" }, { DPoP, ...options })
      .then((response) => oauth.processClientCredentialsResponse(as, backend, response));
  const first = await grant().catch((error: unknown) => error);
  expect(oauth.isDPoPNonceError(first)).toBe(true);
  expect((await grant()).token_type).toBe("dpop");
  app.close();
});
