/**
 * Concurrency: a code redeemed, or a refresh token rotated, by several requests at once. A store that checks
 * and then deletes in two steps lets more than one win the race (RFC 6749 §4.1.2: a code MUST NOT be used
 * more than once; RFC 9700 §4.14.2: a rotated refresh token is invalidated). Only a black box that sends
 * the requests in parallel can see it.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { summary } from "../checks.ts";
import type { Reply } from "../http.ts";
import { ALL, BCP, CONTROL } from "./profiles.ts";

/** How many requests race. */
export const RACERS = 8;

/** Sends `RACERS` copies of a request at once; returns the replies, the successes first. */
async function race(send: () => Promise<Reply>): Promise<{ won: Reply[]; replies: Reply[] }> {
  const replies = await Promise.all(Array.from({ length: RACERS }, send));
  const won = replies.filter((r) => r.status === 200 && typeof (r.json as { access_token?: unknown } | undefined)?.access_token === "string");
  return { won, replies };
}

export const cases: CaseDef[] = [
  {
    id: "CONC-CODE-PARALLEL",
    title: `Of ${RACERS} parallel redemptions of one code, at most one gets tokens`,
    area: "concurrency",
    ref: "RFC 6749 §4.1.2 (MUST NOT be used more than once), §10.5; RFC 9700 §4.2",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.codeConfidential],
    async run(ctx) {
      const grant = await ctx.code("confidential");
      const { won, replies } = await race(() => ctx.redeem(grant));
      // The control: one of them must have won, or the race says nothing.
      if (won.length === 0) return ctx.control(() => ctx.fail(`No parallel redemption succeeded: ${replies.map(summary).join(", ")}`, replies[0]));
      ctx.check(won.length === 1, `${won.length} of ${RACERS} parallel redemptions of one code got tokens`, won.slice(0, 2));
    },
  },
  {
    id: "CONC-REFRESH-PARALLEL",
    title: `Of ${RACERS} parallel rotations of one refresh token, at most one gets tokens`,
    area: "concurrency",
    ref: "RFC 9700 §4.14.2 (refresh token rotation: the previous token is invalidated); RFC 6749 §6",
    level: "MUST",
    profiles: BCP,
    needs: [CONTROL.refreshPublic],
    async run(ctx) {
      const t = await ctx.refreshToken("public");
      const { won, replies } = await race(() => ctx.refresh(t.grant.client, t.refresh_token));
      if (won.length === 0) return ctx.control(() => ctx.fail(`No parallel refresh succeeded: ${replies.map(summary).join(", ")}`, replies[0]));
      ctx.check(won.length === 1, `${won.length} of ${RACERS} parallel refreshes of one refresh token got tokens`, won.slice(0, 2));
    },
  },
];
