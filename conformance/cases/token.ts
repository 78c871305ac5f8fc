/**
 * Token endpoint rules that hold for every grant (RFC 6749 §2.3, §3.2, §5.2), checked with the
 * client_credentials client because it needs no user.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { ALL, BCP, CONTROL } from "./profiles.ts";
import { expectError, expectTokens, summary } from "../checks.ts";
import { basicAuth } from "../context.ts";

export const cases: CaseDef[] = [
  {
    id: "TOKEN-GRANT_TYPE-UNSUPPORTED",
    title: "An unknown grant_type is refused with unsupported_grant_type",
    area: "token",
    ref: "RFC 6749 §5.2 (unsupported_grant_type)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.clientCredentials],
    async run(ctx) {
      const reply = await ctx.clientCredentials(ctx.target.clients.client_credentials, {
        grant_type: "urn:example:conformance:unknown-grant",
      });
      expectError(ctx, reply, ["unsupported_grant_type"], "grant_type urn:example:conformance:unknown-grant");
    },
  },
  {
    id: "TOKEN-PARAM-UNKNOWN-IGNORED",
    title: "Unrecognized request parameters are ignored",
    area: "token",
    ref: "RFC 6749 §3.2 (MUST ignore unrecognized request parameters)",
    level: "MUST",
    profiles: ALL,
    features: ["client_credentials"],
    positive: true,
    async run(ctx) {
      const reply = await ctx.clientCredentials(ctx.target.clients.client_credentials, { x_conformance_extra: "1" });
      expectTokens(ctx, reply, "a request with an extra parameter x_conformance_extra");
    },
  },
  {
    id: "TOKEN-PARAM-REPEATED",
    title: "A parameter sent twice is refused with invalid_request",
    area: "token",
    ref: "RFC 6749 §3.2 (parameters MUST NOT be included more than once), §5.2",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.clientCredentials],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials;
      for (const repeated of ["grant_type", "scope"]) {
        const pairs: [string, string][] = [
          ["grant_type", "client_credentials"],
          ["client_id", client.client_id],
          ["client_secret", client.client_secret],
          ["scope", client.scope],
        ];
        const value = pairs.find(([name]) => name === repeated)![1];
        pairs.push([repeated, value]);
        expectError(ctx, await ctx.token(pairs), ["invalid_request"], `${repeated} sent twice`);
      }
    },
  },
  {
    id: "TOKEN-CLIENT-UNKNOWN",
    title: "An unknown client_id is refused with invalid_client",
    area: "token",
    ref: "RFC 6749 §5.2 (invalid_client: unknown client)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.clientCredentials],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials;
      const reply = await ctx.clientCredentials(client, { client_id: `${client.client_id}-unknown-conformance` });
      expectError(ctx, reply, ["invalid_client"], "an unknown client_id");
    },
  },
  {
    id: "TOKEN-BASIC-AUTH",
    title: "HTTP Basic client authentication is supported",
    area: "token",
    ref: "RFC 6749 §2.3.1 (MUST support HTTP Basic for clients with a password)",
    level: "MUST",
    profiles: ALL,
    positive: true,
    // Shown with client_credentials, the one grant that needs no user.
    features: ["client_credentials"],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials;
      const reply = await ctx.token(
        { grant_type: "client_credentials", scope: client.scope },
        { basic: [client.client_id, client.client_secret] },
      );
      expectTokens(ctx, reply, "client_credentials with HTTP Basic authentication");
    },
  },
  {
    id: "TOKEN-BASIC-AUTH-WRONG-401",
    title: "A wrong secret sent with HTTP Basic gets 401 invalid_client with WWW-Authenticate",
    area: "token",
    ref: "RFC 6749 §5.2 (invalid_client: 401 and WWW-Authenticate when the Authorization header was used)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.basic],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials;
      const reply = await ctx.token(
        { grant_type: "client_credentials", scope: client.scope },
        { basic: [client.client_id, `${client.client_secret}-wrong`] },
      );
      expectError(ctx, reply, ["invalid_client"], "a wrong secret in HTTP Basic");
      ctx.check(reply.status === 401, `Expected status 401 after HTTP Basic authentication failed, got ${reply.status}`, reply);
      const challenge = reply.headers.get("www-authenticate") ?? "";
      ctx.check(/^\s*basic\b/i.test(challenge) || /,\s*basic\b/i.test(challenge), `WWW-Authenticate must offer the Basic scheme, got ${JSON.stringify(challenge)}`, reply);
    },
  },
  {
    id: "TOKEN-AUTH-TWO-METHODS",
    title: "A request that authenticates the client twice (Basic and client_secret) is refused",
    area: "token",
    ref: "RFC 6749 §2.3 (MUST NOT use more than one authentication method)",
    level: "SHOULD",
    profiles: ALL,
    needs: [CONTROL.basic, CONTROL.clientCredentials],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials;
      const reply = await ctx.token(
        { grant_type: "client_credentials", client_id: client.client_id, client_secret: client.client_secret, scope: client.scope },
        { headers: { authorization: basicAuth(client.client_id, client.client_secret) } },
      );
      expectError(ctx, reply, ["invalid_request", "invalid_client"], "two client authentication methods");
    },
  },
  {
    id: "TOKEN-CONTENT-TYPE-JSON",
    title: "A JSON body is not accepted (the token endpoint takes form-encoded bodies)",
    area: "token",
    ref: "spec §4.2 (Content-Type: application/x-www-form-urlencoded); RFC 6749 §3.2",
    level: "SHOULD",
    profiles: ALL,
    needs: [CONTROL.clientCredentials],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials;
      const body = JSON.stringify({ grant_type: "client_credentials", client_id: client.client_id, client_secret: client.client_secret, scope: client.scope });
      const reply = await ctx.http.send("POST", ctx.target.token_url, { body, headers: { "content-type": "application/json", accept: "application/json" } });
      ctx.check(reply.status >= 400, `A JSON body was accepted: ${summary(reply)}`, reply);
    },
  },
  {
    id: "TOKEN-METHOD-GET",
    title: "A GET with the parameters in the query issues no token",
    area: "token",
    ref: "RFC 6749 §3.2 (the client MUST use POST)",
    level: "SHOULD",
    profiles: ALL,
    needs: [CONTROL.clientCredentials],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials;
      const url = new URL(ctx.target.token_url);
      for (const [k, v] of Object.entries({ grant_type: "client_credentials", client_id: client.client_id, client_secret: client.client_secret, scope: client.scope })) {
        url.searchParams.append(k, v);
      }
      const reply = await ctx.http.send("GET", url, { headers: { accept: "application/json" } });
      ctx.check(reply.status >= 400, `A GET with credentials in the query was answered ${summary(reply)}`, reply);
    },
  },
  {
    id: "TOKEN-PASSWORD-REFUSED",
    title: "The resource owner password grant issues no token",
    area: "token",
    ref: "RFC 9700 §2.4 (MUST NOT use the password grant); OAuth 2.1 §10.1 (removed); spec §1 (the grants it lists)",
    level: "MUST",
    profiles: BCP,
    needs: [CONTROL.clientCredentials],
    security: true,
    async run(ctx) {
      const client = ctx.target.clients.confidential;
      const a = ctx.target.approval;
      const user = a.driver === "html_form" ? { username: a.username, password: a.password } : { username: "conformance-user", password: "x" };
      const reply = await ctx.token({ grant_type: "password", ...ctx.credentials(client), ...user, scope: client.scope });
      expectError(ctx, reply, ["unsupported_grant_type", "unauthorized_client", "invalid_grant"], "grant_type=password with the test user's credentials");
    },
  },
];
