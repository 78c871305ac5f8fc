/**
 * Token endpoint, client_credentials grant (RFC 6749 §4.4): the body-field table's last column, the spec's
 * scope rules (§4.2 rules 1 and 2) and refresh tokens for clients configured to get them.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { ALL, SPEC, CONTROL } from "./profiles.ts";
import { expectError, expectTokens } from "../checks.ts";
import { cellCases, type ColumnSetup } from "./body_fields.ts";

/** client_credentials: client_id, client_secret, scope. */
export const CLIENT_CREDENTIALS: ColumnSetup = {
  column: "CC",
  area: "token_client_credentials",
  features: ["client_credentials"],
  prepare(ctx) {
    const client = ctx.target.clients.client_credentials;
    return Promise.resolve({
      grant_type: "client_credentials",
      client_id: client.client_id,
      client_secret: client.client_secret,
      scope: client.scope,
    });
  },
};

export const cases: CaseDef[] = [
  ...cellCases(CLIENT_CREDENTIALS),
  {
    id: "TOKEN-CC-SCOPE-NOT-ALLOWED",
    title: "A scope the client is not allowed is refused with invalid_scope",
    area: "token_client_credentials",
    ref: "spec §4.2 rule 1, §8; RFC 6749 §5.2 (invalid_scope)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.clientCredentials],
    cells: [{ column: "CC", row: "scope" }],
    async run(ctx) {
      const reply = await ctx.clientCredentials(ctx.target.clients.client_credentials, { scope: ctx.target.forbidden_scope });
      expectError(ctx, reply, ["invalid_scope"], `scope "${ctx.target.forbidden_scope}"`);
    },
  },
  {
    id: "TOKEN-CC-SCOPE-TWO",
    title: "Two scopes in one request are refused, even when the client is allowed both",
    area: "token_client_credentials",
    ref: "spec §4.2 rule 2, §8; RFC 6749 §3.3 (several scopes allowed: hence spec only)",
    level: "MUST",
    profiles: SPEC,
    needs: [CONTROL.clientCredentials],
    cells: [{ column: "CC", row: "scope" }],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials;
      if (client.extra_scope === undefined) ctx.skip("clients.client_credentials.extra_scope is not set");
      const scope = `${client.scope} ${client.extra_scope}`;
      const reply = await ctx.clientCredentials(client, { scope });
      expectError(ctx, reply, ["invalid_scope", "invalid_request"], `scope "${scope}"`);
    },
  },
  {
    id: "TOKEN-CC-SECRET-WRONG",
    title: "A wrong client_secret is refused with invalid_client",
    area: "token_client_credentials",
    ref: "RFC 6749 §4.4.2, §5.2 (invalid_client)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.clientCredentials],
    cells: [{ column: "CC", row: "client_secret" }],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials;
      const reply = await ctx.clientCredentials(client, { client_secret: `${client.client_secret}-wrong` });
      expectError(ctx, reply, ["invalid_client"], "a wrong client_secret");
    },
  },
  {
    id: "TOKEN-CC-PUBLIC-CLIENT",
    title: "A public client cannot use client_credentials",
    area: "token_client_credentials",
    ref: "RFC 6749 §4.4 (confidential clients only), §5.2",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.clientCredentials],
    async run(ctx) {
      const client = ctx.target.clients.public;
      const reply = await ctx.token({ grant_type: "client_credentials", client_id: client.client_id, scope: client.scope });
      expectError(ctx, reply, ["unauthorized_client", "invalid_client"], "client_credentials for a public client");
    },
  },
  {
    id: "TOKEN-CC-REFRESH",
    title: "A client configured for it gets a refresh token with client_credentials, and can use it",
    area: "token_client_credentials",
    ref: "spec §2 token response (refresh_token: only if client configuration allows); RFC 6749 §6",
    level: "MUST",
    profiles: SPEC,
    positive: true,
    features: ["client_credentials"],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials_refresh;
      if (!client) return ctx.skip("clients.client_credentials_refresh is not set");
      const first = expectTokens(ctx, await ctx.clientCredentials(client), "client_credentials");
      if (first.refresh_token === undefined) return ctx.fail("No refresh_token for a client configured to get one", first.reply);
      const reply = await ctx.refresh(client, first.refresh_token);
      expectTokens(ctx, reply, "refreshing a client_credentials refresh token");
    },
  },
];
