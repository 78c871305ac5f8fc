// The storage contract, run against the in-memory store, and its expiry sweep.
import { describe, expect, test } from "vitest";
import { memoryStorage, storageContract } from "../../mod.ts";

describe("storage contract: memoryStorage", () => {
  for (const check of storageContract(() => memoryStorage())) test(check.name, check.run);
});

test("the contract catches a store whose redemption is not atomic", async () => {
  // A store that awaits between its check and its write: the race the contract exists to catch.
  const racy = () => {
    const inner = memoryStorage();
    return Object.assign(Object.create(inner), {
      async redeemCode(hash: string, tokens: Parameters<typeof inner.redeemCode>[1], now: number) {
        const code = await inner.findCode(hash, now);
        if (!code || code.redeemed_at !== undefined) return null;
        await new Promise((resolve) => setTimeout(resolve, 1));
        await inner.saveTokens(tokens, now);
        return code;
      },
    });
  };
  const check = storageContract(racy).find((c) => c.name.includes("redemptions of one code"))!;
  await expect(check.run()).rejects.toThrow(/exactly one redemption wins/);
});

test("expired records are swept a bounded slice per write, so memory does not grow and no write stalls", async () => {
  let now = 1_000_000;
  const store = memoryStorage({ clock: () => now, sweepInterval: 1000 });
  const issue = (i: number, grant?: string) =>
    store.saveTokens({
      access: { hash: `at-${i}`, client_id: "c", scope: "read", expires_at: now + 5000, ...(grant ? { grant_id: grant } : {}) },
      ...(grant ? { refresh: { hash: `rt-${i}`, grant_id: grant, client_id: "c", scope: "read", expires_at: now + 8000 } } : {}),
    }, now);
  for (let i = 0; i < 10_000; i++) await issue(i, i % 2 ? `g-${i}` : undefined);
  for (let i = 0; i < 100; i++) {
    await store.saveCode({ hash: `code-${i}`, grant_id: `cg-${i}`, client_id: "c", user_id: "u", redirect_uri: "https://a/b", scope: "read", expires_at: now + 600 });
  }
  expect(store.size()).toMatchObject({ access: 10_000, refresh: 5000, codes: 100 });
  now += 10_000;
  const total = () => Object.values(store.size()).reduce((a, b) => a + b, 0);
  const before = total();
  await issue(10_000);
  // One write visits at most one slice (512 records), however large the backlog.
  expect(before + 1 - total()).toBeLessThanOrEqual(512);
  expect(before + 1 - total()).toBeGreaterThan(0);
  for (let i = 10_001; i < 10_100; i++) await issue(i);
  expect(store.size()).toMatchObject({ access: 100, refresh: 0, codes: 0, grants: 0 });
});

test("storage stays bounded under steady load", async () => {
  let now = 1_000_000;
  const store = memoryStorage({ clock: () => now, sweepInterval: 1000 });
  let peak = 0;
  for (let i = 0; i < 50_000; i++) {
    now += 10; // 100 tokens a second, each living 60 s: about 6000 live at any time
    await store.saveTokens({ access: { hash: `at-${i}`, client_id: "c", scope: "read", expires_at: now + 60_000 } }, now);
    peak = Math.max(peak, store.size().access);
  }
  expect(peak).toBeLessThan(6000 + 2 * 100 + 512);
});

test("purgeExpired deletes a large backlog in slices, letting other work run between them", async () => {
  const now = 1_000_000;
  const store = memoryStorage({ clock: () => now });
  for (let i = 0; i < 100_000; i++) {
    await store.saveTokens({ access: { hash: `at-${i}`, client_id: "c", scope: "read", expires_at: now + 1000 } }, now);
  }
  let ranMeanwhile = false;
  setTimeout(() => (ranMeanwhile = true), 0);
  expect(await store.purgeExpired(now + 120_000)).toBe(100_000);
  expect(ranMeanwhile).toBe(true);
  expect(store.size().access).toBe(0);
});

test("a large store keeps every record findable, deletable and counted while its indexes settle (issue 14)", async () => {
  // Past a few thousand keys, new records are moved into settled maps a slice per write (lib/storage/tiered_map.ts):
  // lookups, revocations and counts must not depend on where a record sits meanwhile.
  const now = 1_000_000;
  const store = memoryStorage({ clock: () => now });
  const live = new Set<string>();
  let seed = 7;
  const random = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n;
  for (let i = 0; i < 40_000; i++) {
    const hash = `at-${i}`;
    await store.saveTokens({ access: { hash, client_id: `c${i % 3}`, scope: "read", expires_at: now + 60_000 } }, now);
    live.add(hash);
    if (i % 5 === 0) {
      // Revoke an earlier token, wherever it sits by now.
      const victim = `at-${random(i + 1)}`;
      await store.revokeAccessToken(victim);
      live.delete(victim);
    }
    if (i % 97 === 0) {
      for (let j = 0; j < 20; j++) {
        const probe = `at-${random(i + 1)}`;
        expect((await store.findAccessToken(probe, now))?.hash ?? null).toBe(live.has(probe) ? probe : null);
      }
      expect(store.size().access).toBe(live.size);
    }
  }
  for (let i = 0; i < 40_000; i++) {
    const hash = `at-${i}`;
    expect((await store.findAccessToken(hash, now)) !== null).toBe(live.has(hash));
  }
  // Revoking a client reaches every one of its grantless tokens, settled or not.
  expect(await store.revokeClientGrants("c1")).toBe(0);
  for (let i = 1; i < 40_000; i += 3) expect(await store.findAccessToken(`at-${i}`, now)).toBeNull();
  expect(store.size().access).toBe([...live].filter((hash) => Number(hash.slice(3)) % 3 !== 1).length);
  // A client whose token index is half-way through being settled (4096 keys, then 10 more writes).
  for (let i = 0; i < 4106; i++) {
    await store.saveTokens({ access: { hash: `x-${i}`, client_id: "x", scope: "read", expires_at: now + 60_000 } }, now);
  }
  await store.revokeClientGrants("x");
  for (let i = 0; i < 4106; i++) expect(await store.findAccessToken(`x-${i}`, now)).toBeNull();
});
