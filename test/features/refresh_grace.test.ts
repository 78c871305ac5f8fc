// The refresh grace window (issue 11 item 8): opt-in; inside it, a retry with the immediate predecessor of the
// latest refresh token succeeds without revoking the grant; outside it, or for an older token, reuse revokes.
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

test("by default (0) any reuse revokes the grant at once", async () => {
  const { server } = await mcpFixture();
  const { body } = await codeFlow(server, {});
  const first = await refresh(server, String(body.refresh_token));
  expect((await refresh(server, String(body.refresh_token))).body.error).toBe("invalid_grant");
  expect((await refresh(server, first.body.refresh_token!)).body.error).toBe("invalid_grant");
  await expect(mcpFixture({ refreshGraceSeconds: -1 })).rejects.toThrow(/refreshGraceSeconds/);
});
