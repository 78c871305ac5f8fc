/**
 * `client_secret_post`: client_id and secret as form fields (RFC 6749 §2.3.1; spec §5).
 *
 * @module
 */
import { defineClientAuth, type ClientAuthMethod, type PresentedCredentials } from "../core/client_auth.ts";
import { verifySecret } from "./secret.ts";

/**
 * Reads `client_secret_post` credentials: a client_secret form field, or null without one. A secret without
 * client_id still counts as this method (client_id ""): sent beside Basic, it is a second method.
 */
export function readPost(form: Map<string, string>): PresentedCredentials | null {
  const secret = form.get("client_secret");
  return secret === undefined ? null : { method: "client_secret_post", client_id: form.get("client_id") ?? "", proof: true, material: secret };
}

/** The `client_secret_post` method. */
export const clientSecretPost: ClientAuthMethod = defineClientAuth({
  confidential: true,
  reads: [],
  read: (_, form) => readPost(form),
  verify: (presented, client) => verifySecret(presented, client),
});
