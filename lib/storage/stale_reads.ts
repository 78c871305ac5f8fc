/**
 * The mechanism behind the per-process caches of a store's reads (`cachedClients`, `cachedTokens`): a record
 * read from the store is served for at most `maxAgeMs` after the read began; reads of one key in flight share one
 * call; neither a miss (null) nor a failure is kept, so what was created elsewhere, or a store back up, is seen at
 * once.
 *
 * @module
 */
import { STORAGE_METHODS, type Storage } from "./types.ts";
import { makeRoom } from "../evict.ts";

/** The bound and size of a cache of reads. */
export interface StaleReadsOptions {
  /** How long a record read from the store is served, in ms: the staleness bound. Default 1 000; 0 disables. */
  maxAgeMs?: number;
  /** Records kept at most; at the cap the oldest quarter goes. Default 10 000. */
  maxEntries?: number;
  /** Milliseconds, for the age of entries. Default `Date.now`. */
  clock?: () => number;
}

/** One cached read: when it began, and the record it gave (or is still reading), once known. */
export interface StaleEntry<V> {
  at: number;
  record: Promise<V | null>;
  value?: V;
}

/** Reads by key, each served until it is `maxAgeMs` old. */
export class StaleReads<V> {
  readonly entries: Map<string, StaleEntry<V>> = new Map();
  private readonly maxAge: number;
  private readonly maxEntries: number;
  private readonly clock: () => number;

  constructor(options: StaleReadsOptions) {
    this.maxAge = Math.max(0, options.maxAgeMs ?? 1000);
    this.maxEntries = Math.max(1, options.maxEntries ?? 10_000);
    this.clock = options.clock ?? Date.now;
  }

  /** Whether the bound is 0: then there is nothing to cache. */
  get off(): boolean {
    return this.maxAge === 0;
  }

  /** The entry of `key` while it is within the bound (a clock that went back must not stretch it), else a new read. */
  read(key: string, load: () => Promise<V | null>): StaleEntry<V> {
    const now = this.clock();
    const cached = this.entries.get(key);
    return cached !== undefined && this.within(cached, now) ? cached : this.load(key, load, now);
  }

  /** Whether `entry` is within the bound at `now`. */
  within(entry: StaleEntry<V>, now: number): boolean {
    return now - entry.at < this.maxAge && now >= entry.at;
  }

  /**
   * A new read of `key`, replacing any entry; kept once it gives a record (`keep` of it, when given). Its
   * bookkeeping is part of the promise callers get, not a branch of its own: one promise per miss, not three.
   */
  load(key: string, load: () => Promise<V | null>, now: number = this.clock(), keep?: (record: V) => V): StaleEntry<V> {
    const pending = load();
    const entry = { at: now } as StaleEntry<V>;
    this.entries.delete(key);
    makeRoom(this.entries, this.maxEntries);
    this.entries.set(key, entry);
    entry.record = pending.then((record) => {
      if (record === null) {
        this.forget(key, entry);
        return null;
      }
      return (entry.value = keep === undefined ? record : keep(record));
    }, (error: unknown) => {
      this.forget(key, entry);
      throw error;
    });
    return entry;
  }

  /** Drops the entry of `key` (only `entry`, when given: a newer read stays). */
  forget(key: string, entry?: StaleEntry<V>): void {
    if (entry === undefined || this.entries.get(key) === entry) this.entries.delete(key);
  }
}

/** A copy of a store's interface that forwards every verb to it, for a wrapper to override some of. */
export function forwarding(storage: Storage): Record<string, unknown> {
  const wrapped = {} as Record<string, unknown>;
  const target = storage as unknown as Record<string, unknown>;
  for (const name of STORAGE_METHODS) {
    wrapped[name] = (...args: unknown[]) => (target[name] as (...a: unknown[]) => unknown).apply(storage, args);
  }
  return wrapped;
}
