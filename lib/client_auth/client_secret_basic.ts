/**
 * `client_secret_basic`: client_id and secret in the HTTP Basic header (RFC 6749 §2.3.1).
 *
 * @module
 */
import { defineClientAuth, type ClientAuthMethod, type PresentedCredentials } from "../core/client_auth.ts";
import { OAuthError } from "../errors.ts";
import { verifySecret } from "./secret.ts";

const malformed = (): OAuthError => new OAuthError("invalid_client", { description: "The Authorization header is malformed" });

/**
 * Reads Basic credentials, or returns null when the header is not Basic. RFC 6749 §2.3.1: both halves are
 * form-urlencoded before base64, so they are decoded the same way here.
 */
export function readBasic(header: string | null): PresentedCredentials | null {
  if (header === null || !/^basic /i.test(header)) return null;
  let decoded: string;
  try {
    // atob strips ASCII whitespace itself (forgiving-base64).
    decoded = atob(header.slice(6).trim());
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
  return { method: "client_secret_basic", client_id: id, proof: true, material: secret };
}

/** The `client_secret_basic` method. */
export const clientSecretBasic: ClientAuthMethod = defineClientAuth({
  confidential: true,
  reads: [],
  read: (exchange) => readBasic(exchange.request.headers.get("authorization")),
  verify: (presented, client) => verifySecret(presented, client),
});
