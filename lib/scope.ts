/**
 * Scope rules (RFC 6749 §3.3): the profile's policy (the spec's exactly-one-scope rule, §8, or several
 * space-delimited scopes), the client's default scope when none is asked for, narrowing a request to what the
 * client may have, and narrowing on refresh.
 *
 * @module
 */
import { OAuthError } from "./errors.ts";
import type { ClientRecord } from "./storage/types.ts";

/** A scope token (RFC 6749 §3.3): printable ASCII except space, `"` and `\`. */
export const SCOPE_TOKEN: RegExp = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** The scope that asks for a refresh token (OpenID Connect Core §11; MCP 2026-07-28, SEP-2207). */
export const OFFLINE_ACCESS = "offline_access";

/** `single`: exactly one scope per request (the spec, §8). `multiple`: RFC 6749 §3.3, space-delimited. */
export type ScopePolicy = "single" | "multiple";

/** What the scope rules need to know of the server. */
export interface ScopeRules {
  readonly policy: ScopePolicy;
  /** Every scope the server knows (its `scopes`). */
  readonly known: ReadonlyMap<string, string>;
  /**
   * The offline_access feature is on: `offline_access` is a known scope, and every client that may use the
   * refresh_token grant may ask for it without listing it.
   */
  readonly offlineAccess: boolean;
}

/** The fields of a client the scope rules read. */
export type ScopeClient = Pick<ClientRecord, "scopes" | "grant_types" | "default_scope">;

const invalid = (description: string) => new OAuthError("invalid_scope", { description });

/** Splits a scope value into its tokens under a policy; throws `invalid_scope` when it is malformed. */
export function parseScope(value: string, policy: ScopePolicy): string[] {
  if (policy === "single") {
    if (/\s/.test(value)) throw invalid("Exactly one scope per request is allowed");
    if (!SCOPE_TOKEN.test(value)) throw invalid("The scope is malformed");
    return [value];
  }
  // RFC 6749 §3.3: scope-token *( SP scope-token ); one space between tokens, none around.
  const tokens = value.split(" ");
  if (!tokens.every((t) => SCOPE_TOKEN.test(t))) throw invalid("The scope is malformed");
  return [...new Set(tokens)];
}

/** Whether the server knows `scope`. */
export function knownScope(scope: string, rules: Pick<ScopeRules, "known" | "offlineAccess">): boolean {
  return rules.known.has(scope) || (rules.offlineAccess && scope === OFFLINE_ACCESS);
}

/** Whether `client` may have `scope`: it lists it, or it is `offline_access` (when on) and the client may refresh. */
export function clientAllows(client: Pick<ClientRecord, "scopes" | "grant_types">, scope: string, offlineAccess: boolean): boolean {
  if (client.scopes.includes(scope)) return true;
  return offlineAccess && scope === OFFLINE_ACCESS && client.grant_types.includes("refresh_token");
}

/** Whether `client` may still have every scope of `granted` (its registration may have changed since). */
export function clientAllowsAll(client: Pick<ClientRecord, "scopes" | "grant_types">, granted: string, offlineAccess: boolean): boolean {
  const mayRefresh = client.grant_types.includes("refresh_token");
  return granted.split(" ").every((s) => client.scopes.includes(s) || (offlineAccess && mayRefresh && s === OFFLINE_ACCESS));
}

/**
 * Checks a requested scope and returns the scope to grant. A missing scope takes the client's default
 * (RFC 6749 §3.3 lets the server pick one), else fails. Throws `invalid_scope` (RFC 6749 §4.1.2.1, §5.2) when it
 * is malformed or breaks the policy.
 *
 * Under the `single` policy the one scope must be one the client may have. Under `multiple` a request is
 * narrowed to the scopes the client may have (RFC 6749 §3.3: the server may grant less than asked, and says
 * so in the token response's `scope`), which is what MCP hosts need: they ask for every scope a resource
 * advertises. Two things stay `invalid_scope`: a scope the server does not know at all (a typo or another
 * server's scope, which narrowing would hide until the token is refused at the resource), and a request
 * left with nothing once narrowed.
 */
export function requestedScope(value: string | undefined, client: ScopeClient, rules: ScopeRules): string {
  if (value === undefined) {
    if (client.default_scope === undefined) throw invalid("The scope parameter is required");
    value = client.default_scope;
  }
  const tokens = parseScope(value, rules.policy);
  const allowed = (t: string) => knownScope(t, rules) && clientAllows(client, t, rules.offlineAccess);
  if (rules.policy === "single") {
    if (!allowed(tokens[0]!)) throw invalid("The scope is not allowed for this client");
    return tokens[0]!;
  }
  if (!tokens.every((t) => knownScope(t, rules))) throw invalid("The scope names a scope this server does not know");
  const granted = tokens.filter(allowed);
  if (granted.length === 0) throw invalid("The scope is not allowed for this client");
  return granted.join(" ");
}

/** Whether every token of `scope` is in `granted` (a space-delimited list). */
export function scopeWithin(scope: string, granted: string): boolean {
  const allowed = granted.split(" ");
  return scope.split(" ").every((t) => allowed.includes(t));
}

/** Whether a granted scope includes `offline_access`. */
export function grantsOfflineAccess(scope: string): boolean {
  return scope.split(" ").includes(OFFLINE_ACCESS);
}

/**
 * The scope of a refresh (RFC 6749 §6): the grant's own when none is asked for, else a subset of it. Throws
 * `invalid_scope` for anything wider.
 */
export function refreshScope(value: string | undefined, granted: string, policy: ScopePolicy): string {
  if (value === undefined) return granted;
  const tokens = parseScope(value, policy);
  if (!scopeWithin(tokens.join(" "), granted)) {
    throw invalid(policy === "single" ? "A refresh cannot change the scope" : "A refresh cannot widen the scope");
  }
  return tokens.join(" ");
}
