/**
 * Server-provided DPoP nonces (RFC 9449 §8), stateless: a nonce is the HMAC of a five-minute slot of time under
 * a key derived from the server's secret, so every instance of one issuer makes and accepts the same nonces
 * with no store call, and no one without the secret can make one for a slot to come (§11.2: proofs made in
 * advance). A nonce is accepted in its own slot and the next, so it lives five to ten minutes; every answer of
 * the token endpoint hands out the current one.
 *
 * @module
 */
import { base64url, timingSafeEqual } from "../crypto.ts";

/** The length of a slot, in milliseconds. */
export const NONCE_SLOT_MS = 300_000;

/** Makes and checks nonces. */
export interface DpopNonces {
  /** The nonce to hand out now. */
  current(now: number): Promise<string>;
  /** Whether `nonce` was handed out in this slot or the one before. */
  accepts(nonce: string, now: number): Promise<boolean>;
}

const encoder = new TextEncoder();

/** The nonces of a server with `secret`. */
export function dpopNonces(secret: Uint8Array): DpopNonces {
  let key: Promise<CryptoKey> | undefined;
  // The nonce key is derived, not the secret itself: a CSRF token (an HMAC under the secret) is never a nonce.
  const keyOf = () =>
    key ??= crypto.subtle.importKey("raw", secret as Uint8Array<ArrayBuffer>, { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
      .then((base) => crypto.subtle.sign("HMAC", base, encoder.encode("oauth2-fetch-server DPoP nonce key")))
      .then((raw) => crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]));
  // Two slots are ever asked for: the current one and the one before.
  const made = new Map<number, Promise<string>>();
  const nonceOf = (slot: number): Promise<string> => {
    let nonce = made.get(slot);
    if (nonce === undefined) {
      nonce = keyOf().then(async (k) => base64url(new Uint8Array(await crypto.subtle.sign("HMAC", k, encoder.encode(String(slot))))).slice(0, 22));
      made.set(slot, nonce);
      for (const old of made.keys()) if (old < slot - 1) made.delete(old);
    }
    return nonce;
  };
  return {
    current: (now) => nonceOf(Math.floor(now / NONCE_SLOT_MS)),
    async accepts(nonce, now) {
      const slot = Math.floor(now / NONCE_SLOT_MS);
      const [current, previous] = await Promise.all([nonceOf(slot), nonceOf(slot - 1)]);
      // Both compared, in constant time: which slot a nonce is from is not worth a timing signal.
      return timingSafeEqual(nonce, current) || timingSafeEqual(nonce, previous);
    },
  };
}
