// JWT claims (RFC 7519 §4.1, §7.2) and explicit typing (RFC 8725 §3.11): `typ` compared as a media type,
// `exp`/`nbf`/`iat` against an injected clock with a bounded tolerance, `maxAge`, `iss`, `aud`, required
// claims, and the registered claims type-checked while other claims pass through untouched.
import { describe, expect, test } from "vitest";
import { base64url } from "../../lib/crypto.ts";
import { generateSigningKey } from "../../lib/jose/jwk.ts";
import { signJws } from "../../lib/jose/jws.ts";
import { type JwtClaims, signJwt, verifyJwt, type VerifyJwtOptions } from "../../lib/jose/jwt.ts";

const KEY = await generateSigningKey("ES256");
const NOW = 1_750_000_000;
const base: VerifyJwtOptions = { algorithms: ["ES256"], key: KEY.publicJwk, typ: "at+jwt", now: NOW * 1000 };

/** Signs with `typ` at+jwt, another `typ`, or (null) none. */
const sign = (claims: JwtClaims, typ: string | null = "at+jwt") =>
  signJwt(claims, { alg: "ES256", key: KEY.privateJwk, ...(typ !== null && { typ }) });

async function refused(token: string, options: Partial<VerifyJwtOptions>): Promise<{ code: string; claim?: string; message: string }> {
  const error = await verifyJwt(token, { ...base, ...options }).then(() => undefined, (e: unknown) => e);
  expect(error, "the token was accepted").toBeDefined();
  return error as { code: string; claim?: string; message: string };
}

describe("typ (RFC 8725 §3.11)", () => {
  test.each(["at+jwt", "AT+JWT", "application/at+jwt", "Application/AT+jwt"])("%s matches at+jwt", async (typ) => {
    await verifyJwt(await sign({}, typ), base);
    await verifyJwt(await sign({}, "at+jwt"), { ...base, typ });
  });

  test.each([
    ["JWT", "another type"],
    ["application/jwt", "another type, prefixed"],
    ["at+jwt ", "trailing space"],
    ["text/at+jwt", "another top-level type"],
    ["dpop+jwt", "a DPoP proof"],
  ])("%s (%s) does not match at+jwt", async (typ) => {
    expect(await refused(await sign({}, typ), {})).toMatchObject({ code: "ERR_JWT_CLAIM_VALIDATION_FAILED", claim: "typ" });
  });

  test("a token without typ is refused where a type is expected, and accepted only where the use says null", async () => {
    const untyped = await sign({}, null);
    expect(await refused(untyped, {})).toMatchObject({ code: "ERR_JWT_CLAIM_VALIDATION_FAILED", claim: "typ" });
    await verifyJwt(untyped, { ...base, typ: null });
  });

  test("leaving typ out of the options is the caller's bug", async () => {
    const { typ: _typ, ...options } = base;
    await expect(verifyJwt(await sign({}), options as VerifyJwtOptions)).rejects.toThrow(TypeError);
  });
});

describe("time: exp, nbf, iat and maxAge against the injected clock", () => {
  test("exp: valid until the second before it; expired at and after it", async () => {
    await verifyJwt(await sign({ exp: NOW + 1 }), base);
    for (const exp of [NOW, NOW - 1, NOW - 86_400]) {
      const error = await refused(await sign({ exp }), {});
      expect(error).toMatchObject({ code: "ERR_JWT_EXPIRED", claim: "exp" });
      expect(error.message).toBe('JWT "exp" claim timestamp check failed');
    }
  });

  test("nbf in the future is refused; now or past is fine", async () => {
    await verifyJwt(await sign({ nbf: NOW }), base);
    expect(await refused(await sign({ nbf: NOW + 1 }), {})).toMatchObject({ code: "ERR_JWT_CLAIM_VALIDATION_FAILED", claim: "nbf" });
  });

  test("iat in the future beyond the tolerance is refused", async () => {
    await verifyJwt(await sign({ iat: NOW }), base);
    expect(await refused(await sign({ iat: NOW + 31 }), { clockTolerance: 30 })).toMatchObject({ claim: "iat" });
    await verifyJwt(await sign({ iat: NOW + 30 }), { ...base, clockTolerance: 30 });
  });

  test("the tolerance stretches exp and nbf by as many seconds, no more", async () => {
    await verifyJwt(await sign({ exp: NOW - 59 }), { ...base, clockTolerance: 60 });
    expect((await refused(await sign({ exp: NOW - 60 }), { clockTolerance: 60 })).code).toBe("ERR_JWT_EXPIRED");
    await verifyJwt(await sign({ nbf: NOW + 60 }), { ...base, clockTolerance: 60 });
    expect((await refused(await sign({ nbf: NOW + 61 }), { clockTolerance: 60 })).claim).toBe("nbf");
  });

  test("the tolerance is bounded to 0..300 seconds", async () => {
    const token = await sign({});
    await verifyJwt(token, { ...base, clockTolerance: 300 });
    for (const clockTolerance of [301, -1, Number.NaN, 86_400]) {
      await expect(verifyJwt(token, { ...base, clockTolerance })).rejects.toThrow(TypeError);
    }
  });

  test("maxAge: iat required, and no older than maxAge (+ tolerance)", async () => {
    await verifyJwt(await sign({ iat: NOW - 60 }), { ...base, maxAge: 60 });
    expect(await refused(await sign({ iat: NOW - 61 }), { maxAge: 60 })).toMatchObject({ code: "ERR_JWT_EXPIRED", claim: "iat" });
    expect(await refused(await sign({}), { maxAge: 60 })).toMatchObject({ code: "ERR_JWT_CLAIM_VALIDATION_FAILED", claim: "iat" });
  });

  test("the clock is the injected one: the same token passes and fails by `now` alone", async () => {
    const token = await sign({ nbf: NOW, exp: NOW + 10 });
    await verifyJwt(token, { ...base, now: (NOW + 5) * 1000 });
    expect((await refused(token, { now: (NOW - 5) * 1000 })).claim).toBe("nbf");
    expect((await refused(token, { now: (NOW + 10) * 1000 })).claim).toBe("exp");
  });
});

