/**
 * Random values, hashes and comparisons. Random values and HMAC come from WebCrypto; SHA-256 is computed
 * here (see {@link sha256} for why).
 *
 * @module
 */

const encoder = new TextEncoder();
/** The base64url alphabet (RFC 4648 §5), as character codes. */
const CODES = Uint8Array.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", (c) => c.charCodeAt(0));

/** Base64url without padding (RFC 4648 §5), as RFC 7636 and the token formats use it. */
export function base64url(bytes: Uint8Array): string {
  return encode(bytes, 0, bytes.length);
}

/** Base64url of `bytes[start..end)`. */
function encode(bytes: Uint8Array, start: number, end: number): string {
  const length = Math.ceil(((end - start) * 4) / 3);
  const codes = length === 43 ? CODES_43 : new Uint8Array(length);
  let j = 0;
  let i = start;
  for (; i + 2 < end; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    codes[j++] = CODES[v >>> 18]!;
    codes[j++] = CODES[(v >>> 12) & 63]!;
    codes[j++] = CODES[(v >>> 6) & 63]!;
    codes[j++] = CODES[v & 63]!;
  }
  if (i + 1 === end) {
    const v = bytes[i]!;
    codes[j++] = CODES[v >>> 2]!;
    codes[j++] = CODES[(v & 3) << 4]!;
  } else if (i + 2 === end) {
    const v = (bytes[i]! << 8) | bytes[i + 1]!;
    codes[j++] = CODES[v >>> 10]!;
    codes[j++] = CODES[(v >>> 4) & 63]!;
    codes[j++] = CODES[(v & 15) << 2]!;
  }
  // The characters as ASCII bytes, decoded in one call: a flat string, made faster on Node, Deno and Bun
  // alike than by `+=` (a rope that every later use has to flatten) or String.fromCharCode.
  return ascii.decode(codes);
}

/** Scratch for the one size on the hot path: every token and every hash is 43 characters. */
const CODES_43 = new Uint8Array(43);
const ascii = new TextDecoder();

// Random bytes are drawn from WebCrypto 1 KiB at a time: one getRandomValues call costs as much on Node as
// hashing a token, whatever its size. Each value is used once and wiped as it is handed out, so the pool only
// ever holds values not yet issued; it is filled on first use, never at start-up (so no start-up snapshot of
// a process can carry it into another).
const POOL = new Uint8Array(1024);
let poolOffset = POOL.length;

/**
 * A fresh secret of 256 random bits, base64url-encoded (43 characters). Codes, tokens and client secrets are
 * all made this way: RFC 6749 §10.10 asks for a guessing probability of at most 2^-128; this gives 2^-256.
 */
export function randomToken(): string {
  if (poolOffset + 32 > POOL.length) {
    crypto.getRandomValues(POOL);
    poolOffset = 0;
  }
  const start = poolOffset;
  poolOffset += 32;
  const token = encode(POOL, start, poolOffset);
  POOL.fill(0, start, poolOffset);
  return token;
}

/**
 * Compares two strings in time that depends only on their lengths, never on where they first differ.
 * Callers compare fixed-length hashes, so the lengths leak nothing.
 */
export function timingSafeEqual(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

/** An HMAC-SHA-256 key for signing cookies and CSRF tokens. */
export async function hmacKey(secret: string | Uint8Array): Promise<CryptoKey> {
  const raw = typeof secret === "string" ? encoder.encode(secret) : secret;
  return crypto.subtle.importKey("raw", raw as Uint8Array<ArrayBuffer>, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
}

/** HMAC-SHA-256 of a string, base64url-encoded. */
export async function hmac(key: CryptoKey, value: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(value))));
}
