/**
 * `client_secret_basic`: client_id and secret in the HTTP Basic header (RFC 6749 §2.3.1).
 *
 * @module
 */
import { OAuthError } from "../errors.ts";

/** Credentials as a client presented them. */
export interface PresentedCredentials {
  method: "client_secret_basic" | "client_secret_post" | "none";
  client_id: string;
  client_secret?: string;
}

const malformed = (): OAuthError =>
  // Stryker disable next-line ObjectLiteral: authenticateClient replaces this error with its own, which adds the Basic challenge
  new OAuthError("invalid_client", { description: "The Authorization header is malformed" });

/**
 * Reads Basic credentials, or returns null when the header is not Basic. RFC 6749 §2.3.1: both halves are
 * form-urlencoded before base64, so they are decoded the same way here.
 */
export function readBasic(header: string | null): PresentedCredentials | null {
  // Stryker disable next-line StringLiteral: any stand-in for a missing header that does not start with "basic " does the same
  const value = header ?? "";
  if (!/^basic /i.test(value)) return null;
  let decoded: string;
  try {
    // Stryker disable next-line MethodExpression: atob strips ASCII whitespace itself (forgiving-base64); the trim says so
    decoded = atob(value.slice(6).trim());
  } catch {
    throw malformed();
  }
  const colon = decoded.indexOf(":");
  if (colon === -1) throw malformed();
  let id: string;
  let secret: string;
  try {
    id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, " "));
    secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, " "));
  } catch {
    throw malformed();
  }
  if (id === "") throw malformed();
  // Stryker disable next-line StringLiteral: callers compare a method only with "none" (token and introspection endpoints)
  return { method: "client_secret_basic", client_id: id, client_secret: secret };
}
