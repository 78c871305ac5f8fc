/**
 * `none`: a public client sends its client_id only (RFC 6749 §2.1, spec §5); PKCE proves it at the token
 * endpoint, not this method.
 *
 * @module
 */
import { defineClientAuth, type ClientAuthMethod } from "../core/client_auth.ts";

/** The `none` method: a client_id form field without a client_secret. */
export const none: ClientAuthMethod = defineClientAuth({
  confidential: false,
  reads: [],
  read(_, form) {
    const clientId = form.get("client_id");
    return clientId === undefined || form.has("client_secret") ? null : { method: "none", client_id: clientId, proof: false };
  },
  // Only a public client may use it; a confidential one must prove its secret.
  verify: (_, client) => client !== null && client.type === "public",
});
