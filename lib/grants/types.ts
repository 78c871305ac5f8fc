/**
 * The shape of a grant type: its handler at the token endpoint and what it needs. The registry
 * (`registry.ts`) maps each `grant_type` to one of these.
 *
 * @module
 */
import type { Incoming } from "../http.ts";
import type { ServerContext } from "../options.ts";
import type { ClientRecord } from "../storage/types.ts";
import type { TokenResponse } from "../tokens.ts";

/** The server context fields a grant may read: all but the bound grants themselves. */
export type GrantReadable = Exclude<keyof ServerContext, "grants">;

/**
 * A grant type. `reads` lists the server options (context fields) it uses, and `exchange` sees only those: its
 * type is narrowed to them, and at runtime it gets a frozen view holding exactly them (`bindGrants`), so a
 * grant cannot quietly come to depend on the whole server.
 */
export interface Grant<K extends GrantReadable = GrantReadable> {
  /** The server options `exchange` reads. */
  readonly reads: readonly K[];
  /**
   * The client fields it relies on. A grant that reads `redirect_uris` needs at least one registered (checked
   * when a client is registered or configured).
   */
  readonly clientFields: readonly (keyof ClientRecord)[];
  /** Only clients that authenticate with a secret may use it (RFC 6749 §4.4: client_credentials). */
  readonly confidentialOnly: boolean;
  /** Validates the grant's fields, stores the tokens, and returns the response; throws `OAuthError`. */
  exchange(
    form: Map<string, string>,
    client: ClientRecord,
    context: Pick<ServerContext, K>,
    incoming?: Incoming,
  ): Promise<TokenResponse>;
}

/** Declares a grant; `reads` fixes what its `exchange` may see of the server context. */
export function defineGrant<const K extends GrantReadable>(grant: Grant<K>): Grant<K> {
  return grant;
}

/**
 * A grant bound to one server: the grant, and the frozen view of the server context its `exchange` is given,
 * holding exactly the fields in its `reads` (built once, when the server is created).
 */
export interface BoundGrant {
  /** The grant. */
  readonly grant: Grant;
  /** Its view of the server context: only the fields in `grant.reads`. */
  readonly view: Readonly<Partial<Pick<ServerContext, GrantReadable>>>;
  /** `grant.exchange` with that view: the token endpoint has no context of its own to pass. */
  exchange(form: Map<string, string>, client: ClientRecord, incoming?: Incoming): Promise<TokenResponse>;
}
