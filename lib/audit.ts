/**
 * Audit events: what an operator needs to see attacks and follow a grant, reported to the `onEvent` option.
 *
 * An event names ids (client, user, grant) and the client's address, never a secret, code, token, password
 * or any part or hash of one.
 *
 * @module
 */
import type { Incoming } from "./http.ts";

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
  "request.throttled": "A request was refused by a throttle (429).",
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

/** What an event reporter needs from the server context. */
export interface AuditContext {
  clock: () => number;
  onEvent: ((event: AuditEvent) => void) | undefined;
  clientAddress: (peer: string | undefined, header: (name: string) => string | null) => string | undefined;
}

/** The client's address of a request: its peer, or behind a trusted proxy the address the proxy forwarded. */
export function clientAddressOf(incoming: Incoming, context: AuditContext): string | undefined {
  return context.clientAddress(incoming.remoteAddress, (name) => incoming.request.headers.get(name));
}

/** Reports an event to `onEvent`, with the time and the request's client address; a throwing hook is ignored. */
export function audit(
  context: AuditContext,
  incoming: Incoming | undefined,
  event: Omit<AuditEvent, "time" | "address">,
  address?: string,
): void {
  const hook = context.onEvent;
  if (hook === undefined) return;
  const at = address ?? (incoming ? clientAddressOf(incoming, context) : undefined);
  const full: AuditEvent = { type: event.type, time: context.clock() };
  if (event.client_id !== undefined) full.client_id = event.client_id;
  if (event.user_id !== undefined) full.user_id = event.user_id;
  if (event.grant_id !== undefined) full.grant_id = event.grant_id;
  if (at !== undefined) full.address = at;
  if (event.reason !== undefined) full.reason = event.reason;
  try {
    hook(full);
  } catch {
    // An audit hook must not break the request it reports on.
  }
}
