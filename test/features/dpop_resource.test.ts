// DPoP at protected resources (RFC 9449 §7): server.protect, protectedResource over the local, JWT and
// introspection verifiers. A bound token works only with the DPoP scheme and a fresh proof of its key for this
// request (ath included), never as a Bearer token; challenges name both schemes, the error on the one used.
import { describe, expect, test } from "vitest";
import { introspectionTokenVerifier, jwtTokenVerifier, localTokenVerifier, memoryStorage, protectedResource } from "../../mod.ts";
import type { AccessTokenInfo, AuthorizationServerOptions } from "../../mod.ts";
import { ath, dpopToken, proof, type ProofKey, proofKey, TOKEN_ENDPOINT } from "../dpop_helpers.ts";
import { fixture, ISSUER, SECRETS } from "../helpers.ts";

const API = `${ISSUER}/api/export`;
const ALGS = `algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"`;
const CC = { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" };

/** A server with DPoP on, a key, a token bound to it, and a proof maker for resource requests. */
async function bound(options: Partial<AuthorizationServerOptions> = {}) {
  const f = await fixture({ dpop: { enabled: true }, ...options });
  const key = await proofKey();
  const response = await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
  const token = (await response.json() as { access_token: string }).access_token;
  const resourceProof = async (url: string, claims: Record<string, unknown> = {}, signer: ProofKey = key) =>
    proof(signer, { htu: url, htm: "GET", at: f.clock.now, ath: await ath(token), ...claims });
  return { f, key, token, resourceProof };
}

const get = (url: string, headers: Record<string, string>) => new Request(url, { headers });

describe("server.protect", () => {
  const handler = (f: Awaited<ReturnType<typeof fixture>>) => f.server.protect("export", (_r, info) => Response.json(info));

  test("the DPoP scheme with a proof of the token's key for this request: the handler runs and sees the key", async () => {
    const { f, key, token, resourceProof } = await bound();
    const response = await handler(f)(get(API, { authorization: `DPoP ${token}`, dpop: await resourceProof(API) }));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ client_id: "backend", jkt: key.jkt });
  });

  test("a bound token as a Bearer token is refused (§7.2), the error on the Bearer challenge", async () => {
    const { f, token, resourceProof } = await bound();
    const response = await handler(f)(get(API, { authorization: `Bearer ${token}`, dpop: await resourceProof(API) }));
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe(
      `Bearer realm="${ISSUER}", error="invalid_token", error_description="The access token is bound to a DPoP key: present it with the DPoP scheme and a proof", DPoP realm="${ISSUER}", ${ALGS}`,
    );
  });

  test("each broken proof is refused with 401, the error on the DPoP challenge", async () => {
    const { f, token, resourceProof } = await bound();
    const thief = await proofKey();
    const cases: [string, Record<string, string>, string][] = [
      ["no proof", {}, "invalid_dpop_proof"],
      ["a proof without ath", { dpop: await resourceProof(API, { ath: undefined }) }, "invalid_dpop_proof"],
      ["another token's ath", { dpop: await resourceProof(API, { ath: await ath("another-token") }) }, "invalid_dpop_proof"],
      ["another path", { dpop: await resourceProof(`${ISSUER}/api/other`) }, "invalid_dpop_proof"],
      ["another origin", { dpop: await resourceProof("https://evil.example/api/export") }, "invalid_dpop_proof"],
      ["another method", { dpop: await resourceProof(API, { htm: "POST" }) }, "invalid_dpop_proof"],
      ["a stale proof", { dpop: await resourceProof(API, { at: f.clock.now - 301_000 }) }, "invalid_dpop_proof"],
      ["another key", { dpop: await resourceProof(API, {}, thief) }, "invalid_token"],
    ];
    for (const [what, headers, error] of cases) {
      const response = await handler(f)(get(API, { authorization: `DPoP ${token}`, ...headers }));
      const challenge = response.headers.get("www-authenticate") ?? "";
      expect([what, response.status, challenge.startsWith(`Bearer realm="${ISSUER}", DPoP realm="${ISSUER}", error="${error}"`)]).toEqual([what, 401, true]);
    }
  });

  test("a proof is used once: replayed, refused", async () => {
    const { f, token, resourceProof } = await bound();
    const once = await resourceProof(API);
    expect((await handler(f)(get(API, { authorization: `DPoP ${token}`, dpop: once }))).status).toBe(200);
    const replay = await handler(f)(get(API, { authorization: `DPoP ${token}`, dpop: once }));
    expect([replay.status, await replay.json()]).toEqual([401, { error: "invalid_dpop_proof", error_description: "The DPoP proof was already used" }]);
  });

  test("a proof's htu names the API's origin whatever Host the request carries: a proof made for another server is refused", async () => {
    const { f, token, resourceProof } = await bound();
    const elsewhere = "https://evil.example/api/export";
    const response = await handler(f)(get(elsewhere, { authorization: `DPoP ${token}`, dpop: await resourceProof(elsewhere) }));
    expect(response.status).toBe(401);
  });

  test("an unbound token with the DPoP scheme is refused; as Bearer it works, and the challenge names both schemes", async () => {
    const { f } = await bound();
    const plain = (await (await dpopToken(f.server, CC, undefined)).json() as { access_token: string }).access_token;
    const key = await proofKey();
    const withProof = await proof(key, { htu: API, htm: "GET", at: f.clock.now, ath: await ath(plain) });
    const refused = await handler(f)(get(API, { authorization: `DPoP ${plain}`, dpop: withProof }));
    expect([refused.status, (await refused.json() as { error: string }).error]).toEqual([401, "invalid_token"]);
    expect((await handler(f)(get(API, { authorization: `Bearer ${plain}` }))).status).toBe(200);
    const none = await handler(f)(get(API, {}));
    expect(none.headers.get("www-authenticate")).toBe(`Bearer realm="${ISSUER}", DPoP realm="${ISSUER}", ${ALGS}`);
  });

  test("insufficient scope with a good proof: 403 on the DPoP challenge", async () => {
    const { f, token, resourceProof } = await bound();
    const api = f.server.protect("admin", () => new Response("ok"));
    const response = await api(get(API, { authorization: `DPoP ${token}`, dpop: await resourceProof(API) }));
    expect(response.status).toBe(403);
    expect(response.headers.get("www-authenticate")).toContain(`DPoP realm="${ISSUER}", error="insufficient_scope"`);
  });

  test("verifyAuthorization has no request to prove: a DPoP token there is refused; verifyAccessToken takes it", async () => {
    const { f, token, resourceProof } = await bound();
    await expect(f.server.verifyAuthorization(`DPoP ${token}`)).rejects.toMatchObject({ code: "invalid_dpop_proof", status: 401 });
    const request = get(API, { authorization: `DPoP ${token}`, dpop: await resourceProof(API) });
    expect(await f.server.verifyAccessToken(request, "export")).toMatchObject({ client_id: "backend" });
  });

  test("DPoP off: the challenge is RFC 6750's alone and the DPoP scheme is no token; a bound token still never works as Bearer", async () => {
    const { f, token } = await bound();
    const off = await fixture({ storage: f.storage, clock: f.clock.read });
    const response = await handler(off)(get(API, { authorization: `DPoP ${token}` }));
    expect([response.status, response.headers.get("www-authenticate")]).toEqual([401, `Bearer realm="${ISSUER}"`]);
    expect((await handler(off)(get(API, { authorization: `Bearer ${token}` }))).status).toBe(401);
  });
});

