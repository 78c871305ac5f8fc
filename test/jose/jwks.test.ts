// JWK Sets held in memory (RFC 7517 §5): keys of unknown types ignored, private keys refused, selection by
// `kid` and by the type `alg` needs, each matching key tried when the header names none, and imports kept.
import { describe, expect, test } from "vitest";
import { generateSigningKey, type Jwk } from "../../lib/jose/jwk.ts";
import { localJwks, MAX_SET_KEYS, parseJwks } from "../../lib/jose/jwks.ts";
import { signJws, verifyJws } from "../../lib/jose/jws.ts";

const EC1 = await generateSigningKey("ES256");
const EC2 = await generateSigningKey("ES256");
const RSA = await generateSigningKey("RS256");
const ED = await generateSigningKey("EdDSA");
const withoutKid = ({ kid: _kid, ...jwk }: Jwk): Jwk => jwk;

async function code(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => undefined, (e: { code: string }) => e);
  expect(error, "it was accepted").toBeDefined();
  return (error as { code: string }).code;
}

describe("parseJwks", () => {
  test("keeps usable keys and ignores what it does not understand (RFC 7517 §5)", () => {
    const set = {
      keys: [
        EC1.publicJwk,
        { kty: "EC", crv: "P-521", x: "AA", y: "AA" },
        { kty: "OKP", crv: "X25519", x: EC1.publicJwk.x },
        { kty: "OKP", crv: "Ed448", x: "AA" },
        { kty: "unknown" },
        { ...EC2.publicJwk, alg: "ES512" },
        { ...EC2.publicJwk, use: "enc" },
        { ...EC2.publicJwk, x: "not base64!" },
        "a string",
        null,
        RSA.publicJwk,
      ],
    };
    expect(parseJwks(set).map((key) => key.jwk)).toEqual([EC1.publicJwk, RSA.publicJwk]);
  });

  test("lists, per key, the algorithms it may verify", () => {
    const { alg: _alg, ...anyRsa } = RSA.publicJwk;
    const [ec, rsa, rsaAny, ed] = parseJwks({ keys: [EC1.publicJwk, RSA.publicJwk, withoutKid(anyRsa), ED.publicJwk] });
    expect([ec!.algorithms, rsa!.algorithms, rsaAny!.algorithms, ed!.algorithms]).toEqual([["ES256"], ["RS256"], ["RS256", "PS256"], ["EdDSA"]]);
  });

  test.each([
    ["a private EC key", () => EC1.privateJwk],
    ["a private RSA key", () => RSA.privateJwk],
    ["an oct secret", () => ({ kty: "oct", k: "c2VjcmV0" })],
    ["a lone d", () => ({ ...ED.publicJwk, d: "AA" })],
  ])("a set holding %s is refused whole", (_name, key) => {
    expect(() => parseJwks({ keys: [EC1.publicJwk, key()] })).toThrow(expect.objectContaining({ code: "ERR_JWKS_INVALID" }));
  });

  test.each([
    ["not an object", "keys"],
    ["null", null],
    ["without keys", {}],
    ["keys not an array", { keys: { a: EC1.publicJwk } }],
    [`more than ${MAX_SET_KEYS} keys`, { keys: Array.from({ length: MAX_SET_KEYS + 1 }, () => EC1.publicJwk) }],
  ])("a set that is %s is refused", (_name, set) => {
    expect(() => parseJwks(set)).toThrow(expect.objectContaining({ code: "ERR_JWKS_INVALID" }));
  });
});

describe("localJwks as the key of verifyJws", () => {
  const set = { keys: [EC1.publicJwk, EC2.publicJwk, RSA.publicJwk, ED.publicJwk] };
  const keys = localJwks(set);

  test("the kid selects the key", async () => {
    for (const pair of [EC1, EC2, RSA, ED]) {
      const alg = pair.publicJwk.alg as "ES256";
      const jws = await signJws("x", { alg, kid: pair.publicJwk.kid }, pair.privateJwk);
      expect((await verifyJws(jws, { algorithms: ["ES256", "RS256", "EdDSA"], key: keys })).header.kid).toBe(pair.publicJwk.kid);
    }
  });

  test("without a kid, each key that fits alg is tried", async () => {
    const jws = await signJws("x", { alg: "ES256" }, EC2.privateJwk);
    await verifyJws(jws, { algorithms: ["ES256"], key: keys });
    const stranger = await generateSigningKey("ES256");
    const forged = await signJws("x", { alg: "ES256" }, stranger.privateJwk);
    expect(await code(verifyJws(forged, { algorithms: ["ES256"], key: keys }))).toBe("ERR_JWS_SIGNATURE_VERIFICATION_FAILED");
  });

  test("an unknown kid, or a kid naming a key of another type than alg, matches no key", async () => {
    const unknown = await signJws("x", { alg: "ES256", kid: "nope" }, EC1.privateJwk);
    expect(await code(verifyJws(unknown, { algorithms: ["ES256"], key: keys }))).toBe("ERR_JWKS_NO_MATCHING_KEY");
    const confused = await signJws("x", { alg: "ES256", kid: RSA.publicJwk.kid }, EC1.privateJwk);
    expect(await code(verifyJws(confused, { algorithms: ["ES256"], key: keys }))).toBe("ERR_JWKS_NO_MATCHING_KEY");
    const noEd = localJwks({ keys: [EC1.publicJwk] });
    const ed = await signJws("x", { alg: "EdDSA" }, ED.privateJwk);
    expect(await code(verifyJws(ed, { algorithms: ["EdDSA"], key: noEd }))).toBe("ERR_JWKS_NO_MATCHING_KEY");
  });

  test("a key is imported once: verifying again with the set returns the same CryptoKey", async () => {
    const jws = await signJws("x", { alg: "EdDSA", kid: ED.publicJwk.kid }, ED.privateJwk);
    const first = await verifyJws(jws, { algorithms: ["EdDSA"], key: keys });
    expect((await verifyJws(jws, { algorithms: ["EdDSA"], key: keys })).key).toBe(first.key);
  });

  test("a set with a private key is refused when the source is made, not at the first token", () => {
    expect(() => localJwks({ keys: [EC1.privateJwk] })).toThrow(expect.objectContaining({ code: "ERR_JWKS_INVALID" }));
  });
});
