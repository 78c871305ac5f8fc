/**
 * The sealed successor of the refresh grace window. At a rotation the new refresh token is encrypted under a key
 * derived from the token being rotated, and the store keeps it with the rotated record. A retry inside the
 * window presents the rotated token again, opens the seal and gets the same successor: one chain, never a fork.
 *
 * The store holds only the SHA-256 of the rotated token, from which the key cannot be derived (HKDF extracts
 * with HMAC, not a bare hash), so a copy of the store alone opens nothing; and it keeps the seal only until the
 * successor rotates, so an old stolen token opens nothing either.
 *
 * @module
 */
import { base64url } from "../crypto.ts";
import { decodeSegment } from "../jose/encoding.ts";
import { sha256 } from "../sha256.ts";

const encoder = new TextEncoder();
const INFO = encoder.encode("oauth2-fetch-server refresh successor");
const IV_BYTES = 12;

/** AES-256-GCM key from the presented refresh token (HKDF-SHA-256, RFC 5869). */
async function keyOf(token: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", encoder.encode(token), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: INFO },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/** Seals `successor` for whoever holds `token`: base64url of a random IV and the AES-GCM ciphertext. */
export async function sealSuccessor(token: string, successor: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await keyOf(token), encoder.encode(successor)));
  const out = new Uint8Array(IV_BYTES + sealed.length);
  out.set(iv);
  out.set(sealed, IV_BYTES);
  return base64url(out);
}

/**
 * Opens a sealed successor with the presented `token`, and checks it is the token whose hash is `expected`
 * (the record's `replaced_by`). Null when anything is off: a seal that does not open is never a token.
 */
export async function openSuccessor(token: string, sealed: string, expected: string | undefined): Promise<string | null> {
  try {
    const bytes = decodeSegment(sealed, "sealed successor");
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: bytes.slice(0, IV_BYTES) },
      await keyOf(token),
      bytes.slice(IV_BYTES),
    );
    const successor = new TextDecoder("utf-8", { fatal: true }).decode(plain);
    return sha256(successor) === expected ? successor : null;
  } catch {
    return null;
  }
}
