/**
 * CSRF tokens of the consent form: signed, bound to the user and to every parameter of the authorization
 * request, short-lived, and unique per page (a random nonce), so the endpoint can accept each one once. A forged
 * POST from another site cannot produce one, and a token for one request cannot approve another.
 *
 * @module
 */
import { hmac, randomToken, timingSafeEqual } from "../crypto.ts";

/** How long a consent page may sit open before its form is refused, in ms. */
export const CSRF_TTL: number = 10 * 60 * 1000;

/** What a token is bound to: strings, lists of them, and `null` for a parameter that is absent (not empty). */
export type CsrfPart = string | readonly string[] | null;

/** Makes a token for `parts`, issued at `now`: `time.nonce.mac`. */
export async function csrfToken(key: CryptoKey, parts: readonly CsrfPart[], now: number): Promise<string> {
  const nonce = randomToken().slice(0, 22);
  return `${now.toString(36)}.${nonce}.${await hmac(key, JSON.stringify([now, nonce, ...parts]))}`;
}

/** Whether `token` was made by {@link csrfToken} for the same `parts` within the last {@link CSRF_TTL}. */
export async function verifyCsrfToken(
  key: CryptoKey,
  token: string | undefined,
  parts: readonly CsrfPart[],
  now: number,
): Promise<boolean> {
  if (token === undefined) return false;
  const fields = token.split(".");
  if (fields.length !== 3) return false;
  const [time, nonce, mac] = fields as [string, string, string];
  const issued = parseInt(time, 36);
  // A token from the future is refused too: the clock went back, or the time was forged.
  if (!Number.isSafeInteger(issued) || issued > now || now - issued > CSRF_TTL) return false;
  return timingSafeEqual(mac, await hmac(key, JSON.stringify([issued, nonce, ...parts])));
}
