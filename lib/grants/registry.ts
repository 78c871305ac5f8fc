/**
 * The grant types: one table from `grant_type` to its module. The token endpoint dispatches through it, the
 * metadata's `grant_types_supported` lists its keys, client registration (configured, CLI or RFC 7591) checks a
 * client's `grant_types` against it (a store keeps them as plain strings, so no store knows the list).
 *
 * Adding a grant (say `urn:ietf:params:oauth:grant-type:device_code`):
 * 1. a new file in this folder exporting `const deviceCode: Grant = defineGrant({ reads, clientFields,
 *    confidentialOnly, exchange })`, where `reads` names the server context fields `exchange` uses (it gets
 *    exactly those, see {@link bindGrants});
 * 2. one line in {@link GRANTS} below.
 * The metadata, the token endpoint, registration, the `GrantName` type and the reference server's config
 * schema (`npm run schema` regenerates its JSON) follow by themselves.
 *
 * @module
 */
import type { Incoming } from "../http.ts";
import type { ServerContext } from "../options.ts";
import type { ClientRecord } from "../storage/types.ts";
import { authorizationCode } from "./authorization_code.ts";
import { clientCredentials } from "./client_credentials.ts";
import { refreshToken } from "./refresh_token.ts";
import type { BoundGrant, Grant, GrantReadable } from "./types.ts";

/**
 * Every grant type by its wire name (RFC 6749 §4, §6), in the metadata's order. One line per grant; the `as
 * Grant` lets the declaration emit (isolatedDeclarations, JSR) name each entry's type without inference.
 */
export const GRANTS = {
  authorization_code: authorizationCode as Grant,
  refresh_token: refreshToken as Grant,
  client_credentials: clientCredentials as Grant,
} as const;
Object.freeze(GRANTS);

/** A grant type this server implements: a key of {@link GRANTS} (stored records hold it as a plain string). */
export type GrantName = keyof typeof GRANTS;

/** The grant types' wire names, in the table's order (`grant_types_supported`). */
export const GRANT_TYPES: readonly GrantName[] = Object.freeze(Object.keys(GRANTS) as GrantName[]);

/** The grant of a `grant_type` value; an own-property look-up, so "constructor" finds nothing. */
export function grantOf(name: string): Grant | undefined {
  return Object.hasOwn(GRANTS, name) ? GRANTS[name as GrantName] : undefined;
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
