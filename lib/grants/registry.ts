/**
 * The grant types of the core: one table from `grant_type` to its module. The token endpoint dispatches
 * through it, the metadata's `grant_types_supported` lists its keys (and the grants of enabled features), and
 * the one door for clients checks a client's `grant_types` against it.
 *
 * Adding a grant (say one of a new feature): a module exporting `defineGrant({ reads, uses, clientFields,
 * confidentialOnly, userApproved, exchange })`, where `reads` and `uses` name the core fields and features its
 * handler sees (it gets exactly those), and one line in this table (or in the feature's `grants`).
 *
 * @module
 */
import type { Grant } from "../core/grant.ts";
import { authorizationCode } from "./authorization_code.ts";
import { clientCredentials } from "./client_credentials.ts";
import { refreshToken } from "./refresh_token.ts";

/** The core's grant types by wire name (RFC 6749 §4, §6), in the metadata's order. */
export const GRANTS: Readonly<Record<string, Grant>> = Object.freeze({
  authorization_code: authorizationCode,
  refresh_token: refreshToken,
  client_credentials: clientCredentials,
});
