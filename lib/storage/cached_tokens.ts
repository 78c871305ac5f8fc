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
 * Kept records are served as frozen copies (their lists and `act` too): every caller sees the same object. A
 * record read and not kept reaches its one caller as the store gave it, as without this wrapper.
 *
 * Only a token that comes back is kept: its record is cached from its second check within the bound (or once a
 * record of it has been cached before). A token checked once is read and not kept. Keeping every token would
 * make each one-off check pay for an entry, a promise and a frozen copy that live a whole bound and are then
 * dropped unused: over HTTP, 20,000 tokens checked in turn cost 16 µs more server CPU per check (89 to 106) with
 * the cache than without it; with this rule, 0 to 4. The tokens seen are marked in a fixed array of
 * timestamps, so marking one allocates nothing; two tokens that share a slot only make a one-off token cached,
 * never a record served longer.
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

/**
 * When each token was last checked without being kept, by a slot its hash picks: a token seen again within the
 * bound is worth keeping. A slot shared by two tokens only admits one more record; it never lengthens a bound.
 */
class Doorkeeper {
  private slots: Float64Array | undefined;
  private readonly size: number;
  private readonly maxAge: number;

  constructor(maxAge: number, entries: number) {
    this.maxAge = maxAge;
    // Eight slots per entry kept, so that at a full cache of one-off tokens a slot is rarely taken already.
    this.size = 2 ** Math.min(20, Math.max(10, Math.ceil(Math.log2(entries * 8))));
  }

  /** Whether `key` was seen within the bound before `now` (a clock that went back counts as not); marks it. */
  seen(key: string, now: number): boolean {
    const slots = (this.slots ??= new Float64Array(this.size).fill(-Infinity));
    let h = 0x811c9dc5; // FNV-1a over the whole key: hashes are random, but a store's own keys may not be
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    const slot = (h >>> 0) & (this.size - 1);
    const at = slots[slot]!;
    slots[slot] = now;
    return now - at < this.maxAge && now >= at;
  }
}

/** Wraps a store so that `findAccessToken` answers from a per-process cache (see the module for the bound). */
export function cachedTokens(storage: Storage, options: CachedTokensOptions = {}): Storage {
  const reads = new StaleReads<AccessTokenRecord>(options);
  if (reads.off) return storage;
  const clock = options.clock ?? Date.now;
  const door = new Doorkeeper(Math.max(0, options.maxAgeMs ?? 1000), Math.max(1, options.maxEntries ?? 10_000));

  const findAccessToken = (hash: string, now: number): Promise<AccessTokenRecord | null> => {
    const at = clock();
    const entry = reads.entries.get(hash);
    if (entry !== undefined && reads.within(entry, at)) {
      const value = entry.value;
      // A read still in flight began with an earlier `now`: its record is checked against this one.
      if (value === undefined) return entry.record.then((record) => (record !== null && record.expires_at > now ? record : null));
      // A record is never served past its token's expiry: the store is asked again (and answers null).
      if (value.expires_at > now) return entry.record;
    }
    // A token kept before, or seen within the bound, is kept; a first sighting is only read. Either way the read
    // begins here with this `now`, and the store answers only a token live at `now`.
    if (entry === undefined && !door.seen(hash, at)) return storage.findAccessToken(hash, now);
    return reads.load(hash, () => storage.findAccessToken(hash, now), at, frozen).record;
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
