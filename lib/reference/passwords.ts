/**
 * Password hashes of the reference server's users: PBKDF2-SHA-256 (WebCrypto), written as
 * `pbkdf2-sha256$ITERATIONS$SALT$HASH` (base64url), the format `oauth2-fetch-server hash-password` prints and
 * the config file's `password_hash` takes.
 *
 * @module
 */
import { base64url, timingSafeEqual } from "../crypto.ts";

/** Iterations of a new hash: OWASP's 2023 figure for PBKDF2-HMAC-SHA256 is 600 000. */
export const HASH_ITERATIONS = 600_000;

const FORMAT = /^pbkdf2-sha256\$(\d{1,8})\$([A-Za-z0-9_-]{16,})\$([A-Za-z0-9_-]{43})$/;

/** Whether `value` is a password hash this module can verify. */
export function isPasswordHash(value: string): boolean {
  const match = FORMAT.exec(value);
  return match !== null && Number(match[1]) >= 1000;
}

async function derive(password: string, salt: Uint8Array<ArrayBuffer>, iterations: number): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(password), "PBKDF2", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, key, 256);
  return base64url(new Uint8Array(bits));
}

function fromBase64url(value: string): Uint8Array<ArrayBuffer> {
  const binary = atob(value.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/** A new hash of `password` with a random salt. */
export async function hashPassword(password: string, iterations: number = HASH_ITERATIONS): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  return `pbkdf2-sha256$${iterations}$${base64url(salt)}$${await derive(password, salt, iterations)}`;
}

/** Whether `password` matches `hash` (constant-time comparison of the derived keys). */
export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  const match = FORMAT.exec(hash);
  if (!match) return false;
  return timingSafeEqual(await derive(password, fromBase64url(match[2]!), Number(match[1])), match[3]!);
}
