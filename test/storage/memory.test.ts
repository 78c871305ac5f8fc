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
        await inner.saveTokens(tokens);
        return code;
      },
    });
  };
  const check = storageContract(racy).find((c) => c.name.includes("redemptions of one code"))!;
  await expect(check.run()).rejects.toThrow(/exactly one redemption wins/);
});

test("expired records are swept, so memory does not grow without bound", async () => {
  let now = 1_000_000;
  const store = memoryStorage({ clock: () => now, sweepInterval: 1000 });
  const issue = (i: number, grant?: string) =>
    store.saveTokens({
      access: { hash: `at-${i}`, client_id: "c", scope: "read", expires_at: now + 5000, ...(grant ? { grant_id: grant } : {}) },
      ...(grant ? { refresh: { hash: `rt-${i}`, grant_id: grant, client_id: "c", scope: "read", expires_at: now + 8000 } } : {}),
    });
  for (let i = 0; i < 1000; i++) await issue(i, i % 2 ? `g-${i}` : undefined);
  for (let i = 0; i < 100; i++) {
    await store.saveCode({ hash: `code-${i}`, grant_id: `cg-${i}`, client_id: "c", user_id: "u", redirect_uri: "https://a/b", scope: "read", expires_at: now + 600 });
  }
  expect(store.size()).toMatchObject({ access: 1000, refresh: 500, codes: 100 });
  now += 10_000;
  for (let i = 1000; i < 1010; i++) await issue(i);
  expect(store.size()).toMatchObject({ access: 10, refresh: 0, codes: 0, grants: 0 });
});
