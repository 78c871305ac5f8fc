/**
 * Resource indicators (RFC 8707): which resource servers a token is for. Bound to the code and the grant at the
 * authorization endpoint, where the user consents; a token request or a refresh may only narrow it, never pick
 * an audience the user did not see (better-auth's GHSA-p2fr-6hmx-4528 took it from the token request).
 *
 * @module
 */
import { OAuthError } from "./errors.ts";
import { checkResourceUri } from "./resource_server.ts";

const invalidTarget = (description: string) => new OAuthError("invalid_target", { description });

/** Checks the configured resources: absolute, no fragment, https or http on a loopback host. */
export function checkConfiguredResources(resources: unknown): string[] {
  if (resources === undefined) return [];
  if (!Array.isArray(resources)) throw new Error(`"resources" must be a list of URLs`);
  for (const resource of resources) {
    if (typeof resource !== "string" || checkResourceUri(resource) === null) {
      throw new Error(`"resources" must hold absolute https URLs (http on loopback) without fragment: "${String(resource)}"`);
    }
  }
  return [...resources];
}

/**
 * The audience asked for at the authorization endpoint, or undefined for none. With no configured resources the
 * parameter is ignored (RFC 8707 is then off, and clients that always send it still work). Throws
 * `invalid_target` for a malformed or unknown resource.
 */
export function requestedResource(value: string | undefined, configured: readonly string[]): string[] | undefined {
  if (value === undefined || configured.length === 0) return undefined;
  if (checkResourceUri(value) === null) throw invalidTarget("The resource must be an absolute URI without a fragment");
  // Exact string comparison: no normalisation, so one resource's consent never covers another.
  if (!configured.includes(value)) throw invalidTarget("The resource is not known to this server");
  return [value];
}

/**
 * The audience of tokens minted from a bound grant (RFC 8707 §2.2): the grant's own, or the one resource asked
 * for, which must be among them. A resource asked for on an unbound grant is refused: the user never saw it.
 */
export function narrowedResource(value: string | undefined, bound: readonly string[] | undefined, configured: readonly string[]): string[] | undefined {
  if (value === undefined || configured.length === 0) return bound === undefined ? undefined : [...bound];
  if (checkResourceUri(value) === null) throw invalidTarget("The resource must be an absolute URI without a fragment");
  if (bound === undefined || !bound.includes(value)) throw invalidTarget("The resource was not part of the authorization");
  return [value];
}
