/**
 * Scope rules (RFC 6749 §3.3): the profile's policy (the spec's exactly-one-scope rule, §8, or several
 * space-delimited scopes), the client's default scope when none is asked for, and narrowing on refresh.
 *
 * @module
 */
import { OAuthError } from "./errors.ts";
import type { ClientRecord } from "./storage/types.ts";

/** A scope token (RFC 6749 §3.3): printable ASCII except space, `"` and `\`. */
export const SCOPE_TOKEN: RegExp = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** `single`: exactly one scope per request (the spec, §8). `multiple`: RFC 6749 §3.3, space-delimited. */
export type ScopePolicy = "single" | "multiple";

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

/**
 * Checks a requested scope and returns the scope to grant. A missing scope takes the client's default
 * (RFC 6749 §3.3 lets the server pick one), else fails. Throws `invalid_scope` (RFC 6749 §4.1.2.1, §5.2) when it
 * is malformed, breaks the policy, or names a scope the client may not have.
 */
export function requestedScope(value: string | undefined, client: ClientRecord, policy: ScopePolicy): string {
  if (value === undefined) {
    if (client.default_scope === undefined) throw invalid("The scope parameter is required");
    value = client.default_scope;
  }
  const tokens = parseScope(value, policy);
  if (!tokens.every((t) => client.scopes.includes(t))) throw invalid("The scope is not allowed for this client");
  return tokens.join(" ");
}

/** Whether every token of `scope` is in `granted` (a space-delimited list). */
export function scopeWithin(scope: string, granted: string): boolean {
  const allowed = granted.split(" ");
  return scope.split(" ").every((t) => allowed.includes(t));
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
