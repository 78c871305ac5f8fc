/**
 * The spec's scope rules: exactly one scope per request (spec §8), and it must be one the client is allowed.
 *
 * @module
 */
import { OAuthError } from "./errors.ts";
import { SCOPE_TOKEN } from "./options.ts";
import type { ClientRecord } from "./storage/types.ts";

/**
 * Checks a requested scope and returns it. Throws `invalid_scope` (RFC 6749 §4.1.2.1, §5.2) when it is
 * missing, names more than one scope, is malformed, or is not among the client's scopes.
 */
export function requireSingleScope(value: string | undefined, client: ClientRecord): string {
  if (value === undefined) throw new OAuthError("invalid_scope", { description: "The scope parameter is required" });
  if (/\s/.test(value)) throw new OAuthError("invalid_scope", { description: "Exactly one scope per request is allowed" });
  if (!SCOPE_TOKEN.test(value)) throw new OAuthError("invalid_scope", { description: "The scope is malformed" });
  if (!client.scopes.includes(value)) {
    throw new OAuthError("invalid_scope", { description: "The scope is not allowed for this client" });
  }
  return value;
}
