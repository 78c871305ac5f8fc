// JWKs (RFC 7517) typed by use: strict member checks per kty on import, the public half, private-member
// detection, thumbprints (RFC 7638), generated keys, the runtime probe, and the import cache.
import { describe, expect, test } from "vitest";
import { type JwsAlgorithm, supportedAlgorithms } from "../../lib/jose/algorithms.ts";
import {
  exportPublicJwk,
  generateSigningKey,
  importJwk,
  isPrivateJwk,
  type Jwk,
  jwkThumbprint,
  publicJwk,
} from "../../lib/jose/jwk.ts";
import { signJws, verifyJws } from "../../lib/jose/jws.ts";

const ALGORITHMS: JwsAlgorithm[] = ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"];
const PAIRS = Object.fromEntries(await Promise.all(ALGORITHMS.map(async (alg) => [alg, await generateSigningKey(alg)] as const)));
const EC = PAIRS.ES256!;
const RSA = PAIRS.RS256!;
/** A 1024-bit RSA key: too small for RS256 (RFC 7518 §3.3). */
const small = await crypto.subtle.generateKey(
  { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256", modulusLength: 1024, publicExponent: new Uint8Array([1, 0, 1]) },
  true,
  ["sign", "verify"],
) as CryptoKeyPair;

async function importCode(jwk: unknown, alg: JwsAlgorithm, usage: "sign" | "verify"): Promise<string> {
  const error = await importJwk(jwk as Jwk, alg, usage).then(() => undefined, (e: { code: string }) => e);
  expect(error, "the key was imported").toBeDefined();
  return (error as { code: string }).code;
}

describe.each(ALGORITHMS)("generateSigningKey(%s)", (alg) => {
  test("gives a private JWK that signs and a public JWK that verifies, both named by the thumbprint", async () => {
    const { privateJwk, publicJwk: pub } = PAIRS[alg]!;
    expect(pub.kid).toBe(jwkThumbprint(pub));
    expect([pub.alg, pub.use, privateJwk.kid]).toEqual([alg, "sig", pub.kid]);
    expect(isPrivateJwk(pub)).toBe(false);
    expect(isPrivateJwk(privateJwk)).toBe(true);
    expect(publicJwk(privateJwk)).toEqual(pub);
    const jws = await signJws("x", { alg, kid: pub.kid }, privateJwk);
    expect((await verifyJws(jws, { algorithms: [alg], key: pub })).header.kid).toBe(pub.kid);
  });

  test("exportPublicJwk gives the same public members from the WebCrypto key", async () => {
    const key = await importJwk(PAIRS[alg]!.publicJwk, alg, "verify");
    const { kid: _k, alg: _a, use: _u, ...members } = PAIRS[alg]!.publicJwk;
    expect(await exportPublicJwk(key)).toEqual(members);
  });
});

test("supportedAlgorithms: every algorithm of the table works on this runtime, probed once", async () => {
  const first = supportedAlgorithms();
  expect(supportedAlgorithms()).toBe(first);
  expect(await first).toEqual(ALGORITHMS);
});

describe("publicJwk and isPrivateJwk", () => {
  test("publicJwk keeps the public members, kid, alg and use, and drops the rest", () => {
    const jwk = { ...RSA.privateJwk, key_ops: ["sign"], ext: true, x5c: ["MIIB"] };
    expect(publicJwk(jwk)).toEqual({ kty: "RSA", n: RSA.publicJwk.n, e: RSA.publicJwk.e, kid: RSA.publicJwk.kid, alg: "RS256", use: "sig" });
  });
  test.each(["d", "p", "q", "dp", "dq", "qi", "oth", "k"])("a JWK with %s is private", (member) => {
    expect(isPrivateJwk({ ...EC.publicJwk, [member]: "AA" })).toBe(true);
  });
  test("publicJwk of an unknown kty is refused", () => {
    expect(() => publicJwk({ kty: "oct", k: "c2VjcmV0" })).toThrow(expect.objectContaining({ code: "ERR_JOSE_NOT_SUPPORTED" }));
  });
});

describe("import is strict per kty and per use", () => {
  const ec = EC.publicJwk;
  test.each([
    ["a missing x", { ...ec, x: undefined }, "ERR_JWK_INVALID"],
    ["an x of 31 bytes", { ...ec, x: `${ec.x!.slice(0, 41)}A` }, "ERR_JWK_INVALID"],
    ["a padded y", { ...ec, y: `${ec.y}=` }, "ERR_JWK_INVALID"],
    ["a numeric x", { ...ec, x: 12 }, "ERR_JWK_INVALID"],
    ["a point not on the curve", { ...ec, y: ec.x }, "ERR_JWK_INVALID"],
    ["another curve", { ...ec, crv: "P-384" }, "ERR_JOSE_KEY_MISMATCH"],
    ["another kty", { ...ec, kty: "OKP" }, "ERR_JOSE_KEY_MISMATCH"],
    ["use: enc", { ...ec, use: "enc" }, "ERR_JOSE_KEY_MISMATCH"],
    ["key_ops without verify", { ...ec, key_ops: ["sign"] }, "ERR_JOSE_KEY_MISMATCH"],
    ["another alg", { ...ec, alg: "ES384" }, "ERR_JOSE_KEY_MISMATCH"],
    ["private members, for verification", EC.privateJwk, "ERR_JWK_INVALID"],
    ["a secret member k, for verification", { ...ec, k: "c2VjcmV0" }, "ERR_JWK_INVALID"],
    ["not an object", "jwk", "ERR_JWK_INVALID"],
  ])("an ES256 verification key with %s is refused", async (name, jwk, code) => {
    expect(await importCode(jwk, "ES256", "verify")).toBe(code);
    if (name.includes("bytes")) expect(await importJwk(jwk as Jwk, "ES256", "verify").catch((e: Error) => e.message)).toContain("wrong length");
    if (name.includes("curve")) expect(await importJwk(jwk as Jwk, "ES256", "verify").catch((e: Error) => e.message)).toMatch(/not on the curve|type does not fit/);
  });

  test("a signing key needs its private members; multi-prime RSA is not supported", async () => {
    expect(await importCode(EC.publicJwk, "ES256", "sign")).toBe("ERR_JWK_INVALID");
    const { qi: _qi, ...noQi } = RSA.privateJwk;
    expect(await importCode(noQi, "RS256", "sign")).toBe("ERR_JWK_INVALID");
    expect(await importCode({ ...RSA.privateJwk, oth: [] }, "RS256", "sign")).toBe("ERR_JOSE_NOT_SUPPORTED");
  });

  test("an RSA key of 1024 bits fits no algorithm, as JWK or as WebCrypto key", async () => {
    const jwk = await crypto.subtle.exportKey("jwk", small.publicKey) as Jwk;
    expect(await importCode(jwk, "RS256", "verify")).toBe("ERR_JOSE_KEY_MISMATCH");
    const jws = await signJws("x", { alg: "RS256" }, RSA.privateJwk);
    await expect(verifyJws(jws, { algorithms: ["RS256"], key: small.publicKey })).rejects.toMatchObject({ code: "ERR_JOSE_KEY_MISMATCH" });
    await expect(signJws("x", { alg: "RS256" }, small.privateKey)).rejects.toMatchObject({ code: "ERR_JOSE_KEY_MISMATCH" });
  });

  test("one RSA JWK without alg serves RS256 and PS256 as two keys", async () => {
    const { alg: _alg, ...anyRsa } = RSA.publicJwk;
    const rs = await importJwk(anyRsa, "RS256", "verify");
    const ps = await importJwk(anyRsa, "PS256", "verify");
    expect([rs.algorithm.name, ps.algorithm.name]).toEqual(["RSASSA-PKCS1-v1_5", "RSA-PSS"]);
  });
});

describe("the import cache", () => {
  test("the same JWK object is imported once per algorithm and use: verifying twice returns the same key", async () => {
    const jwk = { ...EC.publicJwk };
    const jws = await signJws("x", { alg: "ES256" }, EC.privateJwk);
    const first = await verifyJws(jws, { algorithms: ["ES256"], key: jwk });
    const second = await verifyJws(jws, { algorithms: ["ES256"], key: jwk });
    expect(second.key).toBe(first.key);
    // A copy is another object, so another import.
    expect((await verifyJws(jws, { algorithms: ["ES256"], key: { ...jwk } })).key).not.toBe(first.key);
  });
});

describe("thumbprints (RFC 7638)", () => {
  test("only the required members count, and each of them does", () => {
    const { kty, crv, x, y } = EC.publicJwk as { kty: string; crv: string; x: string; y: string };
    const expected = jwkThumbprint({ kty, crv, x, y });
    expect(jwkThumbprint({ ...EC.publicJwk, kid: "other", use: "sig", extra: 1 })).toBe(expected);
    expect(jwkThumbprint(EC.privateJwk)).toBe(expected);
    expect(jwkThumbprint({ kty, crv, x: y, y: x })).not.toBe(expected);
    expect(jwkThumbprint({ kty, crv: "P-384", x, y })).not.toBe(expected);
  });
  test("a missing required member or an unknown kty is refused", () => {
    expect(() => jwkThumbprint({ kty: "EC", crv: "P-256", x: "AA" })).toThrow(expect.objectContaining({ code: "ERR_JWK_INVALID" }));
    expect(() => jwkThumbprint({ kty: "oct", k: "AA" })).toThrow(expect.objectContaining({ code: "ERR_JOSE_NOT_SUPPORTED" }));
  });
});
