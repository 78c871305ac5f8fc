/**
 * Audit events: what an operator needs to see attacks and follow a grant, reported to the `onEvent` option.
 *
 * An event names ids (client, user, grant) and the client's address, never a secret, code, token, password
 * or any part or hash of one.
 *
 * @module
 */

/** Every audit event type, with when it is reported. */
export const AUDIT_EVENTS = {
  "signin.succeeded": "A user signed in at the login form.",
  "signin.failed": "A sign-in was refused: wrong username or password.",
  "consent.granted": "A user approved a client's request.",
  "consent.denied": "A user denied a client's request.",
  "code.issued": "An authorization code was issued after consent.",
  "code.redeemed": "An authorization code was exchanged for tokens.",
  "code.replayed": "A spent authorization code was presented again by its own client; its grant was revoked.",
  "token.issued": "Tokens were issued by client_credentials.",
  "token.refreshed": "A refresh token was rotated.",
  "token.revoked": "A token was revoked at the revocation endpoint.",
  "refresh.reuse_detected": "A rotated refresh token was presented again by its own client; its grant was revoked.",
  "client.registered": "A client was registered (or replaced).",
  "client.paused": "A client was paused.",
  "client.resumed": "A paused client was resumed.",
  "client.deleted": "A client was deleted, with its grants.",
  "client.document_refused": "A client metadata document was refused or could not be fetched (reason: why, in one word).",
  "request.throttled": "A request was refused by a throttle (429).",
  "client_assertion.refused": "A private_key_jwt client assertion was refused (reason: why, in one word, e.g. replay or expired).",
  "assertion.accepted": "A jwt-bearer assertion became an access token (reason: the issuer's kind, id-jag or workload).",
  "assertion.refused": "A jwt-bearer assertion was refused (reason: why, in one word, e.g. unknown_issuer, replay, unknown_user).",
  "token.exchanged": "A token exchange issued a token (reason: delegation, with an actor, or impersonation).",
  "token_exchange.refused": "A token exchange was refused (reason: why, in one word, e.g. subject_invalid, scope, policy).",
} as const;

/** The type of an audit event. */
export type AuditEventType = keyof typeof AUDIT_EVENTS;

/** One audit event. Optional fields are absent when unknown or not applicable. */
export interface AuditEvent {
  /** What happened (see `AUDIT_EVENTS`). */
  type: AuditEventType;
  /** Milliseconds since the epoch, from the server's clock. */
  time: number;
  /** The client concerned. */
  client_id?: string;
  /** The end user concerned. */
  user_id?: string;
  /** The grant concerned. */
  grant_id?: string;
  /** The client's network address (behind a trusted proxy, the one it forwarded). */
  address?: string;
  /** A short, fixed reason, e.g. `wrong_password` or `client_auth`. */
  reason?: string;
}
