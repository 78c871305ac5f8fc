/**
 * The grant types: one table from `grant_type` to its module. The token endpoint dispatches through it, the
 * metadata's `grant_types_supported` lists its keys, and client registration (configured, CLI or RFC 7591)
 * checks a client's `grant_types` against it. Adding a grant is one new file in this folder plus one line here
 * (and its name in the `GrantType` union of the stored client record, which the `satisfies` below enforces).
 *
 * @module
 */
import type { Incoming } from "../http.ts";
import type { ServerContext } from "../options.ts";
import type { ClientRecord, GrantType } from "../storage/types.ts";
import { authorizationCode } from "./authorization_code.ts";
import { clientCredentials } from "./client_credentials.ts";
import { refreshToken } from "./refresh_token.ts";
import type { BoundGrant, Grant, GrantReadable } from "./types.ts";

/** Every grant type by its wire name (RFC 6749 §4, §6). */
export const GRANTS: Readonly<Record<GrantType, Grant>> = Object.freeze({
  authorization_code: authorizationCode,
  refresh_token: refreshToken,
  client_credentials: clientCredentials,
} satisfies Record<GrantType, Grant>);

/** The grant types' wire names, in the table's order (`grant_types_supported`). */
export const GRANT_TYPES: readonly GrantType[] = Object.freeze(Object.keys(GRANTS) as GrantType[]);

/** The grant of a `grant_type` value; an own-property look-up, so "constructor" finds nothing. */
export function grantOf(name: string): Grant | undefined {
  return Object.hasOwn(GRANTS, name) ? GRANTS[name as GrantType] : undefined;
}

/**
 * Why a client may not have these grant types, or undefined when it may: each must exist, a confidential-only
 * one needs a confidential client, and one that reads `redirect_uris` needs at least one.
 */
export function grantTypesProblem(
  grantTypes: readonly string[],
  client: { type: "public" | "confidential"; redirect_uris: readonly string[] },
): string | undefined {
  for (const name of grantTypes) {
    const grant = grantOf(name);
    if (grant === undefined) return `unknown grant type "${String(name)}"`;
    if (grant.confidentialOnly && client.type === "public") return `a public client cannot use ${name} (RFC 6749 §4.4)`;
    if (grant.clientFields.includes("redirect_uris") && client.redirect_uris.length === 0) {
      return `${name} needs at least one redirect URI`;
    }
  }
  return undefined;
}

/**
 * Binds every grant to a server context, once, when the server is created: each grant's `exchange` is given a
 * frozen view holding exactly the fields in its `reads`, so an undeclared read is `undefined` at runtime too
 * (and a test fails), not only a type error. The context's fields are fixed after creation (its stateful
 * parts, the store, throttle and CSRF key, are objects whose identity never changes), so copying them is safe.
 */
export function bindGrants(context: Pick<ServerContext, GrantReadable>): ReadonlyMap<string, BoundGrant> {
  const bound = new Map<string, BoundGrant>();
  for (const name of GRANT_TYPES) {
    const grant = GRANTS[name];
    const fields: Partial<Pick<ServerContext, GrantReadable>> = {};
    for (const key of grant.reads) Object.assign(fields, { [key]: context[key] });
    const view = Object.freeze(fields);
    // The grant's own type sees only its reads (`defineGrant`); the table's wider type needs the cast.
    const narrowed = view as Pick<ServerContext, GrantReadable>;
    bound.set(name, Object.freeze({
      grant,
      view,
      exchange: (form: Map<string, string>, client: ClientRecord, incoming?: Incoming) => grant.exchange(form, client, narrowed, incoming),
    }));
  }
  return bound;
}
