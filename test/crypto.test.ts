/**
 * The hashing primitives against WebCrypto: `sha256` is written out in `lib/crypto.ts` for speed, so it is
 * checked here, as a property, against `crypto.subtle.digest` on random inputs of every size class (empty, one
 * block, the padding boundaries at 55/56/64 bytes, many blocks) and every UTF-8 width.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { base64url, randomToken } from "../lib/crypto.ts";
import { sha256 } from "../lib/sha256.ts";

const reference = async (value: string): Promise<string> =>
  base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value))));

/** Base64url the long way: btoa and the RFC 4648 §5 substitutions. */
const referenceBase64url = (bytes: Uint8Array): string =>
  btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join("")).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

describe("sha256", () => {
  test("the FIPS 180-4 examples and the RFC 7636 Appendix B challenge", () => {
    const hex = (b64: string) =>
      [...atob(b64.replace(/-/g, "+").replace(/_/g, "/") + "=")].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
    expect(hex(sha256(""))).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(hex(sha256("abc"))).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")))
      .toBe("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    expect(sha256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")).toBe("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  });

  test("every length from 0 to 300 bytes, across the padding boundaries", async () => {
    for (let n = 0; n <= 300; n++) {
      const value = "x".repeat(n);
      expect(sha256(value), `length ${n}`).toBe(await reference(value));
    }
  });

  test("equals crypto.subtle.digest on random strings (ASCII, Latin-1, BMP, astral, lone surrogates)", async () => {
    const strings = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.string({ unit: "binary", maxLength: 200 }),
      fc.string({ unit: "grapheme", maxLength: 100 }),
      fc.string({ unit: fc.constantFrom("a", "é", "€", "😀", "\ud800", "\udc00", "\u0000"), maxLength: 150 }),
      fc.string({ minLength: 1000, maxLength: 5000 }),
    );
    await fc.assert(fc.asyncProperty(strings, async (value) => sha256(value) === await reference(value)), { numRuns: 2000 });
  });

  test("calls in a row do not leak state into each other (the scratch buffers are reused)", async () => {
    const long = "y".repeat(1000);
    sha256(long);
    expect(sha256("abc")).toBe(await reference("abc"));
    sha256("é".repeat(300));
    expect(sha256("")).toBe(await reference(""));
  });
});

describe("base64url", () => {
  test("equals btoa with the URL-safe alphabet and no padding, for every length", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => base64url(bytes) === referenceBase64url(bytes)), {
      numRuns: 2000,
    });
  });

  test("long inputs too (the output is built in slices)", () => {
    for (const n of [6143, 6144, 6145, 20_000]) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 7919) & 255);
      expect(base64url(bytes)).toBe(referenceBase64url(bytes));
    }
  });
});

describe("randomToken", () => {
  test("43 base64url characters, never repeated, across many refills of the random pool", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const token = randomToken();
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      seen.add(token);
    }
    expect(seen.size).toBe(20_000);
  });

  test("its bits look uniform: every character position takes every value, each bit is set about half the time", () => {
    const n = 20_000;
    const ones = new Array<number>(256).fill(0);
    const values = Array.from({ length: 43 }, () => new Set<string>());
    for (let i = 0; i < n; i++) {
      const token = randomToken();
      for (let p = 0; p < 43; p++) values[p]!.add(token[p]!);
      const bytes = Uint8Array.from(atob(token.replace(/-/g, "+").replace(/_/g, "/") + "="), (c) => c.charCodeAt(0));
      for (let bit = 0; bit < 256; bit++) ones[bit]! += (bytes[bit >> 3]! >> (7 - (bit & 7))) & 1;
    }
    // The last character carries 4 bits (16 values); the others 6 bits (64 values).
    for (let p = 0; p < 43; p++) expect(values[p]!.size).toBe(p === 42 ? 16 : 64);
    // 20 000 fair coin flips: mean 10 000, standard deviation about 71; 6 sigma is 424.
    for (const count of ones) expect(Math.abs(count - n / 2)).toBeLessThan(425);
  });
});
