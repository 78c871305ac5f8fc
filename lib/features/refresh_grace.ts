/**
 * The refresh grace window: for a few seconds after a rotation, the rotated refresh token may be presented
 * again, for clients whose processes race to refresh with one token (Codex, several MCP hosts), and gets the
 * successor already issued (sealed under the spent token: `refresh_grace_seal.ts`), never a second chain. Off
 * (strict) by default: any reuse revokes the grant (RFC 9700 §4.14.2).
 *
 * @module
 */
import { defineFeature, type Feature } from "../core/feature.ts";

/** The options this feature adds. */
export interface RefreshGraceOptions {
  /**
   * Seconds during which the immediate predecessor of the latest refresh token still works, without revoking
   * the grant; a retry gets the same successor as the first rotation. Default 0 (strict: any reuse revokes the
   * grant). The trade-off: inside the window a replayed predecessor gets the latest token too (one chain, shared:
   * whoever refreshes second after the window revokes the grant), so keep it short (seconds).
   */
  refreshGraceSeconds?: number;
}

/** The window, in milliseconds. */
export interface RefreshGrace {
  readonly ms: number;
}

/** The refresh grace window feature. */
export const refreshGrace: Feature<"refresh_grace", RefreshGrace | null, RefreshGraceOptions> = defineFeature({
  name: "refresh_grace",
  doc: "A short window in which a just-rotated refresh token may be retried by the same client.",
  options: [{
    key: "refreshGraceSeconds",
    type: { kind: "integer", min: 0, max: 3600 },
    doc: "Seconds during which a just-rotated refresh token may be retried (multi-process clients); 0 = strict.",
  }],
  reads: [],
  setup: (options): RefreshGrace | null => (options.refreshGraceSeconds ? { ms: options.refreshGraceSeconds * 1000 } : null),
});
