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

/**
 * A grant type. `reads` lists the server options (context fields) it uses, and `exchange` is typed to see
 * only those: a grant cannot quietly come to depend on the whole server.
 */
export interface Grant<K extends keyof ServerContext = keyof ServerContext> {
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
export function defineGrant<const K extends keyof ServerContext>(grant: Grant<K>): Grant<K> {
  return grant;
}
