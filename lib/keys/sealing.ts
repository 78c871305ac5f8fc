/**
 * Sealing private keys for the store: AES-256-GCM under a key derived by HKDF-SHA-256 from the server's secret,
 * which the store never holds. A dump of the store therefore yields public keys and ciphertext only.
 *
 * @module
 */
import { base64url } from "../crypto.ts";
import { decodeSegment } from "../jose/encoding.ts";

/** A key-encryption key and the public fingerprint that names it. */
export interface Sealer {
  /**
   * Names the key-encryption key without revealing it (a second HKDF output): a key set sealed under another
   * secret is recognised before any decryption is tried.
   */
  readonly id: string;
  /** Encrypts `plaintext`, bound to `label` (the key's `kid`), as base64url(iv ‖ ciphertext ‖ tag). */
  seal(plaintext: string, label: string): Promise<string>;
  /** Decrypts what {@link Sealer.seal} made under the same label; rejects when the tag does not verify. */
  open(sealed: string, label: string): Promise<string>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
// RFC 5869 §3.1: a fixed, application-specific salt; the `info` strings separate the two outputs (§3.2).
const SALT = encoder.encode("oauth2-fetch-server signing keys");
const IV_BYTES = 12; // NIST SP 800-38D §8.2: a random 96-bit IV, never reused under one key in practice

/** Derives the sealer of a server secret (at least 32 bytes, as the option table checks). */
export async function sealerOf(secret: Uint8Array): Promise<Sealer> {
  const base = await crypto.subtle.importKey("raw", secret as Uint8Array<ArrayBuffer>, "HKDF", false, ["deriveKey", "deriveBits"]);
  const hkdf = (info: string) => ({ name: "HKDF", hash: "SHA-256", salt: SALT, info: encoder.encode(info) });
  const key = await crypto.subtle.deriveKey(hkdf("aes-256-gcm v1"), base, { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
  const id = base64url(new Uint8Array(await crypto.subtle.deriveBits(hkdf("sealer id v1"), base, 128)));
  return {
    id,
    async seal(plaintext, label) {
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
      // The kid as additional data: a sealed key moved to another entry of the set does not open.
      const params = { name: "AES-GCM", iv, additionalData: encoder.encode(label) };
      const sealed = new Uint8Array(await crypto.subtle.encrypt(params, key, encoder.encode(plaintext)));
      const out = new Uint8Array(IV_BYTES + sealed.length);
      out.set(iv);
      out.set(sealed, IV_BYTES);
      return base64url(out);
    },
    async open(sealed, label) {
      const bytes = decodeSegment(sealed, "sealed key") as Uint8Array<ArrayBuffer>;
      if (bytes.length <= IV_BYTES + 16) throw new Error("Cannot open a sealed signing key: it is too short");
      const params = { name: "AES-GCM", iv: bytes.subarray(0, IV_BYTES), additionalData: encoder.encode(label) };
      const plain = await crypto.subtle.decrypt(params, key, bytes.subarray(IV_BYTES)).catch(() => {
        throw new Error("Cannot open a sealed signing key: it was sealed under another secret, or changed");
      });
      return decoder.decode(plain);
    },
  };
}
