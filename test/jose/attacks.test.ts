// Known attacks on JWS verification, each refused with its own JoseError code: `none`, HMAC keyed with the
// public key (alg confusion), algorithms outside the allow-list, keys of the wrong type, `crit`, `b64`,
// oversized and malformed tokens, ECDSA signatures in DER or with r = s = 0 (CVE-2022-21449), an embedded
// `jwk` carrying private members, and `jku`/`x5u` never followed.
import { describe, expect, test } from "vitest";
import { base64url } from "../../lib/crypto.ts";
import type { JwsAlgorithm } from "../../lib/jose/algorithms.ts";
import type { JoseErrorCode } from "../../lib/jose/errors.ts";
import { generateSigningKey, importJwk, type Jwk } from "../../lib/jose/jwk.ts";
import { type KeyInput, signJws, verifyJws } from "../../lib/jose/jws.ts";
import { signJwt, verifyJwt } from "../../lib/jose/jwt.ts";

const enc = new TextEncoder();
const b64json = (value: unknown) => base64url(enc.encode(JSON.stringify(value)));
const PAYLOAD = b64json({ sub: "admin", exp: 4102444800 });

const ES256 = await generateSigningKey("ES256");
const ES384 = await generateSigningKey("ES384");
const RS256 = await generateSigningKey("RS256");
const EDDSA = await generateSigningKey("EdDSA");

const OPERATION: Record<JwsAlgorithm, AlgorithmIdentifier | EcdsaParams | RsaPssParams> = {
  ES256: { name: "ECDSA", hash: "SHA-256" } as EcdsaParams,
  ES384: { name: "ECDSA", hash: "SHA-384" } as EcdsaParams,
  EdDSA: "Ed25519",
  Ed25519: "Ed25519",
  RS256: "RSASSA-PKCS1-v1_5",
  PS256: { name: "RSA-PSS", saltLength: 32 },
};

/** A token with any header, signed for real by `privateJwk` (what signJws refuses to write, an attacker can). */
async function forge(header: Record<string, unknown>, privateJwk: Jwk, payload = PAYLOAD): Promise<string> {
  const alg = header.alg as JwsAlgorithm;
  const input = `${b64json(header)}.${payload}`;
  const key = await importJwk(privateJwk, alg, "sign");
  return `${input}.${base64url(new Uint8Array(await crypto.subtle.sign(OPERATION[alg], key, enc.encode(input))))}`;
}

async function refusal(token: string, algorithms: JwsAlgorithm[], key: KeyInput, extra: Record<string, unknown> = {}) {
  const error = await verifyJws(token, { algorithms, key, ...extra }).then(() => undefined, (e: unknown) => e);
  expect(error, "the token was accepted").toBeDefined();
  return error as { code: JoseErrorCode; message: string; name: string };
}

async function expectCode(token: string, algorithms: JwsAlgorithm[], key: KeyInput, code: JoseErrorCode) {
  const error = await refusal(token, algorithms, key);
  expect(error.name).toBe("JoseError");
  expect(error.code).toBe(code);
  return error;
}

describe("alg: none", () => {
  test.each([
    ["without a signature", ""],
    ["with a signature", "c2lnbmF0dXJl"],
  ])("%s is refused, whatever the allow-list", async (_name, signature) => {
    for (const header of [{ alg: "none" }, { alg: "None" }, { alg: "NONE" }]) {
      const token = `${b64json(header)}.${PAYLOAD}.${signature}`;
      await expectCode(token, ["ES256", "ES384", "EdDSA", "RS256", "PS256"], ES256.publicJwk, "ERR_JOSE_ALG_NOT_ALLOWED");
    }
  });

  test("and no allow-list may name it, nor HS256 (the caller's bug, a TypeError)", async () => {
    for (const alg of ["none", "HS256"]) {
      await expect(verifyJws("a.b.c", { algorithms: [alg as JwsAlgorithm], key: ES256.publicJwk })).rejects.toThrow(TypeError);
    }
    await expect(verifyJws("a.b.c", { algorithms: [], key: ES256.publicJwk })).rejects.toThrow(TypeError);
  });
});

