/**
 * String-keyed maps for the in-memory store's large indexes, laid out for the JavaScript engine's collector.
 *
 * Why: JavaScriptCore (Bun) remembers a written object as a whole, so every young collection re-scans each old
 * Map written since the previous one, entry by entry; with one large Map the collector's pauses halved
 * throughput at 100k+ stored tokens. On JavaScriptCore the indexes are therefore {@link SplitMap}s.
 *
 * V8 (Node, Deno) remembers single slots and never had that problem, and there a split costs (every key written
 * twice, looked up in up to three maps), while one plain `Map` stalls a request when it rehashes at each doubling.
 * So on V8 the indexes are {@link PartedMap}s: one `Map` while small, then 256 of them, each key written once.
 * The measurements are in `test/bench/HISTORY.md`.
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

/** Settled maps of a {@link SplitMap} (a power of two). */
const JSC_PARTS = 4096;
/** Fewest keys in `fresh` before it is settled. */
const FRESH_MIN = 4096;
/** Keys moved per write, while a map is settled or split. */
const SLICE = 64;

/**
 * Which of `parts` maps (a power of two) holds a key: its last three characters, mixed. The large indexes are
 * keyed by random ids and base64url SHA-256 hashes, so these are spread evenly; other keys only cost evenness.
 */
function partOf(key: string, parts: number): number {
  const n = key.length;
  const mixed = key.charCodeAt(n - 1) ^ (key.charCodeAt(n - 2) << 5) ^ (key.charCodeAt(n - 3) << 10);
  return (mixed ^ (mixed >>> 8)) & (parts - 1);
}

