/**
 * Security rules for refresh tokens: binding to the client, rotation for public clients, reuse detection and
 * no scope widening (RFC 6749 §6, §10.4; RFC 9700 §2.2.2, §4.14).
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { ALL, BCP, CONTROL } from "./profiles.ts";
import { expectError, summary } from "../checks.ts";
import type { CaseContext } from "../context.ts";

/** A public client's refresh token, rotated once: returns the old and the new one. */
async function rotateOnce(ctx: CaseContext) {
  const first = await ctx.refreshToken("public");
  const client = first.grant.client;
  // The control: a first refresh that rotates (SEC-REFRESH-ROTATION is this step as a positive case).
  const next = await ctx.twin(await ctx.refresh(client, first.refresh_token), "the first refresh");
  const current = next.refresh_token;
  if (current === undefined || current === first.refresh_token) {
    return ctx.control(() => ctx.fail("A public client's refresh did not return a new refresh_token (RFC 9700 §4.14.2: rotation)", next.reply));
  }
  return { client, old: first.refresh_token, current };
}

export const cases: CaseDef[] = [
  {
    id: "SEC-REFRESH-CLIENT-BINDING",
    title: "A refresh token issued to one client is refused when another client presents it",
    area: "security",
    ref: "RFC 6749 §10.4 (MUST maintain the binding to the client), §6, §5.2 (invalid_grant)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.refreshPublic, CONTROL.refreshConfidential],
    cells: [{ column: "RT-PUB", row: "refresh_token" }, { column: "RT-CONF", row: "refresh_token" }],
    async run(ctx) {
      const other = ctx.target.clients.second;
      for (const role of ["public", "confidential"] as const) {
        const t = await ctx.refreshToken(role);
        const reply = await ctx.refresh(other, t.refresh_token);
        expectError(ctx, reply, ["invalid_grant"], `a ${role} client's refresh token presented by "${other.client_id}"`);
      }
    },
  },
  {
    id: "SEC-REFRESH-ROTATION",
    title: "A public client's refresh returns a new refresh token",
    area: "security",
    ref: "RFC 9700 §2.2.2, §4.14.2 (public clients: sender-constrained or rotated refresh tokens)",
    level: "MUST",
    profiles: BCP,
    needs: [CONTROL.refreshPublic],
    positive: true,
    cells: [{ column: "RT-PUB", row: "refresh_token" }],
    async run(ctx) {
      await rotateOnce(ctx);
    },
  },
  {
    id: "SEC-REFRESH-ROTATED-REJECTED",
    title: "A refresh token that was rotated out is refused with invalid_grant",
    area: "security",
    ref: "RFC 9700 §4.14.2 (the previous refresh token is invalidated)",
    level: "MUST",
    profiles: BCP,
    needs: [CONTROL.refreshPublic],
    cells: [{ column: "RT-PUB", row: "refresh_token" }],
    async run(ctx) {
      const { client, old } = await rotateOnce(ctx);
      expectError(ctx, await ctx.refresh(client, old), ["invalid_grant"], "reusing the rotated refresh token");
    },
  },
  {
    id: "SEC-REFRESH-REUSE-REVOKES",
    title: "Reusing a rotated refresh token revokes the newest one of its family too",
    area: "security",
    ref: "RFC 9700 §4.14.2 (on reuse, the active refresh token is revoked)",
    level: "SHOULD",
    profiles: BCP,
    needs: [CONTROL.refreshPublic],
    async run(ctx) {
      const { client, old, current } = await rotateOnce(ctx);
      await ctx.refresh(client, old);
      const reply = await ctx.refresh(client, current);
      ctx.check(reply.status >= 400, `The newest refresh token still works after a reuse: ${summary(reply)}`, reply);
    },
  },
  {
    id: "SEC-REFRESH-SCOPE-NO-WIDENING",
    title: "A refresh cannot widen the scope beyond what was granted",
    area: "security",
    ref: "RFC 6749 §6 (MUST NOT include any scope not originally granted), §5.2 (invalid_scope)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.refreshPublic],
    cells: [{ column: "RT-PUB", row: "scope" }, { column: "RT-CONF", row: "scope" }],
    async run(ctx) {
      let tried = 0;
      for (const role of ["public", "confidential"] as const) {
        const extra = ctx.target.clients[role].extra_scope;
        if (extra === undefined) continue;
        tried++;
        const t = await ctx.refreshToken(role);
        const reply = await ctx.refresh(t.grant.client, t.refresh_token, { scope: extra });
        // invalid_request too: the spec table says scope is "not sent" on refresh.
        expectError(ctx, reply, ["invalid_scope", "invalid_request"], `a ${role} refresh asking for scope "${extra}" (granted "${t.grant.scope}")`);
      }
      if (tried === 0) ctx.skip("Neither clients.public.extra_scope nor clients.confidential.extra_scope is set");
    },
  },
  {
    id: "SEC-REFRESH-ROTATION-CONFIDENTIAL",
    title: "A confidential client's refresh token is rotated too, and the old one refused",
    area: "security",
    ref: "RFC 9700 §4.14.2 (refresh token rotation); RFC 6749 §6 (MAY issue a new refresh token)",
    level: "SHOULD",
    profiles: BCP,
    needs: [CONTROL.refreshConfidential],
    async run(ctx) {
      const first = await ctx.refreshToken("confidential");
      const client = first.grant.client;
      const next = await ctx.twin(await ctx.refresh(client, first.refresh_token), "the first refresh");
      ctx.check(next.refresh_token !== undefined && next.refresh_token !== first.refresh_token, "The refresh returned no new refresh_token", next.reply);
      expectError(ctx, await ctx.refresh(client, first.refresh_token), ["invalid_grant"], "the rotated-out refresh token");
    },
  },
  {
    id: "SEC-REFRESH-REUSE-KILLS-ALL",
    title: "After a refresh token reuse, every token of the grant is dead: refresh tokens and access tokens",
    area: "security",
    ref: "RFC 9700 §4.14.2 (on reuse, invalidate the refresh tokens of the grant); RFC 6749 §10.4",
    level: "SHOULD",
    profiles: BCP,
    needs: [CONTROL.refreshPublic],
    async run(ctx) {
      const resource = ctx.target.resource;
      const first = await ctx.refreshToken("public");
      const client = first.grant.client;
      const next = await ctx.twin(await ctx.refresh(client, first.refresh_token), "the first refresh");
      if (next.refresh_token === undefined || next.refresh_token === first.refresh_token) return ctx.skip("The refresh token was not rotated");
      const call = (token: string) => ctx.http.send("GET", resource!.url, { headers: { authorization: `Bearer ${token}`, accept: "application/json" } });
      const scoped = resource !== undefined && resource.scope === client.scope;
      if (scoped) {
        const before = await call(next.access_token);
        if (before.status !== 200) return ctx.skip(`The resource does not take the public client's token (${summary(before)})`);
      }
      await ctx.refresh(client, first.refresh_token);
      const rt = await ctx.refresh(client, next.refresh_token);
      ctx.check(rt.status >= 400, `The newest refresh token still works after the reuse: ${summary(rt)}`, rt);
      if (!scoped) return "Access tokens not checked: the target's resource does not take the public client's scope";
      for (const [what, token] of [["the first access token", first.access_token], ["the newest access token", next.access_token]] as const) {
        const reply = await call(token);
        ctx.check(reply.status === 401, `${what} still works at the resource after the reuse: ${summary(reply)}`, reply);
      }
    },
  },
];
