/**
 * PKCE (RFC 7636), S256 only: RFC 9700 §2.1.1 forbids `plain` where S256 is possible, and it always is.
 *
 * @module
 */
import { timingSafeEqual } from "./crypto.ts";
import { sha256 } from "./sha256.ts";

/** A code_verifier: 43-128 unreserved characters (RFC 7636 §4.1). */
export const CODE_VERIFIER: RegExp = /^[A-Za-z0-9\-._~]{43,128}$/;

/** An S256 code_challenge: base64url of a SHA-256 digest, so exactly 43 characters (RFC 7636 §4.2). */
export const CODE_CHALLENGE: RegExp = /^[A-Za-z0-9\-_]{43}$/;

/** Whether BASE64URL(SHA256(verifier)) equals the challenge, compared in constant time (RFC 7636 §4.6). */
export function verifyPkce(verifier: string, challenge: string): boolean {
  return timingSafeEqual(sha256(verifier), challenge);
}
