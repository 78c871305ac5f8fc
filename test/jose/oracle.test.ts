// jose (panva/jose, a devDependency) as an oracle in both directions, for every algorithm of the table: what
// jose signs the core verifies, what the core signs jose verifies, JWS and JWT (with `typ`), and the RFC 7638
// thumbprints agree. Runs under vitest, bun test and deno test.
import * as jose from "jose";
import { describe, expect, test } from "vitest";
import type { JwsAlgorithm } from "../../lib/jose/algorithms.ts";
import { exportPublicJwk, generateSigningKey, type Jwk, jwkThumbprint, publicJwk } from "../../lib/jose/jwk.ts";
import { signJws, verifyJws } from "../../lib/jose/jws.ts";
import { signJwt, verifyJwt } from "../../lib/jose/jwt.ts";

const ALGORITHMS: JwsAlgorithm[] = ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"];
const NOW = 1_750_000_000;
const CLAIMS = {
  iss: "https://as.example",
  sub: "user-1",
  aud: ["https://api.example", "https://other.example"],
  iat: NOW,
  exp: NOW + 300,
  jti: "j-1",
  scope: "read write",
  cnf: { jkt: "abc" },
};

describe.each(ALGORITHMS)("%s", (alg) => {
  /** A key pair made by jose, as JWKs. */
  async function josePair(): Promise<{ privateJwk: Jwk; publicJwk: Jwk; privateKey: jose.CryptoKey; publicKey: jose.CryptoKey }> {
    const { privateKey, publicKey } = await jose.generateKeyPair(alg, { extractable: true });
    return {
      privateKey,
      publicKey,
      privateJwk: await jose.exportJWK(privateKey) as Jwk,
      publicJwk: await jose.exportJWK(publicKey) as Jwk,
    };
  }

  test("what jose signs, the core verifies (JWT with typ, and bare JWS)", async () => {
    const pair = await josePair();
    const jwt = await new jose.SignJWT(CLAIMS).setProtectedHeader({ alg, typ: "at+jwt", kid: "k1" }).sign(pair.privateKey);
    const verified = await verifyJwt(jwt, {
      algorithms: [alg],
      key: pair.publicJwk,
      typ: "at+jwt",
      issuer: CLAIMS.iss,
      audience: "https://api.example",
      now: NOW * 1000,
    });
    expect(verified.payload).toEqual(CLAIMS);
    expect(verified.header).toEqual({ alg, typ: "at+jwt", kid: "k1" });

    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const jws = await new jose.CompactSign(bytes).setProtectedHeader({ alg }).sign(pair.privateKey);
    expect((await verifyJws(jws, { algorithms: [alg], key: pair.publicKey })).payload).toEqual(bytes);
  });

  test("what the core signs, jose verifies (JWT with typ, and bare JWS)", async () => {
    const pair = await josePair();
    const jwt = await signJwt(CLAIMS, { alg, key: pair.privateJwk, kid: "k2", typ: "at+jwt" });
    const verified = await jose.jwtVerify(jwt, pair.publicKey, {
      algorithms: [alg],
      typ: "at+jwt",
      issuer: CLAIMS.iss,
      audience: "https://api.example",
      currentDate: new Date(NOW * 1000),
    });
    expect(verified.payload).toEqual(CLAIMS);
    expect(verified.protectedHeader).toEqual({ alg, typ: "at+jwt", kid: "k2" });

    const jws = await signJws("payload ✓", { alg }, pair.privateKey);
    const { payload } = await jose.compactVerify(jws, pair.publicKey, { algorithms: [alg] });
    expect(new TextDecoder().decode(payload)).toBe("payload ✓");
  });

  test("keys the core generates are jose's too: the kid is jose's thumbprint, and jose verifies with the public JWK", async () => {
    const { privateJwk, publicJwk: pub } = await generateSigningKey(alg);
    expect(pub.kid).toBe(await jose.calculateJwkThumbprint(pub as jose.JWK));
    expect(privateJwk.kid).toBe(pub.kid);
    const jwt = await signJwt({ sub: "s" }, { alg, key: privateJwk, kid: pub.kid!, typ: "JWT" });
    const key = await jose.importJWK(pub as jose.JWK, alg);
    expect((await jose.jwtVerify(jwt, key, { algorithms: [alg], typ: "JWT" })).payload).toEqual({ sub: "s" });
  });

  test("thumbprints equal jose's calculateJwkThumbprint, from a private JWK and from an exported public key", async () => {
    const pair = await josePair();
    const expected = await jose.calculateJwkThumbprint(pair.publicJwk as jose.JWK);
    expect(jwkThumbprint(pair.publicJwk)).toBe(expected);
    expect(jwkThumbprint(pair.privateJwk)).toBe(expected);
    expect(jwkThumbprint(await exportPublicJwk(pair.publicKey))).toBe(expected);
    expect(publicJwk(pair.privateJwk)).toEqual(publicJwk(pair.publicJwk));
  });
});
