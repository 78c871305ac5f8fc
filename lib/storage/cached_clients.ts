/**
 * A per-process cache of client records in front of a store, so that a Bearer check or a token request does not
 * read the client from the database every time.
 *
 * The staleness bound: a record read from the store is served for at most `maxAgeMs` (default 1 000 ms) after
 * the read began. A change made through this wrapper (saving, pausing, resuming or deleting a client) drops
 * the cached record at once, so it takes effect at once on this instance; a change made by another instance or
 * process (another server, the command line) takes effect here within `maxAgeMs`. Until then a paused or deleted
 * client's tokens keep working here, and an old secret keeps authenticating. A client that is not found is
 * never cached, so a newly registered client is found at once everywhere. `last_used_at` on a cached record may
 * lag as well (the store already allows it a minute).
 *
 * @module
 */
import { LAST_USED_GRANULARITY } from "./last_used.ts";
import { forwarding, StaleReads } from "./stale_reads.ts";
import type { ClientRecord, Storage } from "./types.ts";

/** Options of {@link cachedClients}. */
export interface CachedClientsOptions {
  /** How long a record read from the store is served, in ms: the staleness bound. Default 1 000; 0 disables. */
  maxAgeMs?: number;
  /** Client records kept at most; at the cap the oldest quarter goes. Default 10 000. */
  maxEntries?: number;
  /** Milliseconds, for the age of entries. Default `Date.now`. */
  clock?: () => number;
}


/** Wraps a store so that `getClient` answers from a per-process cache (see the module for the bound). */
export function cachedClients(storage: Storage, options: CachedClientsOptions = {}): Storage {
  const reads = new StaleReads<ClientRecord>(options);
  if (reads.off) return storage;
  const entries = reads.entries;
  const forget = (clientId: string): void => reads.forget(clientId);

  const getClient = (clientId: string): Promise<ClientRecord | null> => reads.read(clientId, () => storage.getClient(clientId)).record;

  /**
   * A change to a client: the cached record is dropped once the store has it, also any read that began while it
   * was being written (which may have seen the old record).
   */
  const changing = <A extends unknown[], R>(write: (clientId: string, ...rest: A) => Promise<R>) =>
    async (clientId: string, ...rest: A): Promise<R> => {
      try {
        return await write(clientId, ...rest);
      } finally {
        forget(clientId);
      }
    };

  /** Stored tokens set the client's `last_used_at` in the store; the cached record follows as the store does. */
  const used = (clientId: string, now: number): void => {
    const entry = entries.get(clientId);
    const last = entry?.value?.last_used_at;
    if (!entry?.value || (last !== undefined && now - last < LAST_USED_GRANULARITY && now >= last)) return;
    const value = { ...entry.value, last_used_at: now };
    entries.set(clientId, { at: entry.at, record: Promise.resolve(value), value });
  };
  const issuing = <A extends unknown[], R>(write: (...args: A) => Promise<R>, clientOf: (...args: A) => string, nowOf: (...args: A) => number) =>
    async (...args: A): Promise<R> => {
      const result = await write(...args);
      if (result !== null) used(clientOf(...args), nowOf(...args));
      return result;
    };

  const wrapped = forwarding(storage);
  const overrides: Pick<
    Storage,
    "getClient" | "saveClient" | "setClientActive" | "deleteClient" | "saveTokens" | "redeemCode" | "rotateRefreshToken"
  > = {
    getClient,
    saveTokens: issuing((tokens, now) => storage.saveTokens(tokens, now), (tokens) => tokens.access.client_id, (_, now) => now),
    redeemCode: issuing((hash, tokens, now) => storage.redeemCode(hash, tokens, now), (_, tokens) => tokens.access.client_id, (_, __, now) => now),
    rotateRefreshToken: issuing(
      (hash, next, now, graceMs?: number) => storage.rotateRefreshToken(hash, next, now, graceMs),
      (_, next) => next.access.client_id,
      (_, __, now) => now,
    ),
    saveClient: (client) => changing((_id: string) => storage.saveClient(client))(client.client_id),
    setClientActive: changing((clientId: string, active: boolean) => storage.setClientActive(clientId, active)),
    deleteClient: changing((clientId: string) => storage.deleteClient(clientId)),
  };
  return Object.assign(wrapped, overrides) as unknown as Storage;
}