describe("HS256 keyed with the public key (algorithm confusion)", () => {
  /** An HS256 token whose HMAC key is `secret`: valid for a verifier that takes a public key as a secret. */
  async function hs256(secret: Uint8Array, kid?: string): Promise<string> {
    const input = `${b64json({ alg: "HS256", ...(kid && { kid }) })}.${PAYLOAD}`;
    const key = await crypto.subtle.importKey("raw", secret as Uint8Array<ArrayBuffer>, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    return `${input}.${base64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(input))))}`;
  }

  test.each([
    ["the public JWK as JSON", () => enc.encode(JSON.stringify(RS256.publicJwk))],
    ["the modulus bytes", () => Uint8Array.from(atob(RS256.publicJwk.n!.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0))],
    ["the SPKI DER", async () => {
      const key = await importJwk(RS256.publicJwk, "RS256", "verify");
      return new Uint8Array(await crypto.subtle.exportKey("spki", key));
    }],
  ])("keyed with %s: refused as an algorithm outside every allow-list", async (_name, secret) => {
    const token = await hs256(await secret(), RS256.publicJwk.kid);
    const all: JwsAlgorithm[] = ["ES256", "ES384", "EdDSA", "RS256", "PS256"];
    await expectCode(token, all, RS256.publicJwk, "ERR_JOSE_ALG_NOT_ALLOWED");
    await expectCode(token, all, await importJwk(RS256.publicJwk, "RS256", "verify"), "ERR_JOSE_ALG_NOT_ALLOWED");
    await expectCode(token, all, async () => [], "ERR_JOSE_ALG_NOT_ALLOWED");
  });
});

describe("the allow-list and the key's type", () => {
  test("a valid token of an algorithm outside this use's list is refused", async () => {
    const token = await signJws("x", { alg: "ES384" }, ES384.privateJwk);
    await expectCode(token, ["ES256"], ES384.publicJwk, "ERR_JOSE_ALG_NOT_ALLOWED");
    expect((await verifyJws(token, { algorithms: ["ES256", "ES384"], key: ES384.publicJwk })).header.alg).toBe("ES384");
  });

  test("a header alg that the given key does not fit is refused before any signature check", async () => {
    const es256 = await signJws("x", { alg: "ES256" }, ES256.privateJwk);
    const all: JwsAlgorithm[] = ["ES256", "ES384", "EdDSA", "RS256", "PS256"];
    // JWKs of another kty or curve, with and without an alg member of their own.
    const noAlg = ({ alg: _alg, ...jwk }: Jwk): Jwk => jwk;
    for (const jwk of [RS256.publicJwk, ES384.publicJwk, EDDSA.publicJwk]) {
      await expectCode(es256, all, jwk, "ERR_JOSE_KEY_MISMATCH");
      await expectCode(es256, all, noAlg(jwk), "ERR_JOSE_KEY_MISMATCH");
    }
    // WebCrypto keys likewise: an RSA key imported for RS256 is not a PS256 key.
    await expectCode(es256, all, await importJwk(RS256.publicJwk, "RS256", "verify"), "ERR_JOSE_KEY_MISMATCH");
    const { alg: _a, ...anyRsaPrivate } = RS256.privateJwk;
    const ps256 = await forge({ alg: "PS256" }, anyRsaPrivate);
    const { alg: _b, ...anyRsa } = RS256.publicJwk;
    await expectCode(ps256, ["RS256", "PS256"], await importJwk(anyRsa, "RS256", "verify"), "ERR_JOSE_KEY_MISMATCH");
    // A JWK whose own alg says RS256 is not used for PS256.
    await expectCode(ps256, ["RS256", "PS256"], RS256.publicJwk, "ERR_JOSE_KEY_MISMATCH");
    // A private key where a public key is expected.
    const privateKey = await importJwk(ES256.privateJwk, "ES256", "sign");
    await expectCode(es256, ["ES256"], privateKey, "ERR_JOSE_KEY_MISMATCH");
  });

  test("a signature by another key of the right type fails verification", async () => {
    const other = await generateSigningKey("ES256");
    const token = await signJws("x", { alg: "ES256" }, other.privateJwk);
    await expectCode(token, ["ES256"], ES256.publicJwk, "ERR_JWS_SIGNATURE_VERIFICATION_FAILED");
  });

  test("a changed payload fails verification", async () => {
    const [h, , s] = (await signJws("x", { alg: "EdDSA" }, EDDSA.privateJwk)).split(".");
    await expectCode(`${h}.${b64json("y")}.${s}`, ["EdDSA"], EDDSA.publicJwk, "ERR_JWS_SIGNATURE_VERIFICATION_FAILED");
  });
});

describe("header parameters that change how the token is read", () => {
  test("crit is refused, even naming a parameter that is present and even empty", async () => {
    for (const header of [{ alg: "ES256", crit: ["exp"], exp: 1 }, { alg: "ES256", crit: [] }, { alg: "ES256", crit: ["b64"], b64: true }]) {
      const error = await expectCode(await forge(header, ES256.privateJwk), ["ES256"], ES256.publicJwk, "ERR_JOSE_NOT_SUPPORTED");
      expect(error.message).toContain("crit");
    }
  });

  test("b64 is refused, false (an unencoded payload, RFC 7797) or true", async () => {
    for (const b64 of [false, true]) {
      const error = await expectCode(await forge({ alg: "ES256", b64 }, ES256.privateJwk), ["ES256"], ES256.publicJwk, "ERR_JOSE_NOT_SUPPORTED");
      expect(error.message).toContain("b64");
    }
  });

  test("jku, x5u and x5c are never followed: the given key decides, and nothing is fetched", async () => {
    const fetched: string[] = [];
    const original = globalThis.fetch;
    globalThis.fetch = ((input: RequestInfo | URL) => (fetched.push(String(input)), Promise.reject(new Error("no")))) as typeof fetch;
    try {
      const attacker = await generateSigningKey("ES256");
      const header = { alg: "ES256", jku: "https://attacker.example/jwks", x5u: "https://attacker.example/c.pem", x5c: ["MIIB"], jwk: attacker.publicJwk };
      const token = await forge(header, attacker.privateJwk);
      await expectCode(token, ["ES256"], ES256.publicJwk, "ERR_JWS_SIGNATURE_VERIFICATION_FAILED");
      expect(fetched).toEqual([]);
    } finally {
      globalThis.fetch = original;
    }
  });

  test.each(["kid", "typ", "cty"])("a non-string %s is malformed", async (name) => {
    const token = await forge({ alg: "ES256", [name]: { x: 1 } }, ES256.privateJwk);
    await expectCode(token, ["ES256"], ES256.publicJwk, "ERR_JWS_INVALID");
  });
});

const valid = await signJws("x", { alg: "ES256" }, ES256.privateJwk);

describe("size and form", () => {
  test("a token over the size limit is refused unread (16 KiB by default, or the caller's limit)", async () => {
    const [h, , s] = valid.split(".");
    const huge = `${h}.${base64url(new Uint8Array(16 * 1024))}.${s}`;
    const error = await expectCode(huge, ["ES256"], ES256.publicJwk, "ERR_JWS_INVALID");
    expect(error.message).toContain("size limit");
    expect((await refusal(valid, ["ES256"], ES256.publicJwk, { maxTokenLength: 100 })).message).toContain("size limit");
    await verifyJws(valid, { algorithms: ["ES256"], key: ES256.publicJwk, maxTokenLength: valid.length });
  });

  test("a protected header over 8 KiB decoded is refused", async () => {
    const token = await forge({ alg: "ES256", pad: "x".repeat(8200) }, ES256.privateJwk);
    expect((await refusal(token, ["ES256"], ES256.publicJwk)).message).toContain("Header exceeds");
  });

  test.each([
    ["two segments", (t: string) => t.split(".").slice(0, 2).join(".")],
    ["four segments", (t: string) => `${t}.AAAA`],
    ["five segments (a JWE)", (t: string) => `${t}.AAAA.AAAA`],
    ["a padded header", (t: string) => t.replace(".", "=.")],
    ["a padded signature", (t: string) => `${t}==`],
    ["'+' in the signature", (t: string) => t.slice(0, -3) + "+" + t.slice(-2)],
    ["'/' in the payload", (t: string) => t.replace(/\.(.)/, "./")],
    ["a space in the header", (t: string) => ` ${t}`],
    ["a payload of 4n+1 characters", (t: string) => t.replace(/\.([^.]*)\./, (_m, p: string) => `.${p.slice(0, p.length - (p.length % 4) + 1)}.`)],
    ["non-canonical trailing bits", (t: string) => t.slice(0, -1) + (t.endsWith("A") ? "B" : String.fromCharCode(t.charCodeAt(t.length - 1) ^ 1))],
    ["an empty signature", (t: string) => t.slice(0, t.lastIndexOf(".") + 1)],
  ])("%s is malformed", async (name, mangle) => {
    const token = mangle(valid);
    expect(token).not.toBe(valid);
    const error = await expectCode(token, ["ES256"], ES256.publicJwk, "ERR_JWS_INVALID");
    if (name.includes("segments")) expect(error.message).toContain("three segments");
  });

  test.each([
    ["an array", "[]"],
    ["null", "null"],
    ["a string", '"ES256"'],
    ["a number", "1"],
    ["not JSON", "{alg:ES256}"],
    ["not UTF-8", "\u00ff"],
  ])("a header that is %s is refused", async (_name, json) => {
    const bytes = json === "\u00ff" ? new Uint8Array([0x7b, 0xff, 0x7d]) : enc.encode(json);
    const [, p, s] = valid.split(".");
    const error = await expectCode(`${base64url(bytes)}.${p}.${s}`, ["ES256"], ES256.publicJwk, "ERR_JWS_INVALID");
    expect(error.message).toContain("JSON object");
  });

  test("a header without alg is refused", async () => {
    const [, p, s] = valid.split(".");
    await expectCode(`${b64json({ kid: "x" })}.${p}.${s}`, ["ES256"], ES256.publicJwk, "ERR_JWS_INVALID");
  });
});

describe("ECDSA signatures (RFC 7518 §3.4: r || s, never DER)", () => {
  /** DER of a raw r || s signature (X9.62 ECDSA-Sig-Value), as a Java or OpenSSL signer would emit it. */
  function der(raw: Uint8Array): Uint8Array {
    const integer = (bytes: Uint8Array) => {
      let i = 0;
      while (i < bytes.length - 1 && bytes[i] === 0) i++;
      const body = bytes[i]! & 0x80 ? [0, ...bytes.subarray(i)] : [...bytes.subarray(i)];
      return [0x02, body.length, ...body];
    };
    const half = raw.length / 2;
    const seq = [...integer(raw.subarray(0, half)), ...integer(raw.subarray(half))];
    return new Uint8Array([0x30, ...(seq.length > 127 ? [0x81] : []), seq.length, ...seq]);
  }
  const decode = (s: string) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

  test.each([["ES256", ES256], ["ES384", ES384]] as const)("%s: the same signature in DER is refused as malformed", async (alg, pair) => {
    const token = await signJws("x", { alg }, pair.privateJwk);
    const [h, p, s] = token.split(".");
    const derToken = `${h}.${p}.${base64url(der(decode(s!)))}`;
    const error = await expectCode(derToken, [alg], pair.publicJwk, "ERR_JWS_INVALID");
    expect(error.message).toContain("wrong length");
  });

  test.each([
    ["r = s = 0 (the psychic signature)", (n: number) => new Uint8Array(n)],
    ["r = 0", (n: number, sig: Uint8Array) => Uint8Array.from(sig, (b, i) => (i < n / 2 ? 0 : b))],
    ["s = 0", (n: number, sig: Uint8Array) => Uint8Array.from(sig, (b, i) => (i >= n / 2 ? 0 : b))],
    ["r = s = n (the group order)", (n: number) => {
      const order = n === 64 ? "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551" : "";
      const half = Uint8Array.from(order.match(/../g)!, (b) => parseInt(b, 16));
      return new Uint8Array([...half, ...half]);
    }],
  ])("ES256: %s is refused before any key is tried", async (_name, make) => {
    const token = await signJws("x", { alg: "ES256" }, ES256.privateJwk);
    const [h, p, s] = token.split(".");
    const forged = `${h}.${p}.${base64url(make(64, decode(s!)))}`;
    const error = await expectCode(forged, ["ES256"], ES256.publicJwk, "ERR_JWS_INVALID");
    expect(error.message).toContain("outside [1, n-1]");
  });

  test("ES384: r = s = 0 is refused", async () => {
    const [h, p] = (await signJws("x", { alg: "ES384" }, ES384.privateJwk)).split(".");
    await expectCode(`${h}.${p}.${base64url(new Uint8Array(96))}`, ["ES384"], ES384.publicJwk, "ERR_JWS_INVALID");
  });

  test("Ed25519 and RSA signatures of the wrong length never verify", async () => {
    const [h, p] = (await signJws("x", { alg: "EdDSA" }, EDDSA.privateJwk)).split(".");
    await expectCode(`${h}.${p}.${base64url(new Uint8Array(63))}`, ["EdDSA"], EDDSA.publicJwk, "ERR_JWS_INVALID");
    const [rh, rp, rs] = (await signJws("x", { alg: "RS256" }, RS256.privateJwk)).split(".");
    const short = base64url(decode(rs!).subarray(1));
    await expectCode(`${rh}.${rp}.${short}`, ["RS256"], RS256.publicJwk, "ERR_JWS_SIGNATURE_VERIFICATION_FAILED");
  });
});

describe("a key embedded in the header (jwk), as DPoP proofs carry it", () => {
  test("a public key of the right type verifies, and is the key returned", async () => {
    const token = await signJws("x", { alg: "ES256", jwk: ES256.publicJwk }, ES256.privateJwk);
    const { key, header } = await verifyJws(token, { algorithms: ["ES256"], embeddedJwk: true });
    expect(key.type).toBe("public");
    expect(header.jwk).toEqual(ES256.publicJwk);
  });

  test("an embedded jwk with private members is refused, even if the signature is valid", async () => {
    const token = await forge({ alg: "ES256", jwk: ES256.privateJwk }, ES256.privateJwk);
    const error = await refusal(token, ["ES256"], undefined as unknown as KeyInput, { embeddedJwk: true });
    expect(error.code).toBe("ERR_JWK_INVALID");
    expect(error.message).toContain("private");
    const secret = await forge({ alg: "ES256", jwk: { ...ES256.publicJwk, k: "c2VjcmV0" } }, ES256.privateJwk);
    expect((await refusal(secret, ["ES256"], undefined as unknown as KeyInput, { embeddedJwk: true })).code).toBe("ERR_JWK_INVALID");
  });

  test("an embedded jwk of another type than alg needs is refused", async () => {
    const token = await forge({ alg: "ES256", jwk: RS256.publicJwk }, ES256.privateJwk);
    expect((await refusal(token, ["ES256"], undefined as unknown as KeyInput, { embeddedJwk: true })).code).toBe("ERR_JOSE_KEY_MISMATCH");
  });

  test("a missing or non-object jwk is malformed; and the embedded key is ignored unless asked for", async () => {
    const bare = await signJws("x", { alg: "ES256" }, ES256.privateJwk);
    expect((await refusal(bare, ["ES256"], undefined as unknown as KeyInput, { embeddedJwk: true })).code).toBe("ERR_JWS_INVALID");
    const stringJwk = await forge({ alg: "ES256", jwk: "x" }, ES256.privateJwk);
    expect((await refusal(stringJwk, ["ES256"], undefined as unknown as KeyInput, { embeddedJwk: true })).code).toBe("ERR_JWS_INVALID");
    const attacker = await generateSigningKey("ES256");
    const selfSigned = await signJws("x", { alg: "ES256", jwk: attacker.publicJwk }, attacker.privateJwk);
    await expectCode(selfSigned, ["ES256"], ES256.publicJwk, "ERR_JWS_SIGNATURE_VERIFICATION_FAILED");
  });

  test("passing both a key and embeddedJwk, or neither, is the caller's bug", async () => {
    await expect(verifyJws("a.b.c", { algorithms: ["ES256"] })).rejects.toThrow(TypeError);
    await expect(verifyJws("a.b.c", { algorithms: ["ES256"], key: ES256.publicJwk, embeddedJwk: true })).rejects.toThrow(TypeError);
  });
});

describe("errors never quote the token", () => {
  const sneaky = "SECRETPAYLOADMARKER";
  test("from malformed input to a failed claim", async () => {
    const token = await signJwt({ sub: sneaky, exp: 1 }, { alg: "ES256", key: ES256.privateJwk, typ: "JWT" });
    // Thunks, each awaited in turn: a promise that rejects before anything awaits it is an unhandled rejection on Deno.
    const attempts = [
      () => verifyJws(`${token}.x`, { algorithms: ["ES256"], key: ES256.publicJwk }),
      () => verifyJws(token.replace(".", "=."), { algorithms: ["ES256"], key: ES256.publicJwk }),
      () => verifyJws(token, { algorithms: ["ES256"], key: RS256.publicJwk }),
      () => verifyJws(token, { algorithms: ["ES384"], key: ES384.publicJwk }),
      () => verifyJwt(token, { algorithms: ["ES256"], key: ES256.publicJwk, typ: "at+jwt" }),
      () => verifyJwt(token, { algorithms: ["ES256"], key: ES256.publicJwk, typ: "JWT" }),
    ];
    for (const attempt of attempts) {
      const error = await attempt().then(() => undefined, (e: Error) => e);
      expect(error).toBeDefined();
      for (const part of [sneaky, ...token.split(".")]) expect(error!.message).not.toContain(part);
    }
  });
});
