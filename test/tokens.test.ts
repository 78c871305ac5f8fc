// Minting tokens (lib/tokens.ts): fresh random values, hashed records with no undefined members, the response
// JSON, and lifetimes to the millisecond.
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { type TokenResponse, tokenResponseJson } from "../lib/tokens.ts";
import type { AuditEvent } from "../mod.ts";
import type { IssuedTokens } from "../lib/storage/types.ts";
import { errorOf, fixture, postToken, REDIRECT, SECRETS, spaCode, spaTokens } from "./helpers.ts";

const b64url = fc.string({ unit: fc.constantFrom(..."ABCxyz019-_"), minLength: 1, maxLength: 64 });

const anyString = fc.string({ unit: "binary", maxLength: 40 });

test("tokenResponseJson is JSON.stringify, for well-formed and odd responses alike", () => {
  const responses = fc.record({
    access_token: fc.oneof(b64url, anyString),
    token_type: fc.constant("Bearer" as const),
    expires_in: fc.oneof(fc.integer(), fc.double()),
    scope: anyString,
  }).chain((r) => fc.option(fc.oneof(b64url, anyString), { nil: undefined }).map((refresh) => {
    const response: TokenResponse = { ...r };
    if (refresh !== undefined) response.refresh_token = refresh;
    return response;
  }));
  fc.assert(fc.property(responses, (response) => tokenResponseJson(response) === JSON.stringify(response)), { numRuns: 5_000 });
});

test("an unexpected member is not dropped", () => {
  const response = { access_token: "abc", token_type: "Bearer", expires_in: 1, scope: "read", extra: 1 } as TokenResponse;
  expect(JSON.parse(tokenResponseJson(response))).toHaveProperty("extra", 1);
});

describe("the records handed to the store", () => {
  const undefinedMembers = (record: object) => Object.entries(record).filter(([, value]) => value === undefined).map(([key]) => key);

  test("issued records carry no member set to undefined: client_credentials, a code exchange and a refresh", async () => {
    const f = await fixture();
    const handed: IssuedTokens[] = [];
    const { storage } = f;
    const save = storage.saveTokens.bind(storage);
    const redeem = storage.redeemCode.bind(storage);
    const rotate = storage.rotateRefreshToken.bind(storage);
    storage.saveTokens = (tokens, now) => (handed.push(tokens), save(tokens, now));
    storage.redeemCode = (hash, tokens, now) => (handed.push(tokens), redeem(hash, tokens, now));
    storage.rotateRefreshToken = (hash, tokens, now, grace) => (handed.push(tokens), rotate(hash, tokens, now, grace));
    await postToken(f.server, { grant_type: "client_credentials", scope: "export", client_id: "backend", client_secret: SECRETS.backend });
    await postToken(f.server, { grant_type: "client_credentials", scope: "export", client_id: "backend-refresh", client_secret: SECRETS.backendRefresh });
    const { refresh_token } = await spaTokens(f.server);
    expect((await postToken(f.server, { grant_type: "refresh_token", client_id: "spa", refresh_token })).status).toBe(200);
    expect(handed).toHaveLength(4);
    for (const tokens of handed) {
      expect(undefinedMembers(tokens.access)).toEqual([]);
      if (tokens.refresh) expect(undefinedMembers(tokens.refresh)).toEqual([]);
    }
    // And what is absent is absent: a client's own token has no user, no grant and no audience.
    expect(Object.keys(handed[0]!.access).sort()).toEqual(["client_id", "expires_at", "hash", "scope"]);
    expect(handed[0]!.refresh).toBeUndefined();
    expect(Object.keys(handed[1]!.refresh!).sort()).toEqual(["client_id", "expires_at", "grant_id", "hash", "scope"]);
  });

  test("grant ids are 22 base64url characters", async () => {
    const events: AuditEvent[] = [];
    const { server } = await fixture({ onEvent: (event) => events.push(event) });
    await postToken(server, { grant_type: "client_credentials", scope: "export", client_id: "backend-refresh", client_secret: SECRETS.backendRefresh });
    await spaTokens(server);
    const ids = events.flatMap((e) => (e.grant_id === undefined ? [] : [e.grant_id]));
    expect(ids.length).toBeGreaterThanOrEqual(2);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  test.each(['abc"def', "abc\\\\", "abc\ndef", "abc</script>"])("a token that is not base64url (%j) is still written as JSON.stringify writes it", (odd) => {
    const response = { access_token: odd, token_type: "Bearer" as const, expires_in: 60, scope: "read" };
    expect(tokenResponseJson(response)).toBe(JSON.stringify(response));
    expect(tokenResponseJson({ ...response, access_token: "abc", refresh_token: odd })).toBe(JSON.stringify({ ...response, access_token: "abc", refresh_token: odd }));
  });
});

describe("secrets at rest", () => {
  const exchangeSpa = (server: Awaited<ReturnType<typeof fixture>>["server"], code: string, verifier: string) =>
    postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier });

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
});

describe("expiry at the exact instant", () => {
  test("a code is good 1 ms before its expiry and dead at it", async () => {
    const { server, clock } = await fixture();
    const first = await spaCode(server);
    clock.now += 600_000 - 1;
    expect((await postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code: first.code, code_verifier: first.verifier })).status).toBe(200);
    const second = await spaCode(server);
    clock.now += 600_000;
    expect(await errorOf(await postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code: second.code, code_verifier: second.verifier }))).toMatchObject({ error: "invalid_grant" });
  });

  test("an access token is good 1 ms before its expiry and dead at it", async () => {
    const { server, clock } = await fixture();
    const tokens = await spaTokens(server);
    clock.now += 3_600_000 - 1;
    await expect(server.verifyAuthorization(`Bearer ${tokens.access_token}`)).resolves.toMatchObject({ client_id: "spa" });
    clock.now += 1;
    await expect(server.verifyAuthorization(`Bearer ${tokens.access_token}`)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("a refresh token is good 1 ms before its expiry and dead at it", async () => {
    const { server, clock } = await fixture();
    const a = await spaTokens(server);
    const b = await spaTokens(server);
    clock.now += 30 * 24 * 3_600_000 - 1;
    expect((await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: a.refresh_token })).status).toBe(200);
    clock.now += 1;
    expect(await errorOf(await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: b.refresh_token }))).toMatchObject({ error: "invalid_grant" });
  });
});
