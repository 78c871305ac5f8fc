/**
 * `offline_access` (OpenID Connect Core §11; MCP 2026-07-28, SEP-2207): refresh tokens of the code flow only
 * for grants that include the `offline_access` scope, so a user decides on the consent page whether an app may
 * keep access while they are away. The scope is listed in the metadata's `scopes_supported` (MCP clients ask for
 * it only when it is there) and every client that may use the refresh_token grant may ask for it without
 * listing it. Off by default: refresh tokens then follow the client's grant types, as before.
 *
 * @module
 */
import { defineFeature, type Feature } from "../core/feature.ts";
import { OFFLINE_ACCESS } from "../scope.ts";

/** The options this feature adds. */
export interface OfflineAccessOptions {
  /**
   * Refresh tokens of the authorization code flow only when the user granted `offline_access`, which the
   * metadata then lists in `scopes_supported`. Default false: every code flow of a client with the
   * refresh_token grant gets one.
   */
  offlineAccess?: boolean;
}

/** The state while on: the consent page's line for the scope, unless `scopes` describes it. */
export interface OfflineAccess {
  readonly description: string;
}

/** Shown on the consent page when the server's `scopes` do not describe `offline_access` themselves. */
const DESCRIPTION = "Keep access while you are not using the app (a refresh token)";

/** The offline_access feature. */
export const offlineAccess: Feature<"offline_access", OfflineAccess | null, OfflineAccessOptions> = defineFeature({
  name: "offline_access",
  doc: "Refresh tokens of the code flow only when the user grants offline_access (MCP 2026-07-28).",
  options: [{
    key: "offlineAccess",
    type: { kind: "boolean" },
    doc: "Refresh tokens of the code flow only when offline_access is granted; the metadata lists the scope.",
  }],
  reads: ["scopes"],
  setup: (options, core): OfflineAccess | null =>
    options.offlineAccess === true ? { description: core.scopes.get(OFFLINE_ACCESS) ?? DESCRIPTION } : null,
  metadata(_state, { document }) {
    const listed = document.scopes_supported as readonly string[];
    return listed.includes(OFFLINE_ACCESS) ? {} : { scopes_supported: [...listed, OFFLINE_ACCESS] };
  },
});
