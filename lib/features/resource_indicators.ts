/**
 * Resource indicators (RFC 8707): which resource servers a token is for. Bound to the code and the grant at the
 * authorization endpoint, where the user consents; a token request or a refresh may only narrow it, never pick
 * an audience the user did not see (better-auth's GHSA-p2fr-6hmx-4528 took it from the token request). On when
 * `resources` lists at least one; off, the parameter is ignored, so clients that always send it still work.
 *
 * @module
 */
import { defineFeature, type Feature } from "../core/feature.ts";
import { OAuthError } from "../errors.ts";
import { canonicalResource } from "../resource_uri.ts";

/** The options this feature adds. */
export interface ResourceIndicatorOptions {
  /**
   * Resource servers that tokens may be issued for (RFC 8707): absolute https URLs (http on loopback), compared
   * as exact strings once scheme and host are in lower case (the canonical form, MCP 2026-07-28). A `resource`
   * parameter must name one (else `invalid_target`); it binds the code and the grant, and its canonical form
   * becomes the token's audience (`aud`). Default none: the parameter is then ignored.
   */
  resources?: string[];
}

/** The configured resources, when there are any. */
export interface ResourceIndicators {
  readonly resources: readonly string[];
}

const invalidTarget = (description: string) => new OAuthError("invalid_target", { description });

/** The resource indicators feature. */
export const resourceIndicators: Feature<"resource_indicators", ResourceIndicators | null, ResourceIndicatorOptions> = defineFeature({
  name: "resource_indicators",
  doc: "RFC 8707: tokens bound to one of the configured resource servers.",
  options: [{
    key: "resources",
    type: { kind: "list", items: { kind: "string" } },
    doc: "Resource indicators (RFC 8707) clients may ask tokens for.",
    check: (resources: string[]) => {
      const bad = resources.find((r) => canonicalResource(r) === null);
      return bad === undefined ? undefined : `must hold absolute https URLs (http on loopback) without fragment: "${bad}"`;
    },
  }],
  reads: [],
  setup: (options): ResourceIndicators | null =>
    options.resources === undefined || options.resources.length === 0
      ? null
      : { resources: [...new Set(options.resources.map((r) => canonicalResource(r)!))] },
});

/** The canonical form of a `resource` parameter; throws `invalid_target` for a malformed one. */
function canonical(value: string): string {
  const resource = canonicalResource(value);
  if (resource === null) throw invalidTarget("The resource must be an absolute URI without a fragment");
  return resource;
}

/**
 * The audience asked for at the authorization endpoint (or by client_credentials), in canonical form, or
 * undefined for none. Throws `invalid_target` for a malformed or unknown resource.
 */
export function requestedResource(value: string | undefined, state: ResourceIndicators | null): string[] | undefined {
  if (value === undefined || state === null) return undefined;
  const resource = canonical(value);
  // Exact comparison past scheme and host case: one resource's consent never covers another.
  if (!state.resources.includes(resource)) throw invalidTarget("The resource is not known to this server");
  return [resource];
}

/**
 * The audience of tokens minted from a bound grant (RFC 8707 §2.2): the grant's own, or the one resource asked
 * for, which must be among them. A resource asked for on an unbound grant is refused: the user never saw it.
 */
export function narrowedResource(
  value: string | undefined,
  bound: readonly string[] | undefined,
  state: ResourceIndicators | null,
): string[] | undefined {
  if (value === undefined || state === null) return bound === undefined ? undefined : [...bound];
  const resource = canonical(value);
  if (bound === undefined || !bound.includes(resource)) throw invalidTarget("The resource was not part of the authorization");
  return [resource];
}
