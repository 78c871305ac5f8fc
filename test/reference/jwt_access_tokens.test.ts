// The reference server with "access_token_format": "jwt", in process on every runtime: the tokens of each grant
// (client_credentials, the code flow through its login and consent pages, refresh) are accepted by jose's
// jwtVerify and by oauth4webapi's validateJwtAccessToken against its own /jwks, by jwtTokenVerifier against
// its jwks_uri, and by its sample API; the refresh token stays opaque.
import * as jose from "jose";
import * as oauth from "oauth4webapi";
import { expect, test } from "vitest";
import { htmlFormDriver } from "../../conformance/drivers/html_form.ts";
import { jwtTokenVerifier } from "../../mod.ts";
import { createReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, DEMO_REDIRECT_URI } from "../../lib/reference/config.ts";

const ISSUER = "http://127.0.0.1:8080";
const TOKEN = `${ISSUER}/index.php?module=OAuth2&action=token`;
const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

test("every grant's JWT access token passes jose, oauth4webapi and jwtTokenVerifier with the server's /jwks", async () => {
  const app = await createReferenceApp({ issuer: ISSUER, config: { ...DEMO_CONFIG, access_token_format: "jwt" }, passwordIterations: 1000 });
  const post = async (fields: Record<string, string>) => {
    const response = await app.fetch(new Request(TOKEN, { method: "POST", body: new URLSearchParams(fields) }));
    expect(response.status, await response.clone().text()).toBe(200);
    return response.json() as Promise<{ access_token: string; refresh_token?: string }>;
  };
  const cc = await post({ grant_type: "client_credentials", client_id: "demo-backend", client_secret: "demo-backend-secret-change-me", scope: "exports" });
  const authorize = new URL(`${ISSUER}/index.php?module=OAuth2&action=authorize`);
  for (const [k, v] of Object.entries({ response_type: "code", client_id: "demo-spa", redirect_uri: DEMO_REDIRECT_URI, scope: "reports.read", state: "s", code_challenge: CHALLENGE, code_challenge_method: "S256" })) {
    authorize.searchParams.set(k, v);
  }
  const redirect = await htmlFormDriver({ username: "demo", password: "demo-password" }).approve(authorize, { deny: false, fetch: app.fetch });
  const code = await post({ grant_type: "authorization_code", client_id: "demo-spa", code: redirect.searchParams.get("code")!, redirect_uri: DEMO_REDIRECT_URI, code_verifier: VERIFIER });
  expect(code.refresh_token).toMatch(/^[\w-]{43}$/);
  const refreshed = await post({ grant_type: "refresh_token", client_id: "demo-spa", refresh_token: code.refresh_token! });

  const set = jose.createLocalJWKSet(await (await app.fetch(new Request(`${ISSUER}/jwks`))).json());
  const customFetch = (url: string, init: object) => app.fetch(new Request(url, init as RequestInit));
  const as = await oauth.processDiscoveryResponse(new URL(ISSUER), await oauth.discoveryRequest(new URL(ISSUER), { algorithm: "oauth2", [oauth.customFetch]: customFetch, [oauth.allowInsecureRequests]: true }));
  const local = jwtTokenVerifier({ issuer: ISSUER, jwksUri: as.jwks_uri!, audience: ISSUER, jwks: { fetch: app.fetch } });
  for (const [grant, token, sub, client] of [
    ["client_credentials", cc.access_token, "demo-backend", "demo-backend"],
    ["authorization_code", code.access_token, "demo", "demo-spa"],
    ["refresh_token", refreshed.access_token, "demo", "demo-spa"],
  ] as const) {
    const { payload, protectedHeader } = await jose.jwtVerify(token, set, { issuer: ISSUER, audience: ISSUER, typ: "at+jwt", algorithms: ["ES256"] });
    expect([grant, protectedHeader.typ, payload.sub, payload.client_id]).toEqual([grant, "at+jwt", sub, client]);
    const request = new Request(`${ISSUER}/api/me`, { headers: { authorization: `Bearer ${token}` } });
    // allowInsecureRequests: the issuer is plain http on loopback, as in-process runs have it.
    const claims = await oauth.validateJwtAccessToken(as, request, ISSUER, { [oauth.customFetch]: customFetch, [oauth.allowInsecureRequests]: true });
    expect([grant, claims.sub, claims.client_id]).toEqual([grant, sub, client]);
    expect(await local(token), grant).toMatchObject({ client_id: client });
    expect((await app.fetch(request)).status, grant).toBe(200);
  }
  app.close();
});