describe("iss and aud", () => {
  test("iss: required when an issuer is expected, and exact", async () => {
    await verifyJwt(await sign({ iss: "https://as.example" }), { ...base, issuer: "https://as.example" });
    await verifyJwt(await sign({ iss: "https://b.example" }), { ...base, issuer: ["https://a.example", "https://b.example"] });
    for (const claims of [{}, { iss: "https://as.example/" }, { iss: "https://AS.example" }]) {
      expect(await refused(await sign(claims), { issuer: "https://as.example" })).toMatchObject({ claim: "iss" });
    }
  });

  test("aud: the token's string or array must contain an expected audience", async () => {
    const expected = { audience: "https://api.example" };
    await verifyJwt(await sign({ aud: "https://api.example" }), { ...base, ...expected });
    await verifyJwt(await sign({ aud: ["https://other.example", "https://api.example"] }), { ...base, ...expected });
    await verifyJwt(await sign({ aud: "https://b.example" }), { ...base, audience: ["https://a.example", "https://b.example"] });
    for (const claims of [{}, { aud: "https://other.example" }, { aud: [] }, { aud: ["https://api.example/x"] }]) {
      expect(await refused(await sign(claims), expected)).toMatchObject({ code: "ERR_JWT_CLAIM_VALIDATION_FAILED", claim: "aud" });
    }
  });
});

describe("claims", () => {
  test("required claims must be present", async () => {
    await verifyJwt(await sign({ jti: "j", sub: "s" }), { ...base, requiredClaims: ["jti", "sub"] });
    expect(await refused(await sign({ sub: "s" }), { requiredClaims: ["jti", "sub"] })).toMatchObject({ claim: "jti" });
  });

  test.each([
    ["iss", 1],
    ["sub", { id: 1 }],
    ["jti", 42],
    ["aud", [1]],
    ["aud", 7],
    ["exp", "4102444800"],
    ["nbf", null],
    ["iat", [NOW]],
  ])("a registered claim of the wrong type is refused: %s = %j", async (name, value) => {
    expect(await refused(await sign({ [name]: value }), {})).toMatchObject({ code: "ERR_JWT_CLAIM_VALIDATION_FAILED", claim: name });
  });

  test("other claims pass through as they came, unchecked", async () => {
    const claims = { scope: "a b", cnf: { jkt: "x" }, act: { sub: "svc", act: { sub: "svc2" } }, n: 1.5, list: [1, "a", null] };
    expect((await verifyJwt(await sign(claims), base)).payload).toEqual(claims);
  });

  test("a payload that is not a JSON object is not a JWT", async () => {
    for (const payload of ["[1,2]", '"claims"', "null", "not json"]) {
      const token = await signJws(payload, { alg: "ES256", typ: "at+jwt" }, KEY.privateJwk);
      expect((await refused(token, {})).code).toBe("ERR_JWT_INVALID");
    }
  });

  test("signJwt refuses claims that are not an object", () => {
    expect(() => signJwt([] as unknown as JwtClaims, { alg: "ES256", key: KEY.privateJwk })).toThrow(TypeError);
  });

  test("the header signJwt writes is alg, typ and kid only", async () => {
    const token = await signJwt({ sub: "s" }, { alg: "ES256", key: KEY.privateJwk, kid: KEY.publicJwk.kid!, typ: "at+jwt" });
    const header = JSON.parse(atob(token.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/")));
    expect(header).toEqual({ alg: "ES256", typ: "at+jwt", kid: KEY.publicJwk.kid });
    expect(base64url(new TextEncoder().encode(JSON.stringify(header)))).toBe(token.split(".")[0]);
  });
});
