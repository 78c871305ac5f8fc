/**
 * String-keyed maps for the in-memory store's large indexes, laid out for the JavaScript engine's collector.
 *
 * Why (issue 14, measured on Bun 1.4): JavaScriptCore remembers a written object as a whole, so every young
 * ("eden") collection re-scans each old Map written since the previous one, entry by entry. One Map of 1M
 * tokens receiving a new token per request therefore turned every young collection into a 9 MB scan
 * (`BUN_JSC_logGC=1`: eden cycles of 130-260 ms instead of 0.3-8 ms), during which JSC's collector scheduler
 * holds the request thread back (its mutator share, `mu=0.6`), so throughput over HTTP halved at 100k+ stored
 * tokens while the server sat partly idle. On JavaScriptCore the indexes are therefore {@link SplitMap}s.
 *
 * V8 (Node, Deno) remembers single slots and never had the problem, and there the split costs: every key is
 * written twice and looked up in up to three maps. With split indexes, Deno answered client_credentials in
 * process 10-15 % slower, with a p99 of 0.06-0.07 ms instead of 0.05 ms, and a Node client_credentials request
 * over HTTP took 197 instead of 188 thousand instructions (callgrind). So on V8 they are plain `Map`s.
 *
 * The engine is told apart by a language feature, not by a runtime's globals: JavaScriptCore gives every error
 * a numeric `line` property, V8 does not.
 *
 * @module
 */

/** The interface of both layouts: what the memory store uses of a `Map`. Iterating yields the keys. */
export interface IndexMap<V> {
  readonly size: number;
  get(key: string): V | undefined;
  has(key: string): boolean;
  set(key: string, value: V): this;
  delete(key: string): boolean;
  keys(): IterableIterator<string>;
  values(): IterableIterator<V>;
  [Symbol.iterator](): IterableIterator<string>;
}

/** An {@link IndexMap} used as a set of keys. */
export interface IndexSet extends IndexMap<true> {
  add(key: string): this;
}

/** Settled maps, by the low bits of the key's last two characters. */
const PARTS = 64;
/** Fewest keys in `fresh` before it is settled. */
const FRESH_MIN = 4096;
/** Keys moved from the map being settled per write. */
const SLICE = 64;

const part = (key: string): number =>
  (key.charCodeAt(key.length - 1) + key.charCodeAt(key.length - 2) * 7) & (PARTS - 1);

/**
 * The layout for JavaScriptCore. New keys go to a small `fresh` map. Once it holds 1/16 of what is settled (at
 * least 4096 keys) it is moved, a slice per write, into 64 `settled` maps chosen by the key's last characters
 * (the keys of the large indexes are SHA-256 hashes in base64url, so spread evenly). Between moves the settled
 * maps are not written, so a young collection re-scans only the fresh map; the whole settled part is re-scanned
 * about once per 1/16 of growth. A key lives in exactly one map.
 *
 * The newest value of a key wins: `set` always writes `fresh` and a lookup tries `fresh`, then
 * the map being settled, then `settled`, so no write needs a lookup first. A key set again while an older value
 * sits in another tier counts twice in `size` until it is settled; callers that need an exact size delete first.
 * Iteration order is unspecified.
 */
export class SplitMap<V> implements IndexMap<V> {
  private fresh = new Map<string, V>();
  /** The previous `fresh`, being moved into `settled` a slice per write (a moved key is deleted from it). */
  private moving: Map<string, V> | undefined;
  private cursor: Iterator<[string, V]> | undefined;
  private readonly settled: Map<string, V>[] = Array.from({ length: PARTS }, () => new Map());
  private settledSize = 0;

  /** How many keys it holds (see the class for keys set again). */
  get size(): number {
    return this.fresh.size + (this.moving?.size ?? 0) + this.settledSize;
  }

  get(key: string): V | undefined {
    return this.fresh.get(key) ?? this.moving?.get(key) ?? this.settled[part(key)]!.get(key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Adds or replaces. Values must not be `undefined`. */
  set(key: string, value: V): this {
    this.fresh.set(key, value);
    this.settle();
    return this;
  }

  /** Deletes every copy of a key. */
  delete(key: string): boolean {
    const inFresh = this.fresh.delete(key);
    const inMoving = this.moving?.delete(key) === true;
    const inSettled = this.settled[part(key)]!.delete(key);
    if (inSettled) this.settledSize--;
    return inFresh || inMoving || inSettled;
  }

  *keys(): IterableIterator<string> {
    yield* this.fresh.keys();
    if (this.moving) for (const key of this.moving.keys()) if (!this.fresh.has(key)) yield key;
    for (const map of this.settled) for (const key of map.keys()) if (!this.fresh.has(key) && !this.moving?.has(key)) yield key;
  }

  *values(): IterableIterator<V> {
    for (const key of this.keys()) yield this.get(key)!;
  }

  [Symbol.iterator](): IterableIterator<string> {
    return this.keys();
  }

  /** Moves one slice of the map being settled; starts settling `fresh` once it is large enough. */
  private settle(): void {
    if (this.moving === undefined) {
      if (this.fresh.size < Math.max(FRESH_MIN, this.settledSize >> 4)) return;
      this.moving = this.fresh;
      this.cursor = this.moving.entries();
      this.fresh = new Map();
    }
    const moving = this.moving;
    for (let i = 0; i < SLICE; i++) {
      const next = this.cursor!.next();
      if (next.done) {
        this.moving = undefined;
        this.cursor = undefined;
        return;
      }
      const [key, value] = next.value;
      const settled = this.settled[part(key)]!;
      const before = settled.size;
      settled.set(key, value);
      // A key settled before and set again replaces its old copy: count it once.
      this.settledSize += settled.size - before;
      // Deleting a visited entry keeps the iterator valid.
      moving.delete(key);
    }
  }
}

/** A {@link SplitMap} used as a set of keys. */
export class SplitSet extends SplitMap<true> implements IndexSet {
  add(key: string): this {
    return this.set(key, true);
  }
}

/** The layout for V8: a plain `Map`, whose iteration is made to yield its keys, as a {@link SplitMap}'s does. */
class FlatMap<V> extends Map<string, V> {}
Object.defineProperty(FlatMap.prototype, Symbol.iterator, { value: Map.prototype.keys, writable: true, configurable: true });

class FlatSet extends FlatMap<true> {
  add(key: string): this {
    return this.set(key, true);
  }
}

/** Whether the engine is JavaScriptCore (see the module). */
const JSC: boolean = typeof (new Error() as { line?: unknown }).line === "number";

/** The memory store's large indexes, in the layout that suits the engine (see the module). */
export type TieredMap<V> = IndexMap<V>;
/** @see TieredMap */
export const TieredMap: new <V>() => IndexMap<V> = JSC ? SplitMap : FlatMap as unknown as new <V>() => IndexMap<V>;
/** A set of keys in the layout that suits the engine. */
export type TieredSet = IndexSet;
/** @see TieredSet */
export const TieredSet: new () => IndexSet = JSC ? SplitSet : FlatSet as unknown as new () => IndexSet;
