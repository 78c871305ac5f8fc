/**
 * The engine pause behind the Deno max-latency rows at 1M stored tokens: `deno run test/bench/hash_stall.ts`
 * (or `node test/bench/hash_stall.ts` with a Node that strips types).
 *
 * It needs no project code. It makes 1.5M distinct 43-character strings, shaped like the store's token hashes,
 * and puts them in 256 plain `Map`s, one `set` each, timing every call. Each call that takes over 3 ms is
 * printed. Then it sets the same strings again into 256 new maps, where their hashes are known already.
 *
 * Measured here on 2026-11-26. V8 15.0 (Deno 2.9.5) and V8 14.6 (Node 26.10) stall one `set` at each
 * doubling of the count of strings hashed so far:
 *
 * | strings hashed | one `set` takes |
 * |---:|---:|
 * | about 0.69M | 18 ms |
 * | about 1.39M | 36-40 ms |
 *
 * A run can show other single slow calls too: the script allocates, and those are its collections. V8 12.4
 * (Node 22) does not stall. The second pass does not stall either, so the pause comes with hashing a
 * string for the first time. It does not come from the maps: one `Map` instead of 256 stalls at the same
 * counts, on top of its own rehashes at powers of two.
 *
 * @module
 */
const N = 1_500_000;
const PARTS = 256;
const bytes = new Uint8Array(43);
const keys: string[] = [];
for (let i = 0; i < N; i++) {
  for (let j = 0; j < 43; j++) bytes[j] = 65 + ((i * 7 + j * 13 + (i >> (j % 20))) % 26);
  keys.push(String.fromCharCode(...bytes));
}
for (const pass of ["first hashing", "hashed already"]) {
  const maps = Array.from({ length: PARTS }, () => new Map<string, number>());
  let worst = 0;
  for (let i = 0; i < N; i++) {
    const started = performance.now();
    maps[i % PARTS]!.set(keys[i]!, i);
    const ms = performance.now() - started;
    worst = Math.max(worst, ms);
    if (ms > 3) console.log(`${pass}: one set took ${ms.toFixed(1)} ms at ${i.toLocaleString("en-US")} strings`);
  }
  console.log(`${pass}: worst set ${worst.toFixed(1)} ms`);
}
