/**
 * `client_secret_post` and `none`: credentials as form fields (RFC 6749 §2.3.1; spec §5).
 *
 * @module
 */
import type { PresentedCredentials } from "./client_secret_basic.ts";

/** Reads form credentials: `client_secret_post` with a secret, `none` (a public client) without. */
export function readForm(form: Map<string, string>): PresentedCredentials | null {
  const clientId = form.get("client_id");
  if (clientId === undefined) return null;
  const secret = form.get("client_secret");
  return secret === undefined
    ? { method: "none", client_id: clientId }
    : { method: "client_secret_post", client_id: clientId, client_secret: secret };
}
