// The authorization_code grant (RFC 6749 §4.1.3, RFC 7636 §4.5-4.6, RFC 9700 §4.5): single use, PKCE, replay.
import { describe, expect, test } from "vitest";
import type { AuditEvent } from "../../mod.ts";
import {
  barrier, bearer, errorOf, fixture, pkce, postToken, REDIRECT, SECRETS, spaCode, spaTokens, webCode,
} from "../helpers.ts";

test("two concurrent redemptions of one code: both read it unspent, one wins, the loser's replay revokes the grant", async () => {
  const events: AuditEvent[] = [];
  const f = await fixture({ onEvent: (event) => events.push(event) });
  const code = await webCode(f.server);
  // Both requests find the code unredeemed, so the store's atomic redemption alone decides (the race loser).
  const find = f.storage.findCode.bind(f.storage);
  const bothRead = barrier(2);
  // The first read of each: the loser reads again, without waiting, once its redemption fails.
  let reads = 0;
  f.storage.findCode = async (...args) => {
    const record = await find(...args);
    if (++reads <= 2) await bothRead();
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

describe("a code exchange that lacks a field says which", () => {
  const exchange = (server: Awaited<ReturnType<typeof fixture>>["server"], fields: Record<string, string>) =>
    postToken(server, { grant_type: "authorization_code", ...fields });

  test.each([
    ["code", { client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT }, "The code parameter is required"],
    ["redirect_uri", { client_id: "web", client_secret: SECRETS.web, code: "x" }, "The redirect_uri parameter is required"],
    ["code_verifier (a public client)", { client_id: "spa", code: "x", redirect_uri: REDIRECT }, "The code_verifier parameter is required"],
  ])("no %s: invalid_request", async (_, fields, description) => {
    const { server } = await fixture();
    expect(await errorOf(await exchange(server, fields))).toEqual({ status: 400, error: "invalid_request", description });
  });

  test("a malformed code_verifier: invalid_request saying so, before the code is looked at", async () => {
    const { server } = await fixture();
    expect(await errorOf(await exchange(server, { client_id: "spa", code: "x", redirect_uri: REDIRECT, code_verifier: "short" })))
      .toEqual({ status: 400, error: "invalid_request", description: "The code_verifier is malformed" });
  });

  test("a confidential client's code issued with a challenge: the verifier is required", async () => {
    const { server } = await fixture();
    const { challenge } = await pkce();
    const code = await webCode(server, { code_challenge: challenge, code_challenge_method: "S256" });
    expect(await errorOf(await exchange(server, { client_id: "web", client_secret: SECRETS.web, code, redirect_uri: REDIRECT })))
      .toEqual({ status: 400, error: "invalid_request", description: "The code_verifier parameter is required" });
  });
});

describe("grant errors say what went wrong", () => {
  test("an unknown code, a PKCE downgrade and a scope the client lost", async () => {
    const { server } = await fixture();
    const exchange = (fields: Record<string, string>) => postToken(server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, ...fields });
    expect(await errorOf(await exchange({ code: "unknown" })))
      .toEqual({ status: 400, error: "invalid_grant", description: "The authorization code is invalid or has expired" });
    const { verifier } = await pkce();
    expect(await errorOf(await exchange({ code: await webCode(server), code_verifier: verifier })))
      .toEqual({ status: 400, error: "invalid_request", description: "A code_verifier was sent for a code issued without code_challenge" });
    const code = await webCode(server);
    await server.clients.register({ client_id: "web", client_secret: SECRETS.web, name: "Web app", type: "confidential", redirect_uris: [REDIRECT], scopes: ["write"] });
    expect(await errorOf(await exchange({ code })))
      .toEqual({ status: 400, error: "invalid_scope", description: "The scope is no longer allowed for this client" });
  });

  test("a refresh without a token, and one whose scope the client lost", async () => {
    const { server } = await fixture();
    expect(await errorOf(await postToken(server, { grant_type: "refresh_token", client_id: "spa" })))
      .toEqual({ status: 400, error: "invalid_request", description: "The refresh_token parameter is required" });
    expect(await errorOf(await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: "unknown" })))
      .toEqual({ status: 400, error: "invalid_grant", description: "The refresh token is invalid, expired or revoked" });
    const { refresh_token } = await spaTokens(server);
    await server.clients.register({ client_id: "spa", name: "Single-page app", type: "public", redirect_uris: [REDIRECT], scopes: ["write"] });
    expect(await errorOf(await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token })))
      .toEqual({ status: 400, error: "invalid_scope", description: "The scope is no longer allowed for this client" });
  });

  test("a replay by the code's own client is reported with the grant it revoked", async () => {
    const events: AuditEvent[] = [];
    const { server } = await fixture({ onEvent: (event) => events.push(event) });
    const code = await webCode(server);
    const fields = { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code };
    expect((await postToken(server, fields)).status).toBe(200);
    const grant = events.find((e) => e.type === "code.redeemed")!.grant_id;
    expect(await errorOf(await postToken(server, fields))).toEqual({ status: 400, error: "invalid_grant", description: "The authorization code was already used" });
    expect(events.filter((e) => e.type === "code.replayed")).toEqual([{ type: "code.replayed", time: expect.any(Number), client_id: "web", user_id: "alice", grant_id: grant }]);
  });
});

