/**
 * PKCE values (RFC 7636 §4.1, §4.2), made with WebCrypto.
 *
 * @module
 */

/** Base64url without padding (RFC 4648 §5). */
export function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A fresh random string of unreserved characters (43 characters: 256 bits). */
export function randomString(bytes = 32): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** A code_verifier of `length` characters (RFC 7636 §4.1: 43 to 128 unreserved characters). */
export function makeVerifier(length = 64): string {
  let v = "";
  while (v.length < length) v += randomString(48);
  return v.slice(0, length);
}

/** The S256 code_challenge of a verifier: BASE64URL(SHA256(ASCII(code_verifier))). */
export async function s256(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}
