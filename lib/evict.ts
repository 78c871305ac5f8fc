/**
 * Room in a map kept at most `max` keys in insertion order (the caches of reads, keys and documents).
 *
 * At the cap the oldest quarter goes at once. Dropping one key at a time from the front would leave deleted slots
 * that every later `keys().next()` scans again, since V8 compacts a Map only when it resizes: 8.5 µs per insert
 * at 10 000 keys, against 0.4 this way (`lib/throttle.ts` keeps two generations for the same reason).
 *
 * @module
 */

/** Makes room for one more key in `map`: when it holds `max` or more, deletes its oldest quarter (at least one). */
export function makeRoom<K, V>(map: Map<K, V>, max: number): void {
  if (map.size < max) return;
  let drop = Math.max(1, map.size - max + 1, Math.floor(max / 4));
  for (const key of map.keys()) {
    map.delete(key);
    if (--drop === 0) break;
  }
}
