/**
 * Token endpoint, refresh_token grant: the two refresh columns of the body-field table (RFC 6749 §6).
 * Rotation, reuse and client binding are in the security area.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { ALL, CONTROL } from "./profiles.ts";
import { expectError } from "../checks.ts";
import { randomString } from "../pkce.ts";
import { cellCases, type ColumnSetup } from "./body_fields.ts";

/** refresh_token (public): client_id, refresh_token. */
export const RT_PUBLIC: ColumnSetup = {
  column: "RT-PUB",
  area: "token_refresh",
  async prepare(ctx) {
    const t = await ctx.refreshToken("public");
    return { grant_type: "refresh_token", client_id: t.grant.client.client_id, refresh_token: t.refresh_token };
  },
};

/** refresh_token (confidential): client_id, client_secret, refresh_token. */
export const RT_CONFIDENTIAL: ColumnSetup = {
  column: "RT-CONF",
  area: "token_refresh",
  async prepare(ctx) {
    const t = await ctx.refreshToken("confidential");
    return {
      grant_type: "refresh_token",
      client_id: t.grant.client.client_id,
      client_secret: t.grant.client.client_secret,
      refresh_token: t.refresh_token,
    };
  },
};

export const cases: CaseDef[] = [
  ...cellCases(RT_PUBLIC),
  ...cellCases(RT_CONFIDENTIAL),
  {
    id: "TOKEN-RT-UNKNOWN",
    title: "A refresh token the server never issued is refused with invalid_grant",
    area: "token_refresh",
    ref: "RFC 6749 §6, §5.2 (invalid_grant)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.refreshConfidential],
    async run(ctx) {
      const reply = await ctx.refresh(ctx.target.clients.public, randomString());
      expectError(ctx, reply, ["invalid_grant"], "an unknown refresh token");
    },
  },
  {
    id: "TOKEN-RT-CONF-SECRET-WRONG",
    title: "A confidential client's refresh with a wrong client_secret is refused with invalid_client",
    area: "token_refresh",
    ref: "RFC 6749 §6, §5.2 (invalid_client)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.refreshConfidential],
    cells: [{ column: "RT-CONF", row: "client_secret" }],
    async run(ctx) {
      const t = await ctx.refreshToken("confidential");
      const client = t.grant.client;
      const reply = await ctx.refresh(client, t.refresh_token, { client_secret: `${client.client_secret}-wrong` });
      expectError(ctx, reply, ["invalid_client"], "a wrong client_secret");
    },
  },
];
