/**
 * The shape every grant module has; the token endpoint dispatches on `grant_type` through a table of these.
 *
 * @module
 */
import type { Incoming } from "../http.ts";
import type { ServerContext } from "../options.ts";
import type { ClientRecord } from "../storage/types.ts";
import type { TokenResponse } from "../tokens.ts";

/** A grant type's handler at the token endpoint. */
export interface Grant {
  /** Only clients that authenticate with a secret may use it (RFC 6749 §4.4: client_credentials). */
  confidentialOnly: boolean;
  /** Validates the grant's fields, stores the tokens, and returns the response; throws `OAuthError`. */
  exchange(form: Map<string, string>, client: ClientRecord, context: ServerContext, incoming?: Incoming): Promise<TokenResponse>;
}
