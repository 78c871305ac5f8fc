// DPoP at the token endpoint (RFC 9449 §4.3, §5, §6, §8, §10): proofs checked on every grant, tokens bound to the
// proof's key (token_type DPoP, the record's jkt, cnf.jkt in JWTs and in introspection), public clients' refresh
// tokens bound, single use of proofs, stateless nonces, dpop_jkt at /authorize, dpop_bound_access_tokens.
import { describe, expect, test } from "vitest";
import type { AuthorizationServerOptions } from "../../mod.ts";
import { memoryStorage } from "../../lib/storage/memory.ts";
import { claimsOf, dpopToken, proof, proofKey, TOKEN_ENDPOINT } from "../dpop_helpers.ts";
import { barrier, errorOf, fixture, ISSUER, pkce, REDIRECT, SECRETS } from "../helpers.ts";
import { approve, post } from "../mcp_helpers.ts";

const CC = { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" };
const dpopOn = (more: Partial<AuthorizationServerOptions> = {}) => fixture({ dpop: { enabled: true }, ...more });

describe("the token endpoint", () => {
  test("a valid proof: token_type DPoP, the token bound to the key's thumbprint (the record, introspection)", async () => {
    const f = await dpopOn();
    const key = await proofKey();
    const response = await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    expect(response.status, await response.clone().text()).toBe(200);
    const body = await response.json() as { access_token: string; token_type: string };
    expect(body.token_type).toBe("DPoP");
    const introspected = await post(f.server, "/introspect", { token: body.access_token, client_id: "backend", client_secret: SECRETS.backend });
    expect(await introspected.json()).toMatchObject({ active: true, token_type: "DPoP", cnf: { jkt: key.jkt } });
    expect(await f.server.tokenInfo(body.access_token)).toMatchObject({ client_id: "backend", jkt: key.jkt });
  });

  test("a JWT access token carries cnf.jkt (RFC 9449 §6.1)", async () => {
    const f = await dpopOn({ accessTokenFormat: "jwt" });
    const key = await proofKey("EdDSA");
    const response = await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    const body = await response.json() as { access_token: string; token_type: string };
    expect([response.status, body.token_type]).toEqual([200, "DPoP"]);
    expect(claimsOf(body.access_token).cnf).toEqual({ jkt: key.jkt });
  });

  test("no proof: a Bearer token, as before; DPoP off: a proof is ignored, and the metadata says nothing", async () => {
    const f = await dpopOn();
    const plain = await (await dpopToken(f.server, CC, undefined)).json() as { token_type: string; access_token: string };
    expect(plain.token_type).toBe("Bearer");
    expect((await f.server.tokenInfo(plain.access_token))?.jkt).toBeUndefined();
    expect(f.server.metadata().dpop_signing_alg_values_supported).toEqual(["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"]);

    const off = await fixture();
    const key = await proofKey();
    const body = await (await dpopToken(off.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: off.clock.now }))).json() as { token_type: string };
    expect(body.token_type).toBe("Bearer");
    expect(off.server.metadata()).not.toHaveProperty("dpop_signing_alg_values_supported");
  });

  test("a proof is single-use: replayed, refused; sent by ten requests at once, exactly one gets a token", async () => {
    const f = await dpopOn();
    const key = await proofKey();
    const once = await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now });
    expect((await dpopToken(f.server, CC, once)).status).toBe(200);
    const replay = await dpopToken(f.server, CC, once);
    expect(await errorOf(replay)).toMatchObject({ status: 400, error: "invalid_dpop_proof" });

    const racing = await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now });
    const statuses = await Promise.all(Array.from({ length: 10 }, () => dpopToken(f.server, CC, racing).then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(9);
  });

  test("the same jti under another key is another proof", async () => {
    const f = await dpopOn();
    const jti = "shared-jti-0123456789";
    for (const key of [await proofKey(), await proofKey()]) {
      expect((await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now, jti }))).status).toBe(200);
    }
  });

  test("htm and htu must name this request: another method, path or origin is refused; query and fragment are ignored", async () => {
    const f = await dpopOn();
    const key = await proofKey();
    const at = f.clock.now;
    for (const claims of [
      { htu: TOKEN_ENDPOINT, htm: "GET" },
      { htu: `${ISSUER}/revoke` },
      { htu: "https://evil.example/token" },
      { htu: "http://auth.example.com/token" },
      { htu: "not a url" },
      { htu: 42 as unknown as string },
    ]) {
      const response = await dpopToken(f.server, CC, await proof(key, { at, ...claims }));
      expect([claims.htu, await errorOf(response)]).toMatchObject([claims.htu, { status: 400, error: "invalid_dpop_proof" }]);
    }
    for (const htu of [`${TOKEN_ENDPOINT}?x=1#f`, "HTTPS://AUTH.EXAMPLE.COM:443/token"]) {
      expect([htu, (await dpopToken(f.server, CC, await proof(key, { at, htu }))).status]).toEqual([htu, 200]);
    }
  });

  test("the proof at the spec's address names that address without its query", async () => {
    const f = await dpopOn();
    const key = await proofKey();
    const response = await f.server.fetch(new Request(`${ISSUER}/index.php?module=OAuth2&action=token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", dpop: await proof(key, { htu: `${ISSUER}/index.php`, at: f.clock.now }) },
      body: new URLSearchParams(CC).toString(),
    }));
    expect((await response.json() as { token_type: string }).token_type).toBe("DPoP");
  });

  test("iat within the window: 300 s old or 60 s ahead at most", async () => {
    const f = await dpopOn();
    const key = await proofKey();
    const now = f.clock.now;
    for (const [offset, status] of [[-299_000, 200], [-302_000, 400], [59_000, 200], [62_000, 400]] as const) {
      const response = await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: now + offset }));
      expect([offset, response.status]).toEqual([offset, status]);
    }
  });

  test("the header's checks: typ, an asymmetric alg, a public jwk that made the signature, one header", async () => {
    const f = await dpopOn();
    const key = await proofKey();
    const other = await proofKey();
    const at = f.clock.now;
    const good = await proof(key, { htu: TOKEN_ENDPOINT, at });
    const privateJwk = await crypto.subtle.exportKey("jwk", key.privateKey);
    const refused = [
      ["typ JWT", await proof(key, { htu: TOKEN_ENDPOINT, at }, { typ: "JWT" })],
      ["no typ", await proof(key, { htu: TOKEN_ENDPOINT, at }, { typ: undefined })],
      ["another key's jwk", await proof(key, { htu: TOKEN_ENDPOINT, at }, { jwk: other.jwk })],
      ["no jwk", await proof(key, { htu: TOKEN_ENDPOINT, at }, { jwk: undefined })],
      ["a private jwk", await proof(key, { htu: TOKEN_ENDPOINT, at }, { jwk: privateJwk })],
      ["alg none", `${b64({ alg: "none", typ: "dpop+jwt", jwk: key.jwk })}.${b64({ jti: "n", htm: "POST", htu: TOKEN_ENDPOINT, iat: at / 1000 })}.`],
      ["HS256", await hs256(key.jwk, { jti: "h", htm: "POST", htu: TOKEN_ENDPOINT, iat: Math.floor(at / 1000) })],
      ["no jti", await proof(key, { htu: TOKEN_ENDPOINT, at, jti: undefined })],
      ["an empty jti", await proof(key, { htu: TOKEN_ENDPOINT, at, jti: "" })],
      ["no htm", await proof(key, { htu: TOKEN_ENDPOINT, at, htm: undefined })],
      ["no iat", await proof(key, { htu: TOKEN_ENDPOINT, at, iat: undefined })],
      ["a string iat", await proof(key, { htu: TOKEN_ENDPOINT, at, iat: String(Math.floor(at / 1000)) })],
      ["two proofs", `${good}, ${good}`],
      ["not a JWT", "not-a-jwt"],
      ["a tampered payload", `${good.split(".")[0]}.${b64({ jti: "t", htm: "POST", htu: TOKEN_ENDPOINT, iat: Math.floor(at / 1000) })}.${good.split(".")[2]}`],
    ] as const;
    for (const [what, value] of refused) {
      const response = await dpopToken(f.server, CC, value);
      expect([what, await errorOf(response)]).toMatchObject([what, { status: 400, error: "invalid_dpop_proof" }]);
    }
    expect((await dpopToken(f.server, CC, good)).status).toBe(200);
  });

  test("every algorithm of the metadata works", async () => {
    const f = await dpopOn();
    for (const alg of ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"]) {
      const response = await dpopToken(f.server, CC, await proof(await proofKey(alg), { htu: TOKEN_ENDPOINT, at: f.clock.now }));
      expect([alg, response.status]).toEqual([alg, 200]);
    }
  });

  test("a refused proof spends nothing: the code is still there for the retry", async () => {
    const f = await dpopOn();
    const key = await proofKey();
    const { verifier, challenge } = await pkce();
    const location = (await approve(f.server, {
      response_type: "code", client_id: "spa", redirect_uri: REDIRECT, scope: "read", state: "s", code_challenge: challenge, code_challenge_method: "S256",
    })).headers.get("location")!;
    const fields = { grant_type: "authorization_code", client_id: "spa", code: new URL(location).searchParams.get("code")!, redirect_uri: REDIRECT, code_verifier: verifier };
    expect((await dpopToken(f.server, fields, await proof(key, { htu: `${ISSUER}/revoke`, at: f.clock.now }))).status).toBe(400);
    const response = await dpopToken(f.server, fields, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    expect([response.status, (await response.json() as { token_type: string }).token_type]).toEqual([200, "DPoP"]);
  });
});

describe("refresh tokens (RFC 9449 §5)", () => {
  async function spaWithProof(f: Awaited<ReturnType<typeof dpopOn>>, key: Awaited<ReturnType<typeof proofKey>> | undefined) {
    const { verifier, challenge } = await pkce();
    const location = (await approve(f.server, {
      response_type: "code", client_id: "spa", redirect_uri: REDIRECT, scope: "read", state: "s", code_challenge: challenge, code_challenge_method: "S256",
    })).headers.get("location")!;
    const fields = { grant_type: "authorization_code", client_id: "spa", code: new URL(location).searchParams.get("code")!, redirect_uri: REDIRECT, code_verifier: verifier };
    const response = await dpopToken(f.server, fields, key && await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    expect(response.status).toBe(200);
    return response.json() as Promise<{ access_token: string; refresh_token: string; token_type: string }>;
  }
  const refresh = (token: string) => ({ grant_type: "refresh_token", client_id: "spa", refresh_token: token });

  test("a public client's refresh token is bound: another key or none is refused and spends nothing; its own key works", async () => {
    const f = await dpopOn();
    const key = await proofKey();
    const tokens = await spaWithProof(f, key);
    const thief = await proofKey();
    const stolen = await dpopToken(f.server, refresh(tokens.refresh_token), await proof(thief, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    expect(await errorOf(stolen)).toMatchObject({ status: 400, error: "invalid_grant", description: "The refresh token is bound to another DPoP key" });
    const bare = await dpopToken(f.server, refresh(tokens.refresh_token), undefined);
    expect(await errorOf(bare)).toMatchObject({ status: 400, error: "invalid_grant" });
    // Neither attempt revoked the grant: the access token still works, the owner refreshes.
    expect(await f.server.tokenInfo(tokens.access_token)).not.toBeNull();
    const own = await dpopToken(f.server, refresh(tokens.refresh_token), await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    const next = await own.json() as { refresh_token: string; token_type: string; access_token: string };
    expect([own.status, next.token_type]).toEqual([200, "DPoP"]);
    expect((await f.server.tokenInfo(next.access_token))?.jkt).toBe(key.jkt);
    // The successor is bound to the same key.
    expect((await dpopToken(f.server, refresh(next.refresh_token), await proof(thief, { htu: TOKEN_ENDPOINT, at: f.clock.now }))).status).toBe(400);
  });

  test("a stolen rotated refresh token presented without the key revokes nothing", async () => {
    const f = await dpopOn();
    const key = await proofKey();
    const tokens = await spaWithProof(f, key);
    const next = await (await dpopToken(f.server, refresh(tokens.refresh_token), await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }))).json() as { access_token: string };
    const thief = await proofKey();
    expect((await dpopToken(f.server, refresh(tokens.refresh_token), await proof(thief, { htu: TOKEN_ENDPOINT, at: f.clock.now }))).status).toBe(400);
    expect(await f.server.tokenInfo(next.access_token)).not.toBeNull();
  });

  test("a refresh token issued without DPoP is bound from the first refresh with a proof", async () => {
    const f = await dpopOn();
    const tokens = await spaWithProof(f, undefined);
    expect(tokens.token_type).toBe("Bearer");
    const key = await proofKey();
    const next = await (await dpopToken(f.server, refresh(tokens.refresh_token), await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }))).json() as { refresh_token: string; token_type: string };
    expect(next.token_type).toBe("DPoP");
    expect((await dpopToken(f.server, refresh(next.refresh_token), undefined)).status).toBe(400);
  });

  test("a confidential client's refresh token is not bound (its secret constrains it): a new key gets a token bound to it", async () => {
    const f = await dpopOn();
    await f.server.clients.register({
      client_id: "cc-refresh", client_secret: SECRETS.backendRefresh, name: "CC refresh", type: "confidential",
      scopes: ["export"], grant_types: ["client_credentials", "refresh_token"], client_credentials_refresh_token: true,
    });
    const first = await proofKey();
    const issued = await (await dpopToken(f.server, { ...CC, client_id: "cc-refresh", client_secret: SECRETS.backendRefresh }, await proof(first, { htu: TOKEN_ENDPOINT, at: f.clock.now }))).json() as { refresh_token: string };
    const second = await proofKey();
    const response = await dpopToken(f.server, { grant_type: "refresh_token", client_id: "cc-refresh", client_secret: SECRETS.backendRefresh, refresh_token: issued.refresh_token }, await proof(second, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    const body = await response.json() as { access_token: string };
    expect(response.status).toBe(200);
    expect((await f.server.tokenInfo(body.access_token))?.jkt).toBe(second.jkt);
  });
});

describe("dpop_jkt at the authorization endpoint (RFC 9449 §10)", () => {
  async function boundCode(jkt: string) {
    const f = await dpopOn({ storage: memoryStorage() });
    const { verifier, challenge } = await pkce();
    const response = await approve(f.server, {
      response_type: "code", client_id: "spa", redirect_uri: REDIRECT, scope: "read", state: "s", code_challenge: challenge, code_challenge_method: "S256", dpop_jkt: jkt,
    });
    const code = new URL(response.headers.get("location")!).searchParams.get("code")!;
    return { f, fields: { grant_type: "authorization_code", client_id: "spa", code, redirect_uri: REDIRECT, code_verifier: verifier } };
  }

  test("the code goes only to a proof of that key: another key or none is refused, without spending it", async () => {
    const key = await proofKey();
    const { f, fields } = await boundCode(key.jkt);
    const other = await dpopToken(f.server, fields, await proof(await proofKey(), { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    expect(await errorOf(other)).toMatchObject({ status: 400, error: "invalid_grant", description: "The authorization code is bound to another DPoP key" });
    expect(await errorOf(await dpopToken(f.server, fields, undefined))).toMatchObject({ status: 400, error: "invalid_grant" });
    const own = await dpopToken(f.server, fields, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    expect([own.status, (await own.json() as { token_type: string }).token_type]).toEqual([200, "DPoP"]);
  });

  test("a dpop_jkt that is no thumbprint is an invalid_request sent back to the client", async () => {
    const f = await dpopOn();
    const response = await approve(f.server, {
      response_type: "code", client_id: "spa", redirect_uri: REDIRECT, scope: "read", state: "s", code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256", dpop_jkt: "not a thumbprint",
    });
    expect(new URL(response.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");
  });
});

describe("dpop_bound_access_tokens (RFC 9449 §5.2)", () => {
  test("a client registered with it must send a proof", async () => {
    const f = await dpopOn();
    await f.server.clients.register({
      client_id: "bound", client_secret: SECRETS.other, name: "Bound", type: "confidential", scopes: ["export"],
      grant_types: ["client_credentials"], dpop_bound_access_tokens: true,
    });
    const fields = { ...CC, client_id: "bound", client_secret: SECRETS.other };
    expect(await errorOf(await dpopToken(f.server, fields, undefined))).toMatchObject({ status: 400, error: "invalid_dpop_proof" });
    const response = await dpopToken(f.server, fields, await proof(await proofKey(), { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    expect((await response.json() as { token_type: string }).token_type).toBe("DPoP");
  });

  test("the one door refuses it where DPoP is off, and anything but a boolean", async () => {
    const reg = { client_id: "bound", client_secret: SECRETS.other, name: "Bound", type: "confidential" as const, scopes: ["export"], grant_types: ["client_credentials"] };
    const off = await fixture();
    await expect(off.server.clients.register({ ...reg, dpop_bound_access_tokens: true })).rejects.toThrow(/must use DPoP, but the server does not offer it/);
    await expect(off.server.clients.register({ ...reg, dpop_bound_access_tokens: false })).resolves.toBeDefined();
    const on = await dpopOn();
    await expect(on.server.clients.register({ ...reg, dpop_bound_access_tokens: "yes" as unknown as boolean })).rejects.toThrow(/must be true or false/);
  });
});

test("dynamic registration takes dpop_bound_access_tokens (RFC 9449 §5.2), and refuses it where DPoP is off", async () => {
  const register = (f: Awaited<ReturnType<typeof fixture>>, value: unknown) =>
    f.server.fetch(new Request(`${ISSUER}/register`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: "none", scope: "read", dpop_bound_access_tokens: value }),
    }));
  const on = await dpopOn({ registration: { enabled: true } });
  const created = await register(on, true);
  const body = await created.json() as { client_id: string; dpop_bound_access_tokens: boolean };
  expect([created.status, body.dpop_bound_access_tokens]).toEqual([201, true]);
  expect(requiresProof(await on.server.clients.get(body.client_id))).toBe(true);
  expect(await errorOf(await register(on, "yes"))).toMatchObject({ status: 400, error: "invalid_client_metadata" });
  const off = await fixture({ registration: { enabled: true } });
  expect(await errorOf(await register(off, true))).toMatchObject({ status: 400, error: "invalid_client_metadata" });
});

const requiresProof = (client: { metadata?: Record<string, unknown> } | null) => client?.metadata?.dpop_bound_access_tokens === true;

describe("nonces (RFC 9449 §8)", () => {
  const withNonces = () => dpopOn({ dpop: { enabled: true, requireNonce: true }, secret: "dpop-nonce-secret-0123456789abcdef" });

  test("without a nonce: use_dpop_nonce with the nonce to use; with it, tokens and the next nonce", async () => {
    const f = await withNonces();
    const key = await proofKey();
    const first = await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    expect(await errorOf(first.clone())).toMatchObject({ status: 400, error: "use_dpop_nonce" });
    const nonce = first.headers.get("dpop-nonce")!;
    expect(nonce).toMatch(/^[\w-]{22}$/);
    const second = await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now, nonce }));
    expect(second.status).toBe(200);
    expect(second.headers.get("dpop-nonce")).toBe(nonce);
  });

  test("stateless: another instance with the same secret takes the nonce, one with another secret does not", async () => {
    const f = await withNonces();
    const key = await proofKey();
    const nonce = (await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }))).headers.get("dpop-nonce")!;
    const twin = await fixture({ dpop: { enabled: true, requireNonce: true }, secret: "dpop-nonce-secret-0123456789abcdef", clock: f.clock.read });
    expect((await dpopToken(twin.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now, nonce }))).status).toBe(200);
    const stranger = await fixture({ dpop: { enabled: true, requireNonce: true }, secret: "another-nonce-secret-0123456789abcdef", clock: f.clock.read });
    const refused = await dpopToken(stranger.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now, nonce }));
    expect(await errorOf(refused.clone())).toMatchObject({ error: "use_dpop_nonce" });
    expect(refused.headers.get("dpop-nonce")).not.toBe(nonce);
  });

  test("a nonce lives five to ten minutes", async () => {
    const f = await withNonces();
    f.clock.now = 1_800_000_000_000 - (1_800_000_000_000 % 300_000); // the start of a slot
    const key = await proofKey();
    const nonce = (await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }))).headers.get("dpop-nonce")!;
    f.clock.advance(599);
    expect((await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now, nonce }))).status).toBe(200);
    f.clock.advance(2);
    const stale = await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now, nonce }));
    expect(await errorOf(stale)).toMatchObject({ error: "use_dpop_nonce" });
  });

  test("a browser app may read the nonce (CORS exposes it), and send the DPoP header (the preflight allows it)", async () => {
    const f = await withNonces();
    const origin = "https://app.example.com";
    const answer = await dpopToken(f.server, CC, await proof(await proofKey(), { htu: TOKEN_ENDPOINT, at: f.clock.now }), { origin });
    expect(answer.headers.get("access-control-expose-headers")).toContain("DPoP-Nonce");
    const preflight = await f.server.fetch(new Request(TOKEN_ENDPOINT, {
      method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "dpop" },
    }));
    expect(preflight.headers.get("access-control-allow-headers")).toContain("dpop");
  });

  test("the option needs dpop.enabled", async () => {
    await expect(fixture({ dpop: { requireNonce: true } })).rejects.toThrow(/"requireNonce" is set but "enabled" is not true/);
  });
});

test("concurrent requests with one proof, each through its own barrier, still have one winner", async () => {
  const f = await dpopOn();
  const key = await proofKey();
  const wait = barrier(5);
  const racing = await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now });
  const statuses = await Promise.all(Array.from({ length: 5 }, async () => (await wait(), (await dpopToken(f.server, CC, racing)).status)));
  expect(statuses.sort()).toEqual([200, 400, 400, 400, 400]);
});

function b64(value: unknown): string {
  return btoa(JSON.stringify(value)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
}

/** A proof "signed" with HS256, the public key's x as the secret: the algorithm confusion attack. */
async function hs256(jwk: Record<string, unknown>, claims: Record<string, unknown>): Promise<string> {
  const input = `${b64({ alg: "HS256", typ: "dpop+jwt", jwk })}.${b64(claims)}`;
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(String(jwk.x)), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const signature = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(input)));
  return `${input}.${btoa(String.fromCharCode(...signature)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")}`;
}
