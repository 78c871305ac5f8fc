/**
 * CSRF tokens of the consent form: stateless, signed, bound to the user and to every parameter of the
 * authorization request, and short-lived. A forged POST from another site cannot produce one, and a token for
 * one request cannot approve another.
 *
 * @module
 */
import { hmac, timingSafeEqual } from "../crypto.ts";

/** How long a consent page may sit open before its form is refused, in ms. */
export const CSRF_TTL: number = 10 * 60 * 1000;

/** Makes a token for `parts`, issued at `now`. */
export async function csrfToken(key: CryptoKey, parts: readonly string[], now: number): Promise<string> {
  return `${now.toString(36)}.${await hmac(key, JSON.stringify([now, ...parts]))}`;
}

/** Whether `token` was made by {@link csrfToken} for the same `parts` within the last {@link CSRF_TTL}. */
export async function verifyCsrfToken(
  key: CryptoKey,
  token: string | undefined,
  parts: readonly string[],
  now: number,
): Promise<boolean> {
  if (token === undefined) return false;
  const dot = token.indexOf(".");
  if (dot === -1) return false;
  const issued = parseInt(token.slice(0, dot), 36);
  if (!Number.isSafeInteger(issued) || issued > now || now - issued > CSRF_TTL) return false;
  return timingSafeEqual(token.slice(dot + 1), await hmac(key, JSON.stringify([issued, ...parts])));
}
