// Code redemption edges that mutation testing (issue 15 item 12) showed no test held: the loser of a concurrent
// redemption. Through `server.fetch`, with the store injected as any deployment injects one, so vitest, bun and
// deno run it.
import { expect, test } from "vitest";
import type { AuditEvent } from "../mod.ts";
import { errorOf, fixture, postToken, REDIRECT, SECRETS, webCode } from "./helpers.ts";

/** Holds every caller until `count` of them arrived, then lets them all go on together. */
function barrier(count: number): () => Promise<void> {
  let waiting: (() => void)[] = [];
  return () => new Promise((resolve) => {
    waiting.push(resolve);
    if (waiting.length === count) {
      for (const go of waiting) go();
      waiting = [];
    }
  });
}

test("two concurrent redemptions of one code: both read it unspent, one wins, the loser's replay revokes the grant", async () => {
  const events: AuditEvent[] = [];
  const f = await fixture({ onEvent: (event) => events.push(event) });
  const code = await webCode(f.server);
  // Both requests find the code unredeemed, so the store's atomic redemption alone decides (the race loser).
  const find = f.storage.findCode.bind(f.storage);
  const bothRead = barrier(2);
  f.storage.findCode = async (hash, now) => {
    const record = await find(hash, now);
    await bothRead();
    return record;
  };
  const redeem = () => postToken(f.server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code });
  const responses = await Promise.all([redeem(), redeem()]);
  expect(responses.map((r) => r.status).sort()).toEqual([200, 400]);
  const winner = await responses.find((r) => r.status === 200)!.json();
  expect(await errorOf(responses.find((r) => r.status === 400)!)).toMatchObject({ error: "invalid_grant" });
  // RFC 6749 §4.1.2: a code used twice revokes what it issued; the winner may be the attacker.
  await expect(f.server.verifyAuthorization(`Bearer ${winner.access_token}`)).rejects.toMatchObject({ code: "invalid_token" });
  const refreshed = await postToken(f.server, { grant_type: "refresh_token", client_id: "web", client_secret: SECRETS.web, refresh_token: winner.refresh_token });
  expect(await errorOf(refreshed)).toMatchObject({ error: "invalid_grant" });
  expect(events.filter((e) => e.type === "code.replayed")).toEqual([
    expect.objectContaining({ client_id: "web", user_id: "alice", grant_id: expect.any(String) }),
  ]);
});
