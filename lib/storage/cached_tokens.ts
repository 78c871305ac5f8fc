/**
 * A per-process cache of access-token records in front of a store, so that an API client calling again and
 * again with one token costs its resource server one read of the store per bound, not one per call (what a
 * resource server may do with an introspection answer, RFC 7662 §4).
 *
 * The staleness bound: a record read from the store is served for at most `maxAgeMs` (default 1 000 ms) after
 * the read began, and never past its `expires_at`. Every change made through this wrapper that can end a token
 * (revoking a token or a grant, pausing, deleting or revoking a client, and any verb this module does not know
 * to be harmless) empties the cache once the store has it, so it takes effect at once on this instance. A
 * revocation made by another instance or process takes effect here within `maxAgeMs`. A token that is not found
 * is never cached, so a token issued elsewhere works at once everywhere.
 *
 * Records are served as frozen copies (their lists and `act` too): every caller sees the same object.
 *
 * @module
 */
import { forwarding, StaleReads } from "./stale_reads.ts";
import { type AccessTokenRecord, STORAGE_METHODS, type Storage } from "./types.ts";

/** Options of {@link cachedTokens}. */
export interface CachedTokensOptions {
  /** How long a record read from the store is served, in ms: the staleness bound. Default 1 000; 0 disables. */
  maxAgeMs?: number;
  /** Records kept at most; at the cap the oldest quarter goes. Default 10 000. */
  maxEntries?: number;
  /** Milliseconds, for the age of entries. Default `Date.now`. */
  clock?: () => number;
}

/**
 * The verbs that cannot end an access token that exists: they read, add records, or spend codes and refresh
 * tokens (a replay's revocation is a separate `revokeGrant`). Every other verb empties the cache, so a verb
 * added to `Storage` later is safe until it is listed here.
 */
const HARMLESS: ReadonlySet<keyof Storage> = new Set<keyof Storage>([
  "getClient", "saveClient", "listClients", "saveCode", "findCode", "redeemCode", "saveTokens", "findAccessToken",
  "findRefreshToken", "rotateRefreshToken", "listGrants", "markOnce", "isMarked", "initSetting", "getSetting",
  "swapSetting", "purgeExpired", "saveDeviceAuthorization", "findDeviceAuthorization", "decideDeviceAuthorization",
  "pollDeviceAuthorization", "redeemDeviceAuthorization",
]);

/** A frozen copy: the store's own object (a memory store's) stays the store's. */
function frozen(record: AccessTokenRecord): AccessTokenRecord {
  const copy = { ...record } as Record<string, unknown>;
  for (const name in copy) {
    const value = copy[name];
    if (typeof value === "object" && value !== null) copy[name] = Object.freeze(Array.isArray(value) ? [...value] : { ...value });
  }
  return Object.freeze(copy) as unknown as AccessTokenRecord;
}

/** Wraps a store so that `findAccessToken` answers from a per-process cache (see the module for the bound). */
export function cachedTokens(storage: Storage, options: CachedTokensOptions = {}): Storage {
  const reads = new StaleReads<AccessTokenRecord>(options);
  if (reads.off) return storage;

  const findAccessToken = (hash: string, now: number): Promise<AccessTokenRecord | null> => {
    const entry = reads.fresh(hash);
    if (entry !== undefined) {
      const value = entry.value;
      // A read still in flight began with an earlier `now`: its record is checked against this one.
      if (value === undefined) return entry.record.then((record) => (record !== null && record.expires_at > now ? record : null));
      // A record is never served past its token's expiry: the store is asked again (and answers null).
      if (value.expires_at > now) return entry.record;
    }
    // A read begun here with this `now`: the store answers only a token live at `now`.
    return reads.load(hash, () => storage.findAccessToken(hash, now), undefined, frozen).record;
  };

  /** A verb that may end tokens: the cache is emptied once the store has it, also of reads that began meanwhile. */
  const ending = (name: keyof Storage) => async (...args: unknown[]): Promise<unknown> => {
    try {
      return await (target[name] as (...a: unknown[]) => Promise<unknown>).apply(storage, args);
    } finally {
      reads.entries.clear();
    }
  };

  const target = storage as unknown as Record<string, unknown>;
  const wrapped = forwarding(storage);
  const overrides: Record<string, unknown> = { findAccessToken };
  for (const name of STORAGE_METHODS) if (!HARMLESS.has(name)) overrides[name] = ending(name);
  return Object.assign(wrapped, overrides) as unknown as Storage;
}