/**
 * The layout for JavaScriptCore. New keys go to a small `fresh` map. Once it holds 1/16 of what is settled (at
 * least 4096 keys) it is moved, a slice per write, into 4096 `settled` maps chosen by the key's last characters
 * (the keys of the large indexes are SHA-256 hashes in base64url, so spread evenly). Between moves the settled
 * maps are not written, so a young collection re-scans only the fresh map; while a slice is moved, only the few
 * settled maps it wrote. With few settled maps, a slice wrote most of them, so a young collection during a move
 * re-scanned nearly the whole index and the tail latency doubled. A key lives in exactly one map.
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
  /** Created on the first settle, each part on its first key. */
  private settled: (Map<string, V> | undefined)[] | undefined;
  private settledSize = 0;

  /** How many keys it holds (see the class for keys set again). */
  get size(): number {
    return this.fresh.size + (this.moving?.size ?? 0) + this.settledSize;
  }

  get(key: string): V | undefined {
    return this.fresh.get(key) ?? this.moving?.get(key) ?? this.settled?.[partOf(key, JSC_PARTS)]?.get(key);
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
    const inSettled = this.settled?.[partOf(key, JSC_PARTS)]?.delete(key) === true;
    if (inSettled) this.settledSize--;
    return inFresh || inMoving || inSettled;
  }

  *keys(): IterableIterator<string> {
    yield* this.fresh.keys();
    if (this.moving) for (const key of this.moving.keys()) if (!this.fresh.has(key)) yield key;
    for (const map of this.settled ?? []) {
      if (map !== undefined) for (const key of map.keys()) if (!this.fresh.has(key) && !this.moving?.has(key)) yield key;
    }
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
      this.settled ??= new Array<Map<string, V> | undefined>(JSC_PARTS);
    }
    const moving = this.moving;
    const parts = this.settled!;
    for (let i = 0; i < SLICE; i++) {
      const next = this.cursor!.next();
      if (next.done) {
        this.moving = undefined;
        this.cursor = undefined;
        return;
      }
      const [key, value] = next.value;
      const settled = (parts[partOf(key, JSC_PARTS)] ??= new Map());
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

/** Keys a {@link PartedMap} holds in one `Map` before it is split. */
const SPLIT_AT = 16_384;
/** The maps of a split {@link PartedMap} (a power of two). */
const V8_PARTS = 256;

/**
 * The layout for V8: one `Map` up to {@link SPLIT_AT} keys, then {@link V8_PARTS} of them, so that no write
 * ever rehashes a huge table (a V8 `Map` doubles by rehashing every entry at once, which stalls the request
 * that triggers it for as long as a million-key copy takes). The split moves the first keys once, a slice per write; every
 * later key is written once, to its part. A key lives in exactly one map.
 */
export class PartedMap<V> implements IndexMap<V> {
  /** The one map before the split; while splitting, the keys not moved yet; then undefined. */
  private whole: Map<string, V> | undefined = new Map();
  private parts: Map<string, V>[] | undefined;
  /** Keys of `whole` still to move (deleting a visited key keeps a Map iterator valid). */
  private cursor: Iterator<string> | undefined;
  private partsSize = 0;

  get size(): number {
    return (this.whole?.size ?? 0) + this.partsSize;
  }

  get(key: string): V | undefined {
    const parts = this.parts;
    if (parts === undefined) return this.whole!.get(key);
    return parts[partOf(key, V8_PARTS)]!.get(key) ?? this.whole?.get(key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  set(key: string, value: V): this {
    const parts = this.parts;
    if (parts === undefined) {
      const whole = this.whole!;
      whole.set(key, value);
      if (whole.size >= SPLIT_AT) {
        this.parts = Array.from({ length: V8_PARTS }, () => new Map<string, V>());
        this.cursor = whole.keys();
      }
      return this;
    }
    const part = parts[partOf(key, V8_PARTS)]!;
    const before = part.size;
    part.set(key, value);
    this.partsSize += part.size - before;
    const whole = this.whole;
    if (whole !== undefined) {
      whole.delete(key);
      this.split(whole, parts);
    }
    return this;
  }

  delete(key: string): boolean {
    const inWhole = this.whole?.delete(key) === true;
    const parts = this.parts;
    if (parts === undefined || !parts[partOf(key, V8_PARTS)]!.delete(key)) return inWhole;
    this.partsSize--;
    return true;
  }

  *keys(): IterableIterator<string> {
    if (this.whole !== undefined) yield* this.whole.keys();
    if (this.parts !== undefined) for (const part of this.parts) yield* part.keys();
  }

  *values(): IterableIterator<V> {
    if (this.whole !== undefined) yield* this.whole.values();
    if (this.parts !== undefined) for (const part of this.parts) yield* part.values();
  }

  [Symbol.iterator](): IterableIterator<string> {
    return this.keys();
  }

  /** Moves one slice of `whole` into the parts; drops `whole` once it is empty. */
  private split(whole: Map<string, V>, parts: Map<string, V>[]): void {
    for (let i = 0; i < SLICE; i++) {
      const next = this.cursor!.next();
      if (next.done) {
        this.whole = undefined;
        this.cursor = undefined;
        return;
      }
      const key = next.value;
      const value = whole.get(key)!;
      whole.delete(key);
      // Never in its part already: writing a key to the parts removes it from `whole`.
      parts[partOf(key, V8_PARTS)]!.set(key, value);
      this.partsSize++;
    }
  }
}

export class PartedSet extends PartedMap<true> implements IndexSet {
  add(key: string): this {
    return this.set(key, true);
  }
}

/** Whether the engine is JavaScriptCore (see the module). */
const JSC: boolean = typeof (new Error() as { line?: unknown }).line === "number";

/** The memory store's large indexes, in the layout that suits the engine (see the module). */
export type TieredMap<V> = IndexMap<V>;
/** @see TieredMap */
export const TieredMap: new <V>() => IndexMap<V> = JSC ? SplitMap : PartedMap;
/** A set of keys in the layout that suits the engine. */
export type TieredSet = IndexSet;
/** @see TieredSet */
export const TieredSet: new () => IndexSet = JSC ? SplitSet : PartedSet;
