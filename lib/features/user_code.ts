/**
 * User codes of the device flow (RFC 8628 §6.1): eight letters from an alphabet without vowels (no words can
 * form) and without the letters people confuse, shown as `XXXX-XXXX`, and read back forgivingly: case, dashes
 * and spaces do not matter. 20^8 codes (34.5 bits) against a few guesses per minute and address.
 *
 * @module
 */

/** RFC 8628 §6.1's base-20 alphabet: consonants only, no Y. */
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
const LENGTH = 8;

/** A fresh user code in its canonical form (eight letters, no dash), uniformly drawn. */
export function newUserCode(): string {
  let code = "";
  const bytes = new Uint8Array(16);
  while (code.length < LENGTH) {
    crypto.getRandomValues(bytes);
    // 240 = 12 × 20: bytes above it are dropped, so each letter is equally likely.
    for (const byte of bytes) if (byte < 240 && code.length < LENGTH) code += USER_CODE_ALPHABET[byte % 20];
  }
  return code;
}

/** The code as people read it: `BCDF-GHJK`. */
export function displayUserCode(canonical: string): string {
  return `${canonical.slice(0, 4)}-${canonical.slice(4)}`;
}

/**
 * What a person typed, in canonical form, or null when it cannot be a user code. Case is ignored, and so are
 * dashes and white space; anything else (digits, vowels, other scripts) makes it no code.
 */
export function canonicalUserCode(typed: string): string | null {
  if (typed.length > 64) return null;
  const letters = typed.replace(/[\s\-\u2010-\u2015]/g, "").toUpperCase();
  if (letters.length !== LENGTH) return null;
  for (const letter of letters) if (!USER_CODE_ALPHABET.includes(letter)) return null;
  return letters;
}
