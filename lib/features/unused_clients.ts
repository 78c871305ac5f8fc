/**
 * The clean-up of clients that registered themselves (dynamic registration) or came with a metadata document,
 * and then were never or no longer used: most hosts register and abandon, and a stranger can make many.
 *
 * @module
 */
import type { ClientOrigin, Storage } from "../storage/types.ts";

/** How often a feature looks for unused clients, at most. */
export const REAP_INTERVAL_MS = 3600_000;

/**
 * Removes the clients of `origin` that have no live grant and have been unused for `maxIdleMs`. A client that
 * never received a token has no grant, so it goes `maxIdleMs` after its creation. One that did may still hold
 * a live refresh token until `grantLifetimeMs` after its last use, so it stays at least that long. With
 * `keepPaused`, a client an operator paused stays (a document client would come back active from its document).
 * Deleting a client revokes its grants. Returns how many were removed.
 */
export async function removeUnusedClients(
  storage: Storage,
  now: number,
  { origin, maxIdleMs, grantLifetimeMs, keepPaused = false }: { origin: ClientOrigin; maxIdleMs: number; grantLifetimeMs: number; keepPaused?: boolean },
): Promise<number> {
  let removed = 0;
  for (const client of await storage.listClients()) {
    if (client.origin !== origin || (keepPaused && !client.active)) continue;
    const idle = client.last_used_at === undefined
      ? now - client.created_at >= maxIdleMs
      : now - client.last_used_at >= Math.max(maxIdleMs, grantLifetimeMs);
    if (idle && await storage.deleteClient(client.client_id)) removed++;
  }
  return removed;
}
