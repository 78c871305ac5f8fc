// Code redemption edges that mutation testing (issue 15 item 12) showed no test held: the loser of a concurrent
// redemption. Through `server.fetch`, with the store injected as any deployment injects one, so vitest, bun and
// deno run it.
import { describe, expect, test } from "vitest";
import type { AuditEvent } from "../mod.ts";
import { barrier, errorOf, fixture, pkce, postToken, REDIRECT, SECRETS, spaTokens, webCode } from "./helpers.ts";

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

test("client_credentials: the refresh opt-in without the refresh_token grant issues no refresh token", async () => {
  const events: AuditEvent[] = [];
  const { server } = await fixture({ onEvent: (event) => events.push(event) });
  const contradiction = {
    client_id: "opt-in-only", client_secret: SECRETS.backend, name: "Opt-in only", type: "confidential" as const, scopes: ["export"],
    grant_types: ["client_credentials"], client_credentials_refresh_token: true,
  };
  // The one door refuses the contradiction; a record another tool wrote straight into the store still gets none.
  await expect(server.clients.register(contradiction)).rejects.toThrow(/client_credentials_refresh_token needs both/);
  const { client } = await server.clients.register({ ...contradiction, client_credentials_refresh_token: false });
  await server.storage.saveClient({ ...client, client_credentials_refresh_token: true });
  const body = await (await postToken(server, { grant_type: "client_credentials", scope: "export", client_id: "opt-in-only", client_secret: SECRETS.backend })).json();
  expect([typeof body.access_token, body.refresh_token]).toEqual(["string", undefined]);
  // Without a refresh token there is no grant, so the event names none.
  expect(events.filter((e) => e.type === "token.issued")).toEqual([{ type: "token.issued", time: expect.any(Number), client_id: "opt-in-only" }]);
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
