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
import { type AccessTokenRecord, STORAGE_METHODS, type Storage } from "./types.ts";

/** Options of {@link cachedTokens}. */
export interface CachedTokensOptions {
  /** How long a record read from the store is served, in ms: the staleness bound. Default 1 000; 0 disables. */
  maxAgeMs?: number;
  /** Records kept at most; the oldest read goes first. Default 10 000. */
  maxEntries?: number;
  /** Milliseconds, for the age of entries. Default `Date.now`. */
  clock?: () => number;
}

/** One cached read: when it began, and the record it gave (or is still reading). */
interface Entry {
  at: number;
  record: Promise<AccessTokenRecord | null>;
  value?: AccessTokenRecord;
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
  const copy = { ...record };
  for (const [name, value] of Object.entries(copy)) {
    if (typeof value !== "object" || value === null) continue;
    (copy as Record<string, unknown>)[name] = Object.freeze(Array.isArray(value) ? [...value] : { ...value });
  }
  return Object.freeze(copy);
}

/** Wraps a store so that `findAccessToken` answers from a per-process cache (see the module for the bound). */
export function cachedTokens(storage: Storage, options: CachedTokensOptions = {}): Storage {
  const maxAge = Math.max(0, options.maxAgeMs ?? 1000);
  if (maxAge === 0) return storage;
  const maxEntries = Math.max(1, options.maxEntries ?? 10_000);
  const clock = options.clock ?? Date.now;
  const entries = new Map<string, Entry>();
  const forget = (hash: string, entry: Entry): void => {
    if (entries.get(hash) === entry) entries.delete(hash);
  };

  const findAccessToken = (hash: string, now: number): Promise<AccessTokenRecord | null> => {
    const at = clock();
    const cached = entries.get(hash);
    // `at < cached.at` too: a clock that went back must not stretch the bound.
    if (cached && at - cached.at < maxAge && at >= cached.at) {
      if (cached.value === undefined) {
        return cached.record.then((record) => (record !== null && record.expires_at > now ? record : null));
      }
      if (cached.value.expires_at > now) return cached.record;
    }
    const entry: Entry = { at, record: storage.findAccessToken(hash, now).then((r) => r && frozen(r)) };
    entries.delete(hash);
    if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
    entries.set(hash, entry);
    // Neither a miss nor a failure is kept: a token issued elsewhere, or a store back up, is seen at once.
    entry.record.then((record) => {
      if (record !== null) entry.value = record;
      else forget(hash, entry);
    }, () => forget(hash, entry));
    return entry.record;
  };

  /** A verb that may end tokens: the cache is emptied once the store has it, also of reads that began meanwhile. */
  const ending = (name: keyof Storage) => async (...args: unknown[]): Promise<unknown> => {
    try {
      return await (target[name] as (...a: unknown[]) => Promise<unknown>).apply(storage, args);
    } finally {
      entries.clear();
    }
  };

  const wrapped = {} as Record<string, unknown>;
  const target = storage as unknown as Record<string, unknown>;
  for (const name of STORAGE_METHODS) {
    wrapped[name] = HARMLESS.has(name)
      ? (...args: unknown[]) => (target[name] as (...a: unknown[]) => unknown).apply(storage, args)
      : ending(name);
  }
  wrapped.findAccessToken = findAccessToken;
  return wrapped as unknown as Storage;
}
