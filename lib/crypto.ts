/**
 * Random values, hashes and comparisons, on WebCrypto alone.
 *
 * @module
 */

const encoder = new TextEncoder();

/** Base64url without padding (RFC 4648 §5), as RFC 7636 and the token formats use it. */
export function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * A fresh secret of 256 random bits, base64url-encoded (43 characters). Codes, tokens and client secrets are
 * all made this way: RFC 6749 §10.10 asks for a guessing probability of at most 2^-128; this gives 2^-256.
 */
export function randomToken(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** SHA-256 of a UTF-8 string, base64url-encoded: how codes, tokens and secrets are stored. */
export async function sha256(value: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(value))));
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
