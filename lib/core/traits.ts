/**
 * What the one door for clients needs to know of each grant type and client-authentication method. Kept apart
 * from their full definitions so the admission rules depend on no handler.
 *
 * @module
 */
import type { ClientRecord } from "../storage/types.ts";

/** A grant type as client admission sees it. */
export interface GrantTraits {
  /** The client fields the grant relies on; one that reads `redirect_uris` needs at least one registered. */
  readonly clientFields: readonly (keyof ClientRecord)[];
  /** Only clients that authenticate (not with `none`) may use it (RFC 6749 §4.4: client_credentials). */
  readonly confidentialOnly: boolean;
  /**
   * A user approves each use of it (the code flow, and refresh of what a user approved): the only grants open
   * registration admits (issue: anonymous client_credentials).
   */
  readonly userApproved: boolean;
}

/** A client-authentication method as client admission sees it. */
export interface AuthMethodTraits {
  /** It proves the client (a secret or a key), so a confidential client may use it. */
  readonly confidential: boolean;
}
