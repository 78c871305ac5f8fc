// The memory store's index maps (lib/storage/tiered_map.ts). The store picks one layout on JavaScriptCore and the
// other on V8, so both are tested here directly, on every runtime, against a plain Map.
import { expect, test } from "vitest";
import { type IndexMap, PartedMap, PartedSet, SplitMap, SplitSet, TieredMap, TieredSet } from "../../lib/storage/tiered_map.ts";

/** Random sets, re-sets and deletes across several settling rounds, each step compared with a `Map`. */
function compareWithMap(map: IndexMap<number>): void {
  const model = new Map<string, number>();
  let seed = 11;
  const random = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n;
  for (let i = 0; i < 30_000; i++) {
    const roll = random(10);
    const key = `k-${roll < 6 ? i : random(i + 1)}`; // mostly new keys, some set again or deleted
    if (roll < 8) {
      map.set(key, i);
      model.set(key, i);
    } else {
      expect(map.delete(key)).toBe(model.delete(key));
    }
    // Every step, so that some probes land while a slice is being moved.
    const probe = `k-${random(i + 1)}`;
    expect(map.get(probe)).toBe(model.get(probe));
    expect(map.has(probe)).toBe(model.has(probe));
  }
  // A key set again may count twice while it waits to settle (SplitMap); deleting and setting counts it once.
  for (const key of model.keys()) {
    map.delete(key);
    map.set(key, model.get(key)!);
  }
  expect(map.size).toBe(model.size);
  expect([...map].sort()).toEqual([...model.keys()].sort());
  expect([...map.keys()].sort()).toEqual([...model.keys()].sort());
  expect([...map.values()].sort((a, b) => a - b)).toEqual([...model.values()].sort((a, b) => a - b));
  for (const [key, value] of model) expect(map.get(key)).toBe(value);
  expect(map.get("never")).toBeUndefined();
}

test("the split layout keeps the newest value of every key, wherever it sits, as a Map does", () => {
  compareWithMap(new SplitMap<number>());
});

test("the parted layout keeps every key findable, deletable and counted before, while and after it splits", () => {
  compareWithMap(new PartedMap<number>());
});

test("the layout the store picks behaves as a Map whose iteration yields keys", () => {
  compareWithMap(new TieredMap<number>());
});

test("both set layouts add, find and forget keys", () => {
  for (const set of [new SplitSet(), new PartedSet(), new TieredSet()]) {
    for (let i = 0; i < 40_000; i++) set.add(`s-${i}`);
    for (let i = 0; i < 30_000; i += 2) set.delete(`s-${i}`);
    expect(set.size).toBe(25_000);
    expect(set.has("s-1")).toBe(true);
    expect(set.has("s-2")).toBe(false);
    expect([...set].length).toBe(25_000);
  }
});
