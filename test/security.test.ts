// Security semantics: single-use codes and replay, PKCE, refresh rotation and reuse, scope, hashing, expiry.
import { describe, expect, test } from "vitest";
import {
  bearer, codeRequest, consent, errorOf, fixture, pkce, postToken, REDIRECT, SECRETS, spaCode, spaTokens, webCode,
} from "./helpers.ts";

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

describe("secrets at rest", () => {
  test("the store holds only SHA-256 hashes of codes, tokens and client secrets", async () => {
    const { server, storage } = await fixture();
    const { code, verifier } = await spaCode(server);
    const tokens = await (await exchangeSpa(server, code, verifier)).json();
    const dump = JSON.stringify([...Object.values(storage)].map((v) => (v instanceof Map ? [...v.entries()] : null)));
    for (const secret of [code, tokens.access_token, tokens.refresh_token, SECRETS.web, SECRETS.backend]) {
      expect(dump).not.toContain(secret);
    }
    const web = await server.clients.get("web");
    expect(web?.secret_hash).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  test("codes, tokens and generated secrets carry 256 random bits (43 base64url characters) and never repeat", async () => {
    const { server } = await fixture();
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const response = await postToken(server, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" });
      const { access_token } = await response.json();
      expect(access_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      seen.add(access_token);
    }
    expect(seen.size).toBe(20);
    const { client_secret } = await server.clients.register({ name: "Gen", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] });
    expect(client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});

describe("access tokens", () => {
  test("expire after expires_in seconds", async () => {
    const { server, clock } = await fixture();
    const response = await postToken(server, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" });
    const { access_token, expires_in } = await response.json();
    expect(expires_in).toBe(3600);
    clock.advance(3599);
    await expect(bearer(server, access_token)).resolves.toMatchObject({ client_id: "backend", scope: "export" });
    clock.advance(1);
    await expect(bearer(server, access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("lifetimes are configurable", async () => {
    const { server } = await fixture({ lifetimes: { accessToken: 60 } });
    const response = await postToken(server, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" });
    expect((await response.json()).expires_in).toBe(60);
  });

  test("a paused client's tokens stop working, and work again when it resumes", async () => {
    const { server } = await fixture();
    const tokens = await spaTokens(server);
    await server.clients.pause("spa");
    await expect(bearer(server, tokens.access_token)).rejects.toMatchObject({ code: "invalid_token" });
    expect(await errorOf(await refresh(server, tokens.refresh_token))).toMatchObject({ status: 401, error: "invalid_client" });
    expect((await consent(server, codeRequest("spa")).catch((e: Error) => e)) instanceof Error).toBe(true);
    await server.clients.resume("spa");
    await expect(bearer(server, tokens.access_token)).resolves.toMatchObject({ client_id: "spa" });
  });
});
