// Refresh rotation edges that mutation testing (issue 15 item 12) showed no test held: the loser of a concurrent
// rotation, reuse that also fails another check, and the grace window's edge. Through `server.fetch`, with the
// store injected as any deployment injects one, so vitest, bun and deno run it.
import { describe, expect, test } from "vitest";
import type { AuditEvent } from "../mod.ts";
import { barrier, errorOf, type Fixture, fixture, postToken, spaTokens } from "./helpers.ts";

const refresh = (f: Fixture, token: string, extra: Record<string, string> = {}) =>
  postToken(f.server, { grant_type: "refresh_token", client_id: "spa", refresh_token: token, ...extra });

/** Whether an access token still works at the resource guard. */
const works = (f: Fixture, access: string) =>
  f.server.verifyAuthorization(`Bearer ${access}`).then(() => true, () => false);

describe("two concurrent refreshes with one token (no grace window)", () => {
  test("both read the token before either rotates it: one wins, the other is a reuse that revokes the grant", async () => {
    const events: AuditEvent[] = [];
    const f = await fixture({ onEvent: (event) => events.push(event) });
    const issued = await spaTokens(f.server);
    // Both requests find the token unrotated, so the store's atomic rotation alone decides (the race loser).
    const find = f.storage.findRefreshToken.bind(f.storage);
    const bothRead = barrier(2);
    f.storage.findRefreshToken = async (hash, now) => {
      const record = await find(hash, now);
      await bothRead();
      return record;
    };
    const responses = await Promise.all([refresh(f, issued.refresh_token), refresh(f, issued.refresh_token)]);
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 400]);
    const winner = await responses.find((r) => r.status === 200)!.json();
    expect(await errorOf(responses.find((r) => r.status === 400)!)).toMatchObject({ error: "invalid_grant" });
    // RFC 9700 §4.14.2: one of the two holders is an attacker; the winner's new pair dies with the grant.
    f.storage.findRefreshToken = find;
    expect(await works(f, winner.access_token)).toBe(false);
    expect(await errorOf(await refresh(f, winner.refresh_token))).toMatchObject({ error: "invalid_grant" });
    expect(events.filter((e) => e.type === "refresh.reuse_detected")).toEqual([
      expect.objectContaining({ client_id: "spa", user_id: "alice", grant_id: expect.any(String) }),
    ]);
  });
});

describe("reuse of a rotated refresh token that fails another check too", () => {
  test.each([
    ["a scope it was never granted", { scope: "write" }],
    ["a malformed scope", { scope: "read\u0001" }],
    ["a resource it was not bound to", { resource: "https://elsewhere.example/api" }],
  ])("with %s: invalid_grant, and the grant is revoked", async (_, extra) => {
    // With resources configured, so that a resource parameter is checked (RFC 8707), not ignored.
    const f = await fixture({ resources: ["https://api.example.com/"] });
    const issued = await spaTokens(f.server);
    const next = await (await refresh(f, issued.refresh_token)).json();
    // Reuse is detected before anything else is checked: an attacker cannot dodge revocation by adding a bad field.
    expect(await errorOf(await refresh(f, issued.refresh_token, extra))).toMatchObject({ error: "invalid_grant" });
    expect(await works(f, next.access_token)).toBe(false);
    expect(await errorOf(await refresh(f, next.refresh_token))).toMatchObject({ error: "invalid_grant" });
  });
});

describe("the grace window's edge (refreshGraceSeconds: 10)", () => {
  test("the predecessor retried 1 ms before the window ends works; at its end it is reuse, even with a bad scope", async () => {
    const early = await fixture({ refreshGraceSeconds: 10 });
    const a = await spaTokens(early.server);
    const first = await (await refresh(early, a.refresh_token)).json();
    early.clock.now += 10_000 - 1;
    const retry = await refresh(early, a.refresh_token);
    expect(retry.status).toBe(200);
    expect(await works(early, first.access_token)).toBe(true);

    const late = await fixture({ refreshGraceSeconds: 10 });
    const b = await spaTokens(late.server);
    const next = await (await refresh(late, b.refresh_token)).json();
    late.clock.now += 10_000;
    expect(await errorOf(await refresh(late, b.refresh_token, { scope: "write" }))).toMatchObject({ error: "invalid_grant" });
    expect(await works(late, next.access_token)).toBe(false);
  });

  test("inside the window, a retry that asks a scope never granted is refused and revokes nothing", async () => {
    const f = await fixture({ refreshGraceSeconds: 10 });
    const issued = await spaTokens(f.server);
    const next = await (await refresh(f, issued.refresh_token)).json();
    f.clock.advance(1);
    expect(await errorOf(await refresh(f, issued.refresh_token, { scope: "write" }))).toMatchObject({ error: "invalid_scope" });
    expect(await works(f, next.access_token)).toBe(true);
    expect((await refresh(f, next.refresh_token)).status).toBe(200);
  });
});
