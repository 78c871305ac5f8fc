/**
 * Token revocation (RFC 7009) with the client libraries people use, against the reference server on a loopback
 * socket: simple-oauth2 5.1 (which refuses any answer that is not JSON), @badgateway/oauth2-client (which parses
 * any JSON-labelled body), openid-client and oauth4webapi. Each revokes an access token and a refresh token with
 * client_secret_basic, and the tokens stop working (issue 22 item 8).
 */
import { OAuth2Client } from "@badgateway/oauth2-client";
import * as oauth from "oauth4webapi";
import * as openid from "openid-client";
import { ClientCredentials } from "simple-oauth2";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type NodeServer, serveNode } from "../../lib/adapters/node.ts";
import { createReferenceApp, type ReferenceApp } from "../../lib/reference/app.ts";

const CLIENT = { id: "demo-backend-refresh", secret: "demo-backend-refresh-secret" };

let app: ReferenceApp;
let served: NodeServer;
let issuer = "";

beforeAll(async () => {
  let handler: ReferenceApp["fetch"] | undefined;
  served = await serveNode({ fetch: (request: Request) => handler!(request) }, { port: 0 });
  issuer = served.url;
  app = await createReferenceApp({ issuer, passwordIterations: 1, purgeInterval: 0 });
  handler = app.fetch;
});

afterAll(async () => {
  app?.close();
  await served?.close();
});

/** A fresh access and refresh token of the client_credentials client that is configured for refresh tokens. */
async function tokens(): Promise<{ access_token: string; refresh_token: string; expires_in: number }> {
  const response = await fetch(`${issuer}/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${CLIENT.id}:${CLIENT.secret}`)}` },
    body: new URLSearchParams({ grant_type: "client_credentials", scope: "exports" }),
  });
  expect(response.status).toBe(200);
  return response.json();
}

/** Whether the access token still opens the server's guard, and the refresh token still refreshes. */
async function alive(issued: { access_token: string; refresh_token: string }): Promise<{ access: boolean; refresh: boolean }> {
  const access = await app.server.verifyAuthorization(`Bearer ${issued.access_token}`).then(() => true, () => false);
  const refreshed = await fetch(`${issuer}/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${CLIENT.id}:${CLIENT.secret}`)}` },
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: issued.refresh_token }),
  });
  return { access, refresh: refreshed.status === 200 };
}

/** What the test calls of simple-oauth2's client (see simple_oauth2.d.ts). */
interface SimpleOauth2Client {
  createToken(token: Record<string, unknown>): { revoke(tokenType: "access_token" | "refresh_token"): Promise<void> };
}

type Revoker = (token: string, hint: "access_token" | "refresh_token", issued: { access_token: string; refresh_token: string; expires_in: number }) => Promise<void>;

const LIBRARIES: Record<string, () => Promise<Revoker>> = {
  "simple-oauth2": async () => {
    // Cast: Deno infers the class from the package's JavaScript, where createToken is not visible.
    const client = new ClientCredentials({ client: CLIENT, auth: { tokenHost: issuer, tokenPath: "/token", revokePath: "/revoke" } }) as unknown as SimpleOauth2Client;
    return (_token, hint, issued) => client.createToken(issued).revoke(hint);
  },
  "@badgateway/oauth2-client": async () => {
    const client = new OAuth2Client({ server: issuer, clientId: CLIENT.id, clientSecret: CLIENT.secret, authenticationMethod: "client_secret_basic" });
    return (_token, hint, issued) =>
      client.revoke({ accessToken: issued.access_token, refreshToken: issued.refresh_token, expiresAt: null }, hint);
  },
  "openid-client": async () => {
    const config = await openid.discovery(new URL(issuer), CLIENT.id, undefined, openid.ClientSecretBasic(CLIENT.secret), {
      algorithm: "oauth2", execute: [openid.allowInsecureRequests],
    });
    return (token, hint) => openid.tokenRevocation(config, token, { token_type_hint: hint });
  },
  "oauth4webapi": async () => {
    const url = new URL(issuer);
    const as = await oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, { algorithm: "oauth2", [oauth.allowInsecureRequests]: true }));
    const client = { client_id: CLIENT.id };
    return async (token, hint) => {
      const response = await oauth.revocationRequest(as, client, oauth.ClientSecretBasic(CLIENT.secret), token, {
        additionalParameters: { token_type_hint: hint }, [oauth.allowInsecureRequests]: true,
      });
      await oauth.processRevocationResponse(response);
    };
  },
};

describe.each(Object.keys(LIBRARIES))("%s", (name) => {
  test("revokes an access token, then a refresh token (and with it the grant)", async () => {
    const revoke = await LIBRARIES[name]!();
    const first = await tokens();
    await revoke(first.access_token, "access_token", first);
    expect(await alive(first)).toEqual({ access: false, refresh: true });
    const second = await tokens();
    await revoke(second.refresh_token, "refresh_token", second);
    expect(await alive(second)).toEqual({ access: false, refresh: false });
  });

  test("an unknown token is answered like a revoked one (RFC 7009 §2.2), and the library accepts that too", async () => {
    const revoke = await LIBRARIES[name]!();
    const unknown = { access_token: "never-issued-access-token", refresh_token: "never-issued-refresh-token", expires_in: 3600 };
    await revoke(unknown.access_token, "access_token", unknown);
  });
});
