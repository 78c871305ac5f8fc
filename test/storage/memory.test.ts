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

// Edges of the in-memory store that mutation testing (issue 15 item 12) found no test held.
describe("memoryStorage edges", () => {
  const at = (start: number) => {
    const clock = { now: start };
    return { clock, store: memoryStorage({ clock: () => clock.now, sweepInterval: 1000 }) };
  };
  const code = (hash: string, grant: string, expires_at: number) =>
    ({ hash, grant_id: grant, client_id: "c", user_id: "u", redirect_uri: "https://a.example/cb", scope: "read", expires_at });
  const pair = (n: string, grant: string, expires_at: number, refresh_expires = expires_at) => ({
    access: { hash: `at-${n}`, client_id: "c", user_id: "u", scope: "read", grant_id: grant, expires_at },
    refresh: { hash: `rt-${n}`, client_id: "c", user_id: "u", scope: "read", grant_id: grant, expires_at: refresh_expires },
  });

  test("a limit below 1 still keeps the code just saved, and so does a limit whose oldest code is the new one", async () => {
    const { store } = at(1_000_000);
    await store.saveCode(code("a", "ga", 1_600_000), 0);
    expect(await store.findCode("a", 1_000_000)).not.toBeNull();
    await store.saveCode(code("b", "gb", 1_500_000), 1);
    // "b" expires before "a", yet it is the one just saved: "a" goes.
    expect([await store.findCode("a", 1_000_000), (await store.findCode("b", 1_000_000))?.hash]).toEqual([null, "b"]);
  });

  test("without a grace window, a clock that went back does not let a rotated token rotate again", async () => {
    const { store } = at(1_000_000);
    await store.saveTokens(pair("1", "g", 9_000_000), 1_000_000);
    expect(await store.rotateRefreshToken("rt-1", pair("2", "g", 9_000_000), 1_005_000)).not.toBeNull();
    expect(await store.rotateRefreshToken("rt-1", pair("3", "g", 9_000_000), 1_000_000, 0)).toBeNull();
  });

  test("a grace retry is refused once the successor has expired", async () => {
    const { store } = at(1_000_000);
    await store.saveTokens(pair("1", "g", 9_000_000), 1_000_000);
    // A successor that lives 2 s (as a store may hold one whose expiry was cut short).
    expect(await store.rotateRefreshToken("rt-1", pair("2", "g", 9_000_000, 1_002_000), 1_000_000, 10_000)).not.toBeNull();
    expect(await store.rotateRefreshToken("rt-1", pair("3", "g", 9_000_000), 1_001_000, 10_000)).not.toBeNull();
    expect(await store.rotateRefreshToken("rt-1", pair("4", "g", 9_000_000), 1_002_000, 10_000)).toBeNull();
  });

  test("last_used_at is written again exactly one minute later", async () => {
    const { store } = at(1_000_000);
    await store.saveClient({ client_id: "c", name: "C", type: "confidential", redirect_uris: [], scopes: ["read"], grant_types: ["client_credentials"], client_credentials_refresh_token: false, active: true, created_at: 0 });
    const own = (n: string) => ({ access: { hash: `own-${n}`, client_id: "c", scope: "read", expires_at: 9_000_000 } });
    await store.saveTokens(own("1"), 1_000_000);
    await store.saveTokens(own("2"), 1_059_999);
    expect((await store.getClient("c"))?.last_used_at).toBe(1_000_000);
    await store.saveTokens(own("3"), 1_060_000);
    expect((await store.getClient("c"))?.last_used_at).toBe(1_060_000);
  });

  test("a listed grant without an audience has no resource member", async () => {
    const { store } = at(1_000_000);
    await store.saveCode(code("k", "g", 1_600_000));
    expect(await store.redeemCode("k", pair("1", "g", 4_600_000), 1_000_000)).not.toBeNull();
    const [grant] = await store.listGrants("u", 1_000_000);
    expect(grant && Object.keys(grant).sort()).toEqual(["client_id", "created_at", "expires_at", "grant_id", "last_used_at", "scope", "user_id"]);
  });

  test("more tokens saved into a listed grant leave its record as it was (created once)", async () => {
    const { store } = at(1_000_000);
    await store.saveTokens(pair("1", "g", 4_600_000), 1_000_000);
    await store.saveTokens(pair("2", "g", 4_600_000), 1_200_000);
    const [grant] = await store.listGrants("u", 1_200_000);
    expect([grant?.created_at, grant?.last_used_at]).toEqual([1_000_000, 1_000_000]);
  });

  test("a grant outlives its code: swept after the code expired, revoking it still removes its tokens", async () => {
    const { clock, store } = at(1_000_000);
    await store.saveCode(code("k", "g", 1_600_000));
    await store.redeemCode("k", pair("1", "g", 4_600_000, 90_000_000), 1_000_000);
    clock.now = 10_000_000; // the code and the access token are long expired, and every write sweeps
    for (let i = 0; i < 5; i++) await store.markOnce(`m-${i}`, clock.now + 1000, clock.now);
    await store.revokeGrant("g");
    expect(await store.findRefreshToken("rt-1", clock.now)).toBeNull();
  });

  test("the tombstone of a grant revoked before it was seen lasts a sweep interval", async () => {
    const { clock, store } = at(10_000);
    await store.revokeGrant("early");
    clock.now = 10_500; // a sweep runs at this write, halfway through the tombstone's life
    await store.markOnce("m", 20_000, clock.now);
    await store.saveTokens(pair("late", "early", 9_000_000), clock.now);
    expect(await store.findAccessToken("at-late", clock.now)).toBeNull();
  });
});
