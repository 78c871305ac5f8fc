/**
 * Security rules for authorization codes and PKCE that a black box can observe: single use, binding to the
 * client and the redirect_uri, and PKCE (RFC 6749 §4.1.2, §4.1.3, §10.5; RFC 7636; RFC 9700 §2.1.1, §4.8).
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { ALL, BCP, CONTROL } from "./profiles.ts";
import { expectError, expectRedirectError, expectTokens, summary } from "../checks.ts";
import type { CaseContext, CodeGrant } from "../context.ts";
import { makeVerifier } from "../pkce.ts";

/** A code redeemed by the second client, with the code owner's redirect_uri so that only the binding differs. */
async function redeemByOther(ctx: CaseContext, grant: CodeGrant) {
  const other = ctx.target.clients.second;
  return ctx.redeem(grant, { client_id: other.client_id, client_secret: other.client_secret });
}

/** A redirect_uri that differs from the registered one only at the end of its path. */
function otherRedirect(uri: string): string {
  const url = new URL(uri);
  url.pathname = `${url.pathname}x`;
  return url.href;
}

export const cases: CaseDef[] = [
  {
    id: "SEC-CODE-REPLAY",
    title: "An authorization code can be redeemed only once",
    area: "security",
    ref: "RFC 6749 §4.1.2 (MUST NOT be used more than once), §10.5",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.codePublic, CONTROL.codeConfidential],
    cells: [{ column: "AC-PUB", row: "code" }, { column: "AC-CONF", row: "code" }],
    async run(ctx) {
      for (const role of ["public", "confidential"] as const) {
        const grant = await ctx.code(role);
        await ctx.twin(await ctx.redeem(grant), `the first redemption of a ${role} client's code`);
        expectError(ctx, await ctx.redeem(grant), ["invalid_grant"], `the second redemption of a ${role} client's code`);
      }
    },
  },
  {
    id: "SEC-CODE-REPLAY-REVOKES",
    title: "Redeeming a code twice revokes the tokens issued from it",
    area: "security",
    ref: "RFC 6749 §4.1.2 (SHOULD revoke all tokens issued from the code)",
    level: "SHOULD",
    profiles: ALL,
    needs: [CONTROL.codeConfidential, CONTROL.refreshConfidential],
    async run(ctx) {
      const first = await ctx.refreshToken("confidential");
      await ctx.redeem(first.grant);
      const reply = await ctx.refresh(first.grant.client, first.refresh_token);
      ctx.check(reply.status >= 400, `The refresh token issued from a replayed code still works: ${summary(reply)}`, reply);
    },
  },
  {
    id: "SEC-CODE-CLIENT-BINDING",
    title: "A code issued to one client is refused when another client redeems it",
    area: "security",
    ref: "RFC 6749 §4.1.3 (ensure the code was issued to the client), §5.2 (invalid_grant)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.codePublic, CONTROL.codeConfidential],
    cells: [{ column: "AC-PUB", row: "code" }, { column: "AC-CONF", row: "code" }],
    async run(ctx) {
      for (const role of ["public", "confidential"] as const) {
        const grant = await ctx.code(role);
        // invalid_request too: a server may first notice that the redirect_uri is not the other client's.
        expectError(ctx, await redeemByOther(ctx, grant), ["invalid_grant", "invalid_request"], `a ${role} client's code redeemed by "${ctx.target.clients.second.client_id}"`);
      }
    },
  },
  {
    id: "SEC-CODE-REDIRECT_URI-MISMATCH",
    title: "A token request whose redirect_uri differs from the authorization request's is refused",
    area: "security",
    ref: "RFC 6749 §4.1.3 (redirect_uri values identical), §5.2 (invalid_grant)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.codePublic, CONTROL.codeConfidential],
    cells: [{ column: "AC-PUB", row: "redirect_uri" }, { column: "AC-CONF", row: "redirect_uri" }],
    async run(ctx) {
      for (const role of ["public", "confidential"] as const) {
        const grant = await ctx.code(role);
        const uri = otherRedirect(grant.redirect_uri);
        expectError(ctx, await ctx.redeem(grant, { redirect_uri: uri }), ["invalid_grant", "invalid_request"], `a ${role} code redeemed with redirect_uri ${uri}`);
      }
    },
  },
  {
    id: "SEC-PKCE-VERIFIER-MISMATCH",
    title: "A code_verifier that does not match the code_challenge is refused with invalid_grant",
    area: "security",
    ref: "spec §4.2 rule 3; RFC 7636 §4.6",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.codePublic],
    cells: [{ column: "AC-PUB", row: "code_verifier" }],
    async run(ctx) {
      const grant = await ctx.code("public");
      expectError(ctx, await ctx.redeem(grant, { code_verifier: makeVerifier() }), ["invalid_grant"], "another well-formed code_verifier");
    },
  },
  {
    id: "SEC-PKCE-VERIFIER-SYNTAX",
    title: "A code_verifier that breaks RFC 7636 syntax is refused, even when it matches the challenge",
    area: "security",
    ref: "RFC 7636 §4.1 (43-128 unreserved characters), §4.6",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.codePublic],
    cells: [{ column: "AC-PUB", row: "code_verifier" }],
    async run(ctx) {
      const bad: [string, string][] = [
        ["42 characters", makeVerifier(42)],
        ["129 characters", makeVerifier(129)],
        ["a character outside the unreserved set", `${makeVerifier(42)}+`],
      ];
      for (const [what, verifier] of bad) {
        const grant = await ctx.code("public", { verifier });
        expectError(ctx, await ctx.redeem(grant), ["invalid_request", "invalid_grant"], `a code_verifier of ${what}`);
      }
    },
  },
  {
    id: "SEC-PKCE-DOWNGRADE",
    title: "A code_verifier for a code issued without a code_challenge is refused",
    area: "security",
    ref: "spec §4.2 table (code_verifier not sent × confidential); RFC 9700 §2.1.1, §4.8.2",
    level: "MUST",
    profiles: BCP,
    needs: [CONTROL.codeConfidential],
    cells: [{ column: "AC-CONF", row: "code_verifier" }],
    async run(ctx) {
      const grant = await ctx.code("confidential", { pkce: false });
      const reply = await ctx.redeem(grant, { code_verifier: makeVerifier() });
      expectError(ctx, reply, ["invalid_request", "invalid_grant"], "a code_verifier for a code without a challenge");
    },
  },
  {
    id: "SEC-PKCE-CONFIDENTIAL",
    title: "PKCE works for a confidential client, and is enforced once a challenge was sent",
    area: "security",
    ref: "RFC 9700 §2.1.1 (MUST support PKCE; MUST enforce the code_verifier when a challenge was sent)",
    level: "MUST",
    profiles: BCP,
    needs: [CONTROL.codeConfidential],
    async run(ctx) {
      const withPkce = await ctx.code("confidential", { pkce: true });
      expectTokens(ctx, await ctx.redeem(withPkce), "a confidential client's code with PKCE");
      const again = await ctx.code("confidential", { pkce: true });
      expectError(ctx, await ctx.redeem(again, { code_verifier: undefined }), ["invalid_request", "invalid_grant"], "a confidential client's PKCE code without code_verifier");
    },
  },
  {
    id: "SEC-PKCE-PUBLIC-REQUIRED",
    title: "A public client gets no token without PKCE",
    area: "security",
    ref: "spec §4.1 (code_challenge for public clients), §4.2 table (code_verifier required × public); RFC 9700 §2.1.1",
    level: "MUST",
    profiles: BCP,
    needs: [CONTROL.authorize, CONTROL.codePublic],
    cells: [{ column: "AC-PUB", row: "code_verifier" }],
    async run(ctx) {
      const client = ctx.target.clients.public;
      const params = ctx.authorizeParams(client);
      const outcome = await ctx.outcome(ctx.authorizeUrl(params));
      if (outcome.kind === "refused") return `Refused at the authorization endpoint (${outcome.message})`;
      const code = outcome.url.searchParams.get("code");
      if (code === null) {
        expectRedirectError(ctx, outcome, ["invalid_request"], params.state, "a public client without code_challenge (RFC 7636 §4.4.1)");
        return "Refused by redirect with invalid_request";
      }
      const reply = await ctx.token({ grant_type: "authorization_code", client_id: client.client_id, redirect_uri: client.redirect_uri, code });
      expectError(ctx, reply, ["invalid_request", "invalid_grant"], "a public client's code without PKCE");
      return "The code was issued, and refused at the token endpoint";
    },
  },
  {
    id: "SEC-PKCE-VERIFIER-OTHER-REQUEST",
    title: "A code_verifier of another authorization request is refused",
    area: "security",
    ref: "RFC 7636 §4.6 (the verifier must match this code's challenge); RFC 9700 §4.8",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.codePublic],
    cells: [{ column: "AC-PUB", row: "code_verifier" }],
    async run(ctx) {
      const mine = await ctx.code("public");
      const other = await ctx.code("public");
      // Both are live: the other request's verifier is valid, just not for this code.
      expectError(ctx, await ctx.redeem(mine, { code_verifier: other.verifier }), ["invalid_grant"], "the code_verifier of another request");
      await ctx.twin(await ctx.redeem(other), "redeeming the other code with its own verifier");
    },
  },
  {
    id: "SEC-PKCE-NOT-CLIENT-AUTH",
    title: "PKCE does not replace a confidential client's authentication",
    area: "security",
    ref: "RFC 6749 §4.1.3 (authenticate a confidential client), §3.2.1; RFC 9700 §2.1.1 (PKCE is no client authentication)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.codeConfidential],
    async run(ctx) {
      const grant = await ctx.code("confidential", { pkce: true });
      const reply = await ctx.redeem(grant, { client_secret: undefined });
      expectError(ctx, reply, ["invalid_client", "invalid_request"], "a confidential client's PKCE code redeemed with the verifier but no client_secret");
    },
  },
  {
    id: "SEC-CODE-EXPIRED",
    title: "An authorization code is refused once it has expired",
    area: "security",
    ref: "RFC 6749 §4.1.2 (short lifetime, 10 minutes maximum RECOMMENDED), §5.2 (invalid_grant: expired)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.codeConfidential],
    async run(ctx) {
      if (!ctx.hasClock) {
        ctx.skip('Needs a settable clock: set "clock.url" in the target file (or pass `clock` in process), and "code_lifetime_s"');
      }
      const grant = await ctx.code("confidential");
      await ctx.advanceClock((ctx.target.code_lifetime_s + 60) * 1000);
      expectError(ctx, await ctx.redeem(grant), ["invalid_grant"], `a code redeemed ${ctx.target.code_lifetime_s + 60} s after it was issued`);
    },
  },
];
