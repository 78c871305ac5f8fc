// The refresh grace window: opt-in; inside it, a retry with the immediate predecessor of the latest refresh token
// succeeds without revoking the grant, and gets the successor already issued (never a second chain); outside it,
// or for an older token, reuse revokes.
import { describe, expect, test } from "vitest";
import { codeFlow, mcpFixture, post } from "../mcp_helpers.ts";

const refresh = async (server: Parameters<typeof post>[0], token: string) => {
  const response = await post(server, "/token", { grant_type: "refresh_token", client_id: "cli", refresh_token: token });
  return { status: response.status, body: await response.json() as Record<string, string> };
};

describe("with refreshGraceSeconds: 10", () => {
  test("two processes refreshing with one token both succeed; the grant lives on", async () => {
    const { server, clock } = await mcpFixture({ refreshGraceSeconds: 10 });
    const { body } = await codeFlow(server, {});
    const first = await refresh(server, String(body.refresh_token));
    clock.advance(2);
    const retry = await refresh(server, String(body.refresh_token));
    expect([first.status, retry.status]).toEqual([200, 200]);
    expect(retry.body.refresh_token, "the retry gets the same successor").toBe(first.body.refresh_token);
    expect(retry.body.access_token).not.toBe(first.body.access_token);
    expect((await server.verifyAuthorization(`Bearer ${first.body.access_token}`)).client_id).toBe("cli");
    expect((await refresh(server, first.body.refresh_token!)).status).toBe(200);
  });

  test("after the window, reuse of the predecessor revokes the grant", async () => {
    const { server, clock } = await mcpFixture({ refreshGraceSeconds: 10 });
    const { body } = await codeFlow(server, {});
    const first = await refresh(server, String(body.refresh_token));
    clock.advance(11);
    expect((await refresh(server, String(body.refresh_token))).body.error).toBe("invalid_grant");
    expect((await refresh(server, first.body.refresh_token!)).body.error).toBe("invalid_grant");
  });

  test("an older token than the immediate predecessor revokes the grant even inside the window", async () => {
    const { server } = await mcpFixture({ refreshGraceSeconds: 10 });
    const { body } = await codeFlow(server, {});
    const first = await refresh(server, String(body.refresh_token));
    const second = await refresh(server, first.body.refresh_token!);
    expect(second.status).toBe(200);
    expect((await refresh(server, String(body.refresh_token))).body.error).toBe("invalid_grant");
    expect((await refresh(server, second.body.refresh_token!)).body.error).toBe("invalid_grant");
  });
});

describe("with refreshGraceSeconds: 3, a stolen token replayed inside the window", () => {
  const live = (server: Parameters<typeof post>[0], token: string) =>
    server.verifyAuthorization(`Bearer ${token}`).then(() => true, () => false);

  test("starts no second chain: when both go on refreshing after the window, the second is caught and the grant revoked", async () => {
    const { server, clock } = await mcpFixture({ refreshGraceSeconds: 3 });
    const { body } = await codeFlow(server, {});
    const stolen = String(body.refresh_token);
    const victim = await refresh(server, stolen);
    clock.advance(1);
    const attacker = await refresh(server, stolen);
    expect([victim.status, attacker.status]).toEqual([200, 200]);
    expect(attacker.body.refresh_token, "the replay gets the victim's successor, not a chain of its own").toBe(victim.body.refresh_token);
    // Both hold one refresh token, and go on refreshing with it after the window: whichever comes second, more
    // than the window after the first, presents a rotated token.
    clock.advance(5);
    const one = await refresh(server, victim.body.refresh_token!);
    clock.advance(4);
    const other = await refresh(server, attacker.body.refresh_token!);
    expect(one.status).toBe(200);
    expect(other.body.error, "the second rotation of one token is reuse").toBe("invalid_grant");
    expect((await refresh(server, one.body.refresh_token!)).body.error, "the grant is revoked").toBe("invalid_grant");
    const tokens = [body.access_token, victim.body.access_token, attacker.body.access_token, one.body.access_token];
    expect(await Promise.all(tokens.map((t) => live(server, String(t)))), "every access token of the grant is dead").toEqual([false, false, false, false]);
  });
});

test("by default (0) any reuse revokes the grant at once", async () => {
  const { server } = await mcpFixture();
  const { body } = await codeFlow(server, {});
  const first = await refresh(server, String(body.refresh_token));
  expect((await refresh(server, String(body.refresh_token))).body.error).toBe("invalid_grant");
  expect((await refresh(server, first.body.refresh_token!)).body.error).toBe("invalid_grant");
  await expect(mcpFixture({ refreshGraceSeconds: -1 })).rejects.toThrow(/refreshGraceSeconds/);
});
