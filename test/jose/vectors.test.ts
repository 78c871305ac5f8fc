// Published test vectors (test/jose/fixtures/): RFC 7515 A.2 (RS256, sign and verify) and A.3 (ES256, verify:
// ECDSA is randomized), RFC 8037 A.3-A.5 (Ed25519 thumbprint, sign, verify), RFC 7638 §3.1 (thumbprint) and
// RFC 7520 §4.1 (RS256 with a kid). RSASSA-PKCS1-v1_5 and Ed25519 are deterministic, so signing must give
// the published bytes exactly.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { jwkThumbprint, publicJwk } from "../../lib/jose/jwk.ts";
import { signJws, verifyJws } from "../../lib/jose/jws.ts";
import { localJwks } from "../../lib/jose/jwks.ts";
import { verifyJwt } from "../../lib/jose/jwt.ts";
import type { Jwk } from "../../lib/jose/jwk.ts";
import type { JwsAlgorithm } from "../../lib/jose/algorithms.ts";

// deno-lint-ignore no-explicit-any
const fixture = (name: string): any => JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8"));
const rfc7515 = fixture("rfc7515.json");
const rfc8037 = fixture("rfc8037.json");
const rfc7638 = fixture("rfc7638.json");
const rfc7520 = fixture("rfc7520.json");

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
/** The payload segment of a compact JWS, decoded (it is what was signed). */
const payloadOf = (jws: string) => Uint8Array.from(atob(jws.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

describe("RFC 7515 Appendix A", () => {
  test.each(["A.2", "A.3"])("%s verifies as a JWS and as a JWT (its claims, before its 2011 exp)", async (name) => {
    const { alg, jwk, jws } = rfc7515[name] as { alg: JwsAlgorithm; jwk: Jwk; jws: string };
    const verified = await verifyJws(jws, { algorithms: [alg], key: publicJwk(jwk) });
    expect(verified.header).toEqual({ alg });
    const jwt = await verifyJwt(jws, { algorithms: [alg], key: publicJwk(jwk), typ: null, now: 1300819000_000 });
    expect(jwt.payload).toEqual(rfc7515.claims);
    // The same token after its exp: the claims are checked, not only the signature.
    await expect(verifyJwt(jws, { algorithms: [alg], key: publicJwk(jwk), typ: null, now: 1300819380_000 })).rejects
      .toMatchObject({ code: "ERR_JWT_EXPIRED" });
  });

  test("A.2: signing the same header and payload with the same key gives the published JWS", async () => {
    const { jwk, jws } = rfc7515["A.2"];
    expect(await signJws(payloadOf(jws), { alg: "RS256" }, jwk)).toBe(jws);
  });

  test("A.3: one changed bit of the signature fails", async () => {
    const { jwk, jws } = rfc7515["A.3"] as { jwk: Jwk; jws: string };
    const last = jws.at(-2) === "A" ? "B" : "A";
    const tampered = jws.slice(0, -2) + last + jws.at(-1);
    await expect(verifyJws(tampered, { algorithms: ["ES256"], key: publicJwk(jwk) })).rejects
      .toMatchObject({ code: "ERR_JWS_SIGNATURE_VERIFICATION_FAILED" });
  });
});

describe("RFC 8037 Appendix A (Ed25519)", () => {
  test("A.3: the thumbprint of the public key", () => {
    expect(jwkThumbprint(publicJwk(rfc8037.jwk))).toBe(rfc8037.thumbprint);
  });
  test("A.4: signing gives the published JWS", async () => {
    expect(await signJws(rfc8037.payload, { alg: "EdDSA" }, rfc8037.jwk)).toBe(rfc8037.jws);
  });
  test("A.5: the JWS verifies with the public key", async () => {
    const { payload } = await verifyJws(rfc8037.jws, { algorithms: ["EdDSA"], key: publicJwk(rfc8037.jwk) });
    expect(text(payload)).toBe(rfc8037.payload);
  });
});

test("RFC 7638 §3.1: the thumbprint of the example RSA key, whatever optional members it carries", () => {
  expect(jwkThumbprint(rfc7638.jwk)).toBe(rfc7638.thumbprint);
  const { kty, n, e } = rfc7638.jwk;
  expect(jwkThumbprint({ kty, n, e })).toBe(rfc7638.thumbprint);
});

describe("RFC 7520 §4.1 (RSA v1.5 signature, with kid)", () => {
  test("signing gives the published compact serialization", async () => {
    expect(await signJws(rfc7520.payload, rfc7520.protected, rfc7520.jwk)).toBe(rfc7520.compact);
  });
  test("it verifies with the public key, and its kid selects the key from a set", async () => {
    const { header, payload } = await verifyJws(rfc7520.compact, { algorithms: ["RS256"], key: publicJwk(rfc7520.jwk) });
    expect(header).toEqual(rfc7520.protected);
    expect(text(payload)).toBe(rfc7520.payload);
    const set = { keys: [rfc7638.jwk, publicJwk(rfc8037.jwk), publicJwk(rfc7520.jwk)] };
    const fromSet = await verifyJws(rfc7520.compact, { algorithms: ["RS256"], key: localJwks(set) });
    expect(fromSet.header.kid).toBe("bilbo.baggins@hobbiton.example");
  });
});
