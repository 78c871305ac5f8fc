/**
 * `client_secret_post` and `none`: credentials as form fields (RFC 6749 §2.3.1; spec §5).
 *
 * @module
 */
import type { PresentedCredentials } from "./client_secret_basic.ts";

/**
 * Reads `client_secret_post` credentials: a client_secret form field, or null without one. A secret without
 * client_id still counts as this method (client_id ""): sent beside Basic, it is a second method.
 */
export function readPost(form: Map<string, string>): PresentedCredentials | null {
  const secret = form.get("client_secret");
  // Stryker disable next-line StringLiteral: callers compare a method only with "none" (token and introspection endpoints)
  return secret === undefined ? null : { method: "client_secret_post", client_id: form.get("client_id") ?? "", client_secret: secret };
}

/** Reads `none` (a public client, spec §5): a client_id form field without a client_secret, or null. */
export function readNone(form: Map<string, string>): PresentedCredentials | null {
  const clientId = form.get("client_id");
  // Stryker disable next-line ConditionalExpression,LogicalOperator: with a secret, readPost already read this client_id, and authenticateClient takes a second reading of the same id as the first
  return clientId === undefined || form.has("client_secret") ? null : { method: "none", client_id: clientId };
}
