/**
 * Token endpoint, authorization_code grant: the two code columns of the body-field table, and the rules of
 * RFC 6749 §4.1.3 that no other area covers.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { ALL, CONTROL } from "./profiles.ts";
import { expectError } from "../checks.ts";
import { makeVerifier, randomString } from "../pkce.ts";
import { cellCases, type ColumnSetup } from "./body_fields.ts";

/** authorization_code (public): client_id, redirect_uri, code, code_verifier. */
export const AC_PUBLIC: ColumnSetup = {
  column: "AC-PUB",
  area: "token_authorization_code",
  async prepare(ctx) {
    const grant = await ctx.code("public");
    return {
      grant_type: "authorization_code",
      client_id: grant.client.client_id,
      redirect_uri: grant.redirect_uri,
      code: grant.code,
      code_verifier: grant.verifier,
    };
  },
};

/** authorization_code (confidential): client_id, client_secret, redirect_uri, code; no PKCE. */
export const AC_CONFIDENTIAL: ColumnSetup = {
  column: "AC-CONF",
  area: "token_authorization_code",
  async prepare(ctx) {
    const grant = await ctx.code("confidential");
    return {
      grant_type: "authorization_code",
      client_id: grant.client.client_id,
      client_secret: grant.client.client_secret,
      redirect_uri: grant.redirect_uri,
      code: grant.code,
    };
  },
};

export const cases: CaseDef[] = [
  ...cellCases(AC_PUBLIC),
  ...cellCases(AC_CONFIDENTIAL),
  {
    id: "TOKEN-AC-CODE-UNKNOWN",
    title: "A code the server never issued is refused with invalid_grant",
    area: "token_authorization_code",
    ref: "RFC 6749 §5.2 (invalid_grant)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.codeConfidential],
    async run(ctx) {
      const client = ctx.target.clients.public;
      const reply = await ctx.token({
        grant_type: "authorization_code",
        client_id: client.client_id,
        redirect_uri: client.redirect_uri,
        code: randomString(),
        code_verifier: makeVerifier(),
      });
      expectError(ctx, reply, ["invalid_grant"], "an unknown code");
    },
  },
  {
    id: "TOKEN-AC-CONF-SECRET-WRONG",
    title: "A confidential client's code with a wrong client_secret is refused with invalid_client",
    area: "token_authorization_code",
    ref: "RFC 6749 §4.1.3, §5.2 (invalid_client)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.codeConfidential],
    cells: [{ column: "AC-CONF", row: "client_secret" }],
    async run(ctx) {
      const grant = await ctx.code("confidential");
      const reply = await ctx.redeem(grant, { client_secret: `${grant.client.client_secret}-wrong` });
      expectError(ctx, reply, ["invalid_client"], "a wrong client_secret");
    },
  },
];
