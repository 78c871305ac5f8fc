/**
 * The core context: what every request of one server may need, and nothing a feature owns. It is built once,
 * when the server is created, and frozen. Grants, endpoints and features never see it whole: each declares the
 * fields it reads and is given a view holding exactly those (see `define.ts`).
 *
 * @module
 */
import type { AuditEvent } from "../audit.ts";
import type { ClientAddressResolver } from "../proxy.ts";
import type { FormLimits } from "../http.ts";
import type { Storage } from "../storage/types.ts";
import type { Throttle } from "../throttle.ts";
import type { AuthenticateUser, ErrorHook } from "./hooks.ts";
import type { ClientRecord } from "../storage/types.ts";
import type { TokenResponse } from "../tokens.ts";
import type { ClientAdmission } from "./admission.ts";
import type { EventInput, Exchange } from "./exchange.ts";
import type { AuthMethodTraits, GrantTraits } from "./traits.ts";

/** The core context of one server. */
export interface Core {
  /** The issuer identifier (RFC 8414 §2), without a trailing slash. */
  readonly issuer: string;
  /** The issuer's path without a trailing slash; "" at the root. */
  readonly basePath: string;
  readonly storage: Storage;
  /** Milliseconds since the epoch. */
  readonly clock: () => number;
  /** Every scope the server knows, with its description. */
  readonly scopes: ReadonlyMap<string, string>;
  /** Scope granted when a request names none, and given to clients that register themselves. */
  readonly defaultScope: string | undefined;
  /** Lifetimes in milliseconds. */
  readonly accessTokenTtl: number;
  readonly codeTtl: number;
  readonly refreshTokenTtl: number;
  /** Request limits. */
  readonly maxBodyBytes: number;
  readonly bodyTimeout: number;
  readonly formLimits: FormLimits;
  /** Failed client authentications, per address and client. */
  readonly throttle: Throttle | undefined;
  /** The end-user authentication hook; without it no page that needs a user is served. */
  readonly authenticateUser: AuthenticateUser | undefined;
  /** The server secret (CSRF tokens, keys derived from it). */
  readonly secret: Uint8Array;
  /** The HMAC key for CSRF tokens, imported on first use. */
  csrfKey(): Promise<CryptoKey>;
  readonly onError: ErrorHook;
  /** Reports an event that belongs to no request (the client registry's). */
  emit(event: EventInput): void;
  /** The audit hook, for the request object. */
  readonly onEvent: ((event: AuditEvent) => void) | undefined;
  /** The client's address from the socket's peer and the request's headers (trusted proxies). */
  readonly clientAddress: ClientAddressResolver;
  /** Every enabled grant by its wire name, bound to this server. */
  readonly grants: ReadonlyMap<string, BoundGrant>;
  /** Every enabled client-authentication method by its wire name, bound to this server. */
  readonly clientAuth: ReadonlyMap<string, BoundClientAuth>;
  /** The one door through which every client comes to exist or change. */
  readonly admission: ClientAdmission;
  /** The RFC 8414 metadata document, built once from the core and the enabled features. */
  readonly metadata: Readonly<Record<string, unknown>>;
}

/** A field of the core context that a grant, endpoint or feature may declare it reads. */
export type CoreField = keyof Core;

/** A grant bound to one server: its traits, and its handler with the view of the core it declared. */
export interface BoundGrant {
  readonly grant: GrantTraits;
  /** Validates the grant's fields, stores the tokens, and returns the response; throws `OAuthError`. */
  exchange(exchange: Exchange, form: Map<string, string>, client: ClientRecord): Promise<TokenResponse>;
}

/** Credentials as a client presented them. */
export interface PresentedCredentials {
  /** The method's wire name. */
  method: string;
  /** The client they claim to be; "" when the request names none. */
  client_id: string;
  /** Whether they carry proof (a secret, an assertion); two methods with proof in one request are refused. */
  proof: boolean;
  /** The method's own material (a secret, an assertion), read only by its `verify`. */
  material?: string;
}

/** A client-authentication method bound to one server. */
export interface BoundClientAuth extends AuthMethodTraits {
  /** The credentials the request carries in this method's way, or null; throws `invalid_client` when malformed. */
  read(exchange: Exchange, form: Map<string, string>): PresentedCredentials | null;
  /** Whether the credentials prove `client` (null: no active client with that id; the same work is spent). */
  verify(presented: PresentedCredentials, client: ClientRecord | null, exchange: Exchange): boolean | Promise<boolean>;
}