test("a spent code without a challenge, replayed after its client became public, is refused without a 500 and revokes nothing", async () => {
  const { server } = await fixture();
  const code = await webCode(server);
  const tokens = await (await postToken(server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code })).json();
  // Re-registered as a public client: it can prove itself only by the code's verifier, and this code has no challenge.
  await server.clients.register({ client_id: "web", name: "Web app", type: "public", redirect_uris: [REDIRECT], scopes: ["read"] });
  const { verifier } = await pkce();
  const replay = await postToken(server, { grant_type: "authorization_code", client_id: "web", redirect_uri: REDIRECT, code, code_verifier: verifier });
  expect(await errorOf(replay)).toEqual({ status: 400, error: "invalid_grant", description: "The authorization code was already used" });
  await expect(server.verifyAuthorization(`Bearer ${tokens.access_token}`)).resolves.toMatchObject({ client_id: "web" });
});

describe("single use and PKCE", () => {
  const exchangeSpa = (server: Awaited<ReturnType<typeof fixture>>["server"], code: string, verifier: string) =>
    postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier });

  const refresh = (server: Awaited<ReturnType<typeof fixture>>["server"], token: string, extra: Record<string, string> = {}) =>
    postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: token, ...extra });

  describe("authorization codes", () => {
    test("are single-use, and a replay revokes every token issued from the code", async () => {
      const { server } = await fixture();
      const { code, verifier } = await spaCode(server);
      const first = await exchangeSpa(server, code, verifier);
      expect(first.status).toBe(200);
      const tokens = await first.json();
      await expect(bearer(server, tokens.access_token)).resolves.toMatchObject({ user_id: "alice", scope: "read" });

      const replay = await errorOf(await exchangeSpa(server, code, verifier));
      expect(replay).toMatchObject({ status: 400, error: "invalid_grant" });
      await expect(bearer(server, tokens.access_token)).rejects.toMatchObject({ code: "invalid_token", status: 401 });
      expect((await errorOf(await refresh(server, tokens.refresh_token))).error).toBe("invalid_grant");
    });

    test("a replay also revokes tokens from later refreshes of that grant", async () => {
      const { server } = await fixture();
      const { code, verifier } = await spaCode(server);
      const tokens = await (await exchangeSpa(server, code, verifier)).json();
      const refreshed = await (await refresh(server, tokens.refresh_token)).json();
      await exchangeSpa(server, code, verifier);
      await expect(bearer(server, refreshed.access_token)).rejects.toMatchObject({ code: "invalid_token" });
      expect((await refresh(server, refreshed.refresh_token)).status).toBe(400);
    });

    test("expire after 600 seconds by default", async () => {
      const { server, clock } = await fixture();
      const { code, verifier } = await spaCode(server);
      clock.advance(600);
      expect(await errorOf(await exchangeSpa(server, code, verifier))).toMatchObject({ error: "invalid_grant" });
    });

    test("are bound to the client: another client's try neither works nor spends the code", async () => {
      const { server } = await fixture();
      const code = await webCode(server);
      const stolen = await postToken(server, {
        grant_type: "authorization_code", client_id: "other", client_secret: SECRETS.other, redirect_uri: REDIRECT, code,
      });
      expect(await errorOf(stolen)).toMatchObject({ error: "invalid_grant" });
      const rightful = await postToken(server, {
        grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code,
      });
      expect(rightful.status).toBe(200);
    });
  });

  describe("PKCE (RFC 7636)", () => {
    test("the verifier must be the one the challenge was derived from", async () => {
      const { server } = await fixture();
      const { code, verifier } = await spaCode(server);
      const other = await pkce();
      expect(await errorOf(await exchangeSpa(server, code, other.verifier))).toMatchObject({ error: "invalid_grant" });
      expect((await exchangeSpa(server, code, verifier)).status).toBe(200);
    });

    test.each([
      ["42 characters", "a".repeat(42)],
      ["129 characters", "a".repeat(129)],
      ["a character outside the unreserved set", "a".repeat(42) + "!"],
      ["a space", "a".repeat(21) + " " + "a".repeat(21)],
    ])("a verifier with %s is malformed: invalid_request", async (_, verifier) => {
      const { server } = await fixture();
      const { code } = await spaCode(server);
      expect(await errorOf(await exchangeSpa(server, code, verifier))).toMatchObject({ status: 400, error: "invalid_request" });
    });

    test("a confidential client may use PKCE too, and then must send the verifier", async () => {
      const { server } = await fixture();
      const { verifier, challenge } = await pkce();
      const code = await webCode(server, { code_challenge: challenge, code_challenge_method: "S256" });
      const base = { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code };
      expect((await errorOf(await postToken(server, base))).error).toBe("invalid_request");
      expect((await postToken(server, { ...base, code_verifier: verifier })).status).toBe(200);
    });

    test("a verifier for a code issued without a challenge is refused (downgrade, RFC 9700 §2.1.1)", async () => {
      const { server } = await fixture();
      const code = await webCode(server);
      const { verifier } = await pkce();
      const response = await postToken(server, {
        grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code, code_verifier: verifier,
      });
      expect(await errorOf(response)).toMatchObject({ status: 400, error: "invalid_request" });
    });
  });
});

