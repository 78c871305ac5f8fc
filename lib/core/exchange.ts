/**
 * The one request object: made once per request by the router, handed to the endpoint, the client
 * authentication and the grant. It carries the request, its target, the client's address (worked out once,
 * trusted proxies applied), the parsed form, and `emit` for the audit trail.
 *
 * @module
 */
import type { AuditEvent } from "../audit.ts";
import { OAuthError } from "../errors.ts";
import { type FormLimits, isFormContentType, parseForm, readText } from "../http.ts";
import type { ClientAddressResolver } from "../proxy.ts";

/** One request, as every part of the server sees it. */
export interface Exchange {
  /** The request. */
  readonly request: Request;
  /** Its target: path and query, as sent. */
  readonly target: string;
  /** The address of the socket's peer, as the runtime reported it. */
  readonly peer: string | undefined;
  /** The client's address: the peer, or behind a trusted proxy the address it forwarded; computed once. */
  readonly address: string | undefined;
  /**
   * The POSTed form (`application/x-www-form-urlencoded`), read and parsed once. Throws `invalid_request` for
   * another media type (RFC 6749 §3.2) or a repeated parameter, 413 past the size limit, 408 past the deadline.
   */
  form(): Promise<Map<string, string>>;
  /** Reports an audit event with the server's time and this request's client address. */
  emit(event: EventInput): void;
}

/** An audit event as a reporter gives it: the server adds the time and the address; undefined fields are left out. */
export type EventInput = { readonly [K in keyof Omit<AuditEvent, "time" | "address">]: AuditEvent[K] | (K extends "type" ? never : undefined) };

/** What the request object needs of its server. */
interface ExchangeCore {
  readonly clientAddress: ClientAddressResolver;
  readonly clock: () => number;
  readonly onEvent: ((event: AuditEvent) => void) | undefined;
  readonly maxBodyBytes: number;
  readonly bodyTimeout: number;
  readonly formLimits: FormLimits;
}

class RequestExchange implements Exchange {
  readonly request: Request;
  readonly target: string;
  readonly peer: string | undefined;
  readonly core: ExchangeCore;
  #address: string | undefined | null = null;
  #form: Promise<Map<string, string>> | undefined;

  constructor(request: Request, target: string, peer: string | undefined, core: ExchangeCore) {
    this.request = request;
    this.target = target;
    this.peer = peer;
    this.core = core;
  }

  get address(): string | undefined {
    if (this.#address === null) {
      const headers = this.request.headers;
      this.#address = this.core.clientAddress(this.peer, (name) => headers.get(name));
    }
    return this.#address;
  }

  form(): Promise<Map<string, string>> {
    return (this.#form ??= this.#readForm());
  }

  async #readForm(): Promise<Map<string, string>> {
    const { request, core } = this;
    if (!isFormContentType(request.headers.get("content-type"))) {
      throw new OAuthError("invalid_request", { description: "Content-Type must be application/x-www-form-urlencoded" });
    }
    return parseForm(await readText(request, core.maxBodyBytes, core.bodyTimeout), core.formLimits);
  }

  emit(event: EventInput): void {
    emitEvent(this.core, event, this.address);
  }
}

/** Makes the request object of one request. */
export function createExchange(request: Request, target: string, peer: string | undefined, core: ExchangeCore): Exchange {
  return new RequestExchange(request, target, peer, core);
}

/** Reports an event to `onEvent` with the time and an address; a throwing hook is ignored. */
export function emitEvent(
  core: Pick<ExchangeCore, "clock" | "onEvent">,
  event: EventInput,
  address: string | undefined,
): void {
  const hook = core.onEvent;
  if (hook === undefined) return;
  const full: AuditEvent = { type: event.type, time: core.clock() };
  if (event.client_id !== undefined) full.client_id = event.client_id;
  if (event.user_id !== undefined) full.user_id = event.user_id;
  if (event.grant_id !== undefined) full.grant_id = event.grant_id;
  if (address !== undefined) full.address = address;
  if (event.reason !== undefined) full.reason = event.reason;
  try {
    hook(full);
  } catch {
    // An audit hook must not break the request it reports on.
  }
}
