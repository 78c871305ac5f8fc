// The refresh_token grant with rotation (RFC 6749 §6, RFC 9700 §4.14): rotation, reuse, scope, lifetime.
import { describe, expect, test } from "vitest";
import type { AuditEvent } from "../../mod.ts";
import {
  barrier, bearer, codeRequest, consent, errorOf, fixture, type Fixture, postToken, REDIRECT, SECRETS, spaTokens, webCode,
} from "../helpers.ts";

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
    // The first read of each: the loser reads again, without waiting, once its rotation fails.
    let reads = 0;
    f.storage.findRefreshToken = async (...args) => {
      const record = await find(...args);
      if (++reads <= 2) await bothRead();
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

describe("refresh tokens", () => {
  const refresh = (server: Awaited<ReturnType<typeof fixture>>["server"], token: string, extra: Record<string, string> = {}) =>
    postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: token, ...extra });

  describe("refresh tokens", () => {
    test("rotate on every use; the new pair works and keeps the scope", async () => {
      const { server } = await fixture();
      const tokens = await spaTokens(server);
      const response = await refresh(server, tokens.refresh_token);
      expect(response.status).toBe(200);
      const next = await response.json();
      expect(next.refresh_token).not.toBe(tokens.refresh_token);
      expect(next.access_token).not.toBe(tokens.access_token);
      expect(next.scope).toBe("read");
      await expect(bearer(server, next.access_token, "read")).resolves.toMatchObject({ client_id: "spa" });
      expect((await refresh(server, next.refresh_token)).status).toBe(200);
    });

    test("reuse of a rotated token revokes the whole grant, the new pair included", async () => {
      const { server } = await fixture();
      const tokens = await spaTokens(server);
      const next = await (await refresh(server, tokens.refresh_token)).json();
      expect(await errorOf(await refresh(server, tokens.refresh_token))).toMatchObject({ error: "invalid_grant" });
      await expect(bearer(server, next.access_token)).rejects.toMatchObject({ code: "invalid_token" });
      await expect(bearer(server, tokens.access_token)).rejects.toMatchObject({ code: "invalid_token" });
      expect(await errorOf(await refresh(server, next.refresh_token))).toMatchObject({ error: "invalid_grant" });
    });

    test("can never widen the scope", async () => {
      const { server } = await fixture();
      const tokens = await spaTokens(server);
      expect(await errorOf(await refresh(server, tokens.refresh_token, { scope: "write" }))).toMatchObject({ error: "invalid_scope" });
      expect(await errorOf(await refresh(server, tokens.refresh_token, { scope: "read write" }))).toMatchObject({ error: "invalid_scope" });
      // The failed tries spent nothing.
      const same = await refresh(server, tokens.refresh_token, { scope: "read" });
      expect(same.status).toBe(200);
      expect((await same.json()).scope).toBe("read");
    });

    test("are bound to their client, and another client's try does not spend them", async () => {
      const { server } = await fixture();
      const code = await webCode(server);
      const base = { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code };
      const tokens = await (await postToken(server, base)).json();
      const stolen = await postToken(server, { grant_type: "refresh_token", client_id: "other", client_secret: SECRETS.other, refresh_token: tokens.refresh_token });
      expect(await errorOf(stolen)).toMatchObject({ error: "invalid_grant" });
      const rightful = await postToken(server, { grant_type: "refresh_token", client_id: "web", client_secret: SECRETS.web, refresh_token: tokens.refresh_token });
      expect(rightful.status).toBe(200);
    });

    test("expire 30 days after the authorization; rotation does not extend that", async () => {
      const { server, clock } = await fixture();
      const tokens = await spaTokens(server);
      clock.advance(20 * 86400);
      const next = await (await refresh(server, tokens.refresh_token)).json();
      clock.advance(10 * 86400);
      expect(await errorOf(await refresh(server, next.refresh_token))).toMatchObject({ error: "invalid_grant" });
    });
  });
});

describe("refresh tokens are issued only where registered", () => {
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

  describe("refresh tokens are issued only where registered", () => {
    test("a code client without the refresh_token grant gets no refresh token", async () => {
      const { server } = await fixture();
      await server.clients.register({
        client_id: "norefresh", client_secret: SECRETS.web, name: "No refresh", type: "confidential", redirect_uris: [REDIRECT],
        scopes: ["read"], grant_types: ["authorization_code"],
      });
      const location = await consent(server, codeRequest("norefresh"));
      const response = await postToken(server, {
        grant_type: "authorization_code", client_id: "norefresh", client_secret: SECRETS.web, redirect_uri: REDIRECT,
        code: location.searchParams.get("code")!,
      });
      const body = await response.json();
      expect(body.access_token).toBeTruthy();
      expect(body.refresh_token).toBeUndefined();
    });

    test("client_credentials carries a refresh token only with the opt-in, and it refreshes", async () => {
      const { server } = await fixture();
      const plain = await (await postToken(server, { grant_type: "client_credentials", scope: "export" }, basic("backend", SECRETS.backend))).json();
      expect(plain.refresh_token).toBeUndefined();
      const opted = await (await postToken(server, { grant_type: "client_credentials", scope: "export" }, basic("backend-refresh", SECRETS.backendRefresh))).json();
      expect(typeof opted.refresh_token).toBe("string");
      const refreshed = await postToken(server, { grant_type: "refresh_token", refresh_token: opted.refresh_token }, basic("backend-refresh", SECRETS.backendRefresh));
      expect(refreshed.status).toBe(200);
    });
  });
});