describe("replayed codes and refresh tokens revoke only for their own, authenticated client", () => {
  const exchange = (server: Awaited<ReturnType<typeof fixture>>["server"], code: string, fields: Record<string, string>) =>
    postToken(server, { grant_type: "authorization_code", redirect_uri: REDIRECT, code, ...fields });

  test("another public client's id, or the code's own client with a wrong verifier: invalid_grant, nothing revoked", async () => {
    const { server } = await fixture();
    await server.clients.register({ client_id: "spa2", name: "Another SPA", type: "public", redirect_uris: [REDIRECT], scopes: ["read"] });
    const { code, verifier } = await spaCode(server);
    const tokens = await (await exchange(server, code, { client_id: "spa", code_verifier: verifier })).json();
    expect(await errorOf(await exchange(server, code, { client_id: "spa2", code_verifier: verifier }))).toMatchObject({ error: "invalid_grant" });
    const other = await pkce();
    expect(await errorOf(await exchange(server, code, { client_id: "spa", code_verifier: other.verifier }))).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, tokens.access_token)).resolves.toMatchObject({ user_id: "alice" });
    expect(await errorOf(await exchange(server, code, { client_id: "spa", code_verifier: verifier }))).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, tokens.access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("another confidential client replaying a spent code revokes nothing", async () => {
    const { server } = await fixture();
    const code = await webCode(server);
    const tokens = await (await exchange(server, code, { client_id: "web", client_secret: SECRETS.web })).json();
    expect(await errorOf(await exchange(server, code, { client_id: "other", client_secret: SECRETS.other }))).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, tokens.access_token)).resolves.toMatchObject({ client_id: "web" });
  });

  test("the code's own confidential client replaying it revokes the grant even when another check fails too", async () => {
    const { server } = await fixture();
    const code = await webCode(server);
    const tokens = await (await exchange(server, code, { client_id: "web", client_secret: SECRETS.web })).json();
    const replay = await exchange(server, code, { client_id: "web", client_secret: SECRETS.web, redirect_uri: "https://app.example.com/other" });
    expect(await errorOf(replay)).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, tokens.access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("a public client's code replayed with its verifier but a wrong redirect_uri still revokes", async () => {
    const { server } = await fixture();
    const { code, verifier } = await spaCode(server);
    const tokens = await (await exchange(server, code, { client_id: "spa", code_verifier: verifier })).json();
    await exchange(server, code, { client_id: "spa", code_verifier: verifier, redirect_uri: "https://app.example.com/other" });
    await expect(bearer(server, tokens.access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("a rotated refresh token presented by another client revokes nothing; by its own client, the grant", async () => {
    const { server } = await fixture();
    const code = await webCode(server);
    const first = await (await exchange(server, code, { client_id: "web", client_secret: SECRETS.web })).json();
    const refresh = (fields: Record<string, string>) => postToken(server, { grant_type: "refresh_token", refresh_token: first.refresh_token, ...fields });
    const second = await (await refresh({ client_id: "web", client_secret: SECRETS.web })).json();
    expect(await errorOf(await refresh({ client_id: "other", client_secret: SECRETS.other }))).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, second.access_token)).resolves.toMatchObject({ client_id: "web" });
    expect(await errorOf(await refresh({ client_id: "web", client_secret: SECRETS.web, scope: "write" }))).toMatchObject({ error: "invalid_grant" });
    await expect(bearer(server, second.access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });
});