describe("protectedResource", () => {
  const MCP = `${ISSUER}/mcp`;
  const call = (guard: ReturnType<typeof protectedResource>, headers: Record<string, string>) =>
    guard.protect(["export"], (_r, info) => Response.json(info))(new Request(MCP, { method: "POST", headers }));

  async function verifiers() {
    const { f, key, token, resourceProof } = await bound({ resources: [MCP], accessTokenFormat: "jwt", signingKeys: {} });
    await f.server.keys.ready();
    const RS = "rs-secret-0123456789abcdef";
    await f.server.clients.register({ client_id: "rs", client_secret: RS, name: "RS", type: "confidential", scopes: ["export"], grant_types: ["client_credentials"], introspection: "all" });
    const response = await dpopToken(f.server, { ...CC, resource: MCP }, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
    const mcpToken = (await response.json() as { access_token: string }).access_token;
    const options = { resource: MCP, authorizationServers: [ISSUER], now: f.clock.read };
    const verify: Record<string, (t: string) => Promise<AccessTokenInfo | null>> = {
      local: localTokenVerifier(f.server),
      jwt: jwtTokenVerifier({ server: f.server, audience: MCP, now: f.clock.read }),
      introspection: introspectionTokenVerifier({ endpoint: `${ISSUER}/introspect`, clientId: "rs", clientSecret: RS, fetch: f.server.fetch }),
    };
    const mcpProof = async (claims: Record<string, unknown> = {}) => proof(key, { htu: MCP, at: f.clock.now, ath: await ath(mcpToken), ...claims });
    return { f, key, token, resourceProof, mcpToken, options, verify, mcpProof };
  }

  for (const kind of ["local", "jwt", "introspection"]) {
    test(`${kind}: a bound token with its proof passes; as Bearer, or with another key's proof, it is refused`, async () => {
      const { f, key, mcpToken, options, verify, mcpProof } = await verifiers();
      const guard = protectedResource({ ...options, verify: verify[kind]! });
      const ok = await call(guard, { authorization: `DPoP ${mcpToken}`, dpop: await mcpProof() });
      expect([kind, ok.status]).toEqual([kind, 200]);
      expect((await ok.json() as AccessTokenInfo).jkt).toBe(key.jkt);
      const asBearer = await call(guard, { authorization: `Bearer ${mcpToken}` });
      expect([kind, asBearer.status, (await asBearer.json() as { error: string }).error]).toEqual([kind, 401, "invalid_token"]);
      const thief = await proofKey();
      const stolen = await call(guard, { authorization: `DPoP ${mcpToken}`, dpop: await proof(thief, { htu: MCP, at: f.clock.now, ath: await ath(mcpToken) }) });
      expect([kind, stolen.status, await stolen.json()]).toEqual([kind, 401, { error: "invalid_token", error_description: "Invalid DPoP key binding" }]);
    });
  }

  test("the metadata and challenges say DPoP is taken; required: Bearer tokens are refused with the DPoP challenge alone", async () => {
    const { f, options, verify, mcpToken, mcpProof } = await verifiers();
    const open = protectedResource({ ...options, verify: verify.local! });
    expect(open.metadata.dpop_signing_alg_values_supported).toEqual(["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"]);
    const strict = protectedResource({ ...options, verify: verify.local!, dpop: { required: true, algorithms: ["EdDSA", "ES256"] } });
    expect(strict.metadata).toMatchObject({ dpop_bound_access_tokens_required: true, dpop_signing_alg_values_supported: ["EdDSA", "ES256"] });
    const plain = (await (await dpopToken(f.server, { ...CC, resource: MCP }, undefined)).json() as { access_token: string }).access_token;
    const response = await call(strict, { authorization: `Bearer ${plain}` });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe(`DPoP resource_metadata="${strict.metadataUrl}", scope="export", algs="EdDSA ES256"`);
    expect((await call(strict, { authorization: `DPoP ${mcpToken}`, dpop: await mcpProof() })).status).toBe(200);
  });

  test("dpop: false takes Bearer tokens only, and a bound token still not as one", async () => {
    const { options, verify, mcpToken, mcpProof } = await verifiers();
    const guard = protectedResource({ ...options, verify: verify.local!, dpop: false });
    expect(guard.metadata).not.toHaveProperty("dpop_signing_alg_values_supported");
    const dpop = await call(guard, { authorization: `DPoP ${mcpToken}`, dpop: await mcpProof() });
    expect([dpop.status, dpop.headers.get("www-authenticate")]).toEqual([401, `Bearer resource_metadata="${guard.metadataUrl}", scope="export"`]);
    expect((await call(guard, { authorization: `Bearer ${mcpToken}` })).status).toBe(401);
  });

  test("replays are seen across instances that share a store's markOnce", async () => {
    const { options, verify, mcpToken, mcpProof } = await verifiers();
    const shared = memoryStorage();
    const one = protectedResource({ ...options, verify: verify.local!, dpop: { replay: shared } });
    const two = protectedResource({ ...options, verify: verify.local!, dpop: { replay: shared } });
    const once = await mcpProof();
    expect((await call(one, { authorization: `DPoP ${mcpToken}`, dpop: once })).status).toBe(200);
    expect((await call(two, { authorization: `DPoP ${mcpToken}`, dpop: once })).status).toBe(401);
    // Without a shared store, each instance remembers its own proofs.
    const three = protectedResource({ ...options, verify: verify.local! });
    const again = await mcpProof();
    expect((await call(three, { authorization: `DPoP ${mcpToken}`, dpop: again })).status).toBe(200);
    expect((await call(three, { authorization: `DPoP ${mcpToken}`, dpop: again })).status).toBe(401);
  });

  test("a confirmation this guard cannot check (cnf other than jkt) opens nothing", async () => {
    const info = { client_id: "c", scope: "export", exp: 2_000_000_000 };
    for (const cnf of [{ "x5t#S256": "abc" }, { jkt: "a", "x5t#S256": "b" }, { jkt: 5 }, "jkt"]) {
      const response = await introspectionTokenVerifier({
        endpoint: `${ISSUER}/introspect`, clientId: "rs", clientSecret: "x".repeat(16),
        fetch: async () => Response.json({ active: true, token_type: "DPoP", ...info, cnf }),
      })("t");
      expect([cnf, response]).toEqual([cnf, null]);
    }
    // A Bearer-typed answer that names a key, or a DPoP-typed one that names none, is inconsistent: refused.
    for (const body of [{ token_type: "Bearer", cnf: { jkt: "k" } }, { token_type: "DPoP" }]) {
      const verify = introspectionTokenVerifier({ endpoint: `${ISSUER}/introspect`, clientId: "rs", clientSecret: "x".repeat(16), fetch: async () => Response.json({ active: true, ...info, ...body }) });
      expect(await verify("t")).toBeNull();
    }
  });

  test("a bad dpop option is refused at start", () => {
    const base = { resource: MCP, authorizationServers: [ISSUER], verify: async () => null };
    expect(() => protectedResource({ ...base, dpop: { algorithms: ["HS256" as "ES256"] } })).toThrow(/dpop.algorithms/);
    expect(() => protectedResource({ ...base, dpop: { algorithms: [] } })).toThrow(/dpop.algorithms/);
  });
});
