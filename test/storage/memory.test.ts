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
    expect(await store.rotateRefreshToken("rt-1", { ...pair("2", "g", 9_000_000, 1_002_000), sealed: "s" }, 1_000_000, 10_000)).not.toBeNull();
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

describe("the memory store's sweep, indexes and caps", () => {
  const token = (hash: string, expires_at: number) => ({ access: { hash, client_id: "c", scope: "read", expires_at } });

  // Issue 15 item 12, the rest of the memory store's mutation survivors, by cluster. Each test names the rule it protects.
  const T0 = 1_000_000;

  /** A store on an injected clock, with 1 s expiry slots. */
  const clocked = (start = T0) => {
    const clock = { now: start };
    return { clock, store: memoryStorage({ clock: () => clock.now, sweepInterval: 1000 }) };
  };

  const code = (hash: string, grant_id: string, expires_at: number, user_id = "u") =>
    ({ hash, grant_id, client_id: "c", user_id, redirect_uri: "https://a.example/cb", scope: "read", expires_at });

  /** An access and refresh token of one grant, for `user_id`. */
  const pair = (n: string, grant_id: string, expires_at: number, user_id = "u", refresh_expires = expires_at) => ({
    access: { hash: `at-${n}`, client_id: "c", user_id, scope: "read", grant_id, expires_at },
    refresh: { hash: `rt-${n}`, client_id: "c", user_id, scope: "read", grant_id, expires_at: refresh_expires },
  });

  test("a sweep removes exactly the expired records, whatever order their expiry slots were created in", async () => {
    const now = 1_000_000;
    const store = memoryStorage({ clock: () => now, sweepInterval: 1000 });
    // 40 slots created in a scrambled order (17 is coprime to 40), two records each.
    const expiries: number[] = [];
    for (let k = 0; k < 40; k++) {
      const slot = (k * 17) % 40;
      for (const j of [0, 1]) {
        const expires_at = now + 1000 + slot * 1000 + j * 10;
        expiries.push(expires_at);
        await store.saveTokens(token(`at-${slot}-${j}`, expires_at), now);
      }
    }
    for (const at of [now + 10_500, now + 25_500, now + 60_000]) {
      const expected = expiries.filter((e) => e < Math.floor(at / 1000) * 1000).length;
      const before = store.size().access;
      const purged = await store.purgeExpired(at);
      expect(before - store.size().access).toBe(purged);
      expect(expiries.length - store.size().access).toBe(expected);
    }
    expect(store.size().access).toBe(0);
  });

  test("a slot created in front of a half-visited head slot is swept, and the rest of the head slot too", async () => {
    let now = 1_000_000;
    const store = memoryStorage({ clock: () => now, sweepInterval: 1000 });
    for (let i = 0; i < 2000; i++) await store.saveTokens(token(`old-${i}`, now + 5500), now);
    now += 20_000;
    // This write sweeps one slice (512 records) of the 2000 due: the head slot is half visited.
    await store.saveTokens(token("live", now + 100_000), now);
    const left = store.size().access;
    expect(left).toBeGreaterThan(1);
    expect(left).toBeLessThan(2001);
    // A record already expired, in a slot (1002) before the half-visited one (1005).
    await store.saveTokens(token("past", now - 18_000), now);
    const purged = await store.purgeExpired(now);
    expect(store.size().access).toBe(1);
    expect(await store.findAccessToken("live", now)).not.toBeNull();
    expect(purged).toBeGreaterThan(0);
  });

  test("after more than 1024 slots are swept, later slots are still swept and live records kept", async () => {
    let now = 1_000_000;
    const store = memoryStorage({ clock: () => now, sweepInterval: 1000 });
    for (let round = 0; round < 3; round++) {
      for (let s = 0; s < 1500; s++) await store.saveTokens(token(`r${round}-${s}`, now + 1000 + s * 1000), now);
      await store.saveTokens(token(`keep-${round}`, now + 10_000_000), now);
      now += 1_600_000;
      expect(await store.purgeExpired(now)).toBe(1500);
      expect(store.size().access).toBe(round + 1);
      for (let r = 0; r <= round; r++) expect(await store.findAccessToken(`keep-${r}`, now)).not.toBeNull();
    }
  });

  test("a mark set again after it expired survives the sweep of its first expiry, and is counted once", async () => {
    let now = 1_000_000;
    const store = memoryStorage({ clock: () => now, sweepInterval: 1000 });
    expect(await store.markOnce("k", now + 1000, now)).toBe(true);
    now += 1500; // expired, but its expiry slot (1001 s) has not ended: no sweep has visited it yet
    expect(await store.markOnce("k", now + 100_000, now)).toBe(true);
    expect(store.size().marks).toBe(1);
    // The queued first expiry is due; it must not delete the newer mark (the sweep re-checks which mark it holds).
    now += 1000;
    expect(await store.purgeExpired(now)).toBe(0);
    expect(await store.isMarked("k", now)).toBe(true);
    expect(await store.markOnce("k", now + 200_000, now)).toBe(false);
    expect(store.size().marks).toBe(1);
    // Once the newer mark's own expiry is due, the sweep deletes it.
    now += 200_000;
    expect(await store.purgeExpired(now)).toBe(1);
    expect(store.size().marks).toBe(0);
  });

  test("a token whose hash is stored again after a revocation survives the sweep of the first one's expiry", async () => {
    let now = 1_000_000;
    const store = memoryStorage({ clock: () => now, sweepInterval: 1000 });
    const refresh = (grant_id: string, expires_at: number) => ({ hash: "rt", grant_id, client_id: "c", scope: "read", expires_at });
    await store.saveTokens({ ...token("at", now + 1000), refresh: refresh("g1", now + 1000) }, now);
    await store.revokeAccessToken("at");
    await store.revokeGrant("g1");
    await store.saveTokens({ ...token("at", now + 100_000), refresh: refresh("g2", now + 100_000) }, now);
    now += 2500; // the first records' slot (1001 s) has ended
    await store.purgeExpired(now);
    expect(await store.findAccessToken("at", now)).not.toBeNull();
    expect(await store.findRefreshToken("rt", now)).not.toBeNull();
    now += 200_000;
    await store.purgeExpired(now);
    expect(store.size()).toMatchObject({ access: 0, refresh: 0 });
  });

  describe("expiry slots: every due slot is swept, whenever and in whatever order it was created", () => {
    test("a record saved already expired, into a slot the sweep has passed or one before it, is still swept", async () => {
      const { clock, store } = clocked();
      await store.saveTokens(token("a", T0 + 5000), T0); // slot 1005
      await store.saveTokens(token("b", T0 + 10_000), T0); // slot 1010
      clock.now += 20_000;
      await store.purgeExpired(clock.now);
      expect(store.size().access).toBe(0);
      // The slot of "a" again (its bucket is gone), then a slot before both swept ones.
      await store.saveTokens(token("c", T0 + 5500), clock.now);
      expect(store.size().access).toBe(1);
      await store.purgeExpired(clock.now);
      expect(store.size().access).toBe(0);
      await store.saveTokens(token("d", T0 + 1500), clock.now);
      await store.purgeExpired(clock.now);
      expect(store.size().access).toBe(0);
    });

    test("slots created while a later slot is half visited go behind it, in order with the rest", async () => {
      const { clock, store } = clocked();
      await store.saveTokens(token("first", T0 + 2500), T0); // slot 1002: swept whole by the first write below
      for (let i = 0; i < 2000; i++) await store.saveTokens(token(`old-${i}`, T0 + 5500), T0); // slot 1005
      await store.saveTokens(token("live", T0 + 100_000), T0); // slot 1100
      clock.now += 20_000;
      // From here every write sweeps one slice of 512: slot 1002, then 1005 stays half visited for three writes.
      await store.saveTokens(token("w", clock.now + 100_000), clock.now);
      await store.saveTokens(token("mid", T0 + 10_500), clock.now); // slot 1010, between 1005 and 1100
      await store.saveTokens(token("past", T0 + 3500), clock.now); // slot 1003, between the swept 1002 and 1005
      expect(store.size().access).toBeGreaterThan(3);
      await store.purgeExpired(clock.now);
      expect(store.size().access).toBe(2);
      expect(await store.findAccessToken("live", clock.now)).not.toBeNull();
    });
  });

  describe("sweep budget: a write sweeps one slice while a backlog lasts, then waits an interval", () => {
    test("each write removes one full slice of 512 due records, across slot boundaries, until none are due", async () => {
      const { clock, store } = clocked();
      for (let i = 0; i < 700; i++) await store.saveTokens(token(`a-${i}`, T0 + 5500), T0); // slot 1005
      for (let i = 0; i < 400; i++) await store.saveTokens(token(`b-${i}`, T0 + 6500), T0); // slot 1006
      clock.now += 20_000;
      const removed: number[] = [];
      for (let w = 0; w < 3; w++) {
        const before = store.size().access;
        await store.saveTokens(token(`live-${w}`, clock.now + 100_000), clock.now);
        removed.push(before + 1 - store.size().access);
      }
      expect(removed).toEqual([512, 512, 76]);
    });

    test("purgeExpired removes up to 8 slices before it first yields, more than a write does", async () => {
      const { clock, store } = clocked();
      for (let i = 0; i < 5000; i++) await store.saveTokens(token(`a-${i}`, T0 + 5500), T0);
      clock.now += 20_000;
      const purging = store.purgeExpired(clock.now); // runs synchronously up to its first yield
      expect(5000 - store.size().access).toBe(4096);
      expect(await purging).toBe(5000);
    });

    test("after a sweep that caught up, writes skip sweeping for one interval, and sweep again when it has passed", async () => {
      const { clock, store } = clocked();
      await store.saveTokens(token("a", T0 + 1200), T0); // slot 1001, due from 1 002 000
      await store.saveTokens(token("b", T0 + 2200), T0); // slot 1002, due from 1 003 000
      clock.now = T0 + 2500; // this write sweeps "a" and waits until T0 + 3500
      await store.saveTokens(token("w1", T0 + 100_000), clock.now);
      expect(store.size().access).toBe(2);
      clock.now = T0 + 3499; // "b" is due, but the interval has not passed
      await store.saveTokens(token("w2", T0 + 100_000), clock.now);
      expect(store.size().access).toBe(3);
      clock.now = T0 + 3500; // exactly one interval later
      await store.saveTokens(token("w3", T0 + 100_000), clock.now);
      expect(store.size().access).toBe(3);
    });

    test("every write verb sweeps: saveCode, redeemCode, rotateRefreshToken and markOnce", async () => {
      const writes: [string, (store: ReturnType<typeof memoryStorage>, now: number) => Promise<unknown>][] = [
        ["saveCode", (store, now) => store.saveCode(code("k", "g", now + 60_000))],
        ["redeemCode", (store, now) => store.redeemCode("nope", pair("x", "g", now + 60_000), now)],
        ["rotateRefreshToken", (store, now) => store.rotateRefreshToken("nope", pair("x", "g", now + 60_000), now)],
        ["markOnce", (store, now) => store.markOnce("m", now + 60_000, now)],
      ];
      for (const [name, write] of writes) {
        const { clock, store } = clocked();
        for (let i = 0; i < 10; i++) await store.saveTokens(token(`a-${i}`, T0 + 1500), T0);
        clock.now += 20_000;
        await write(store, clock.now);
        expect([name, store.size().access]).toEqual([name, 0]);
      }
    });
  });

  describe("codes: records as the contract hands them out, and the per-user cap of pending codes", () => {
    test("a code without a challenge and not yet redeemed has no code_challenge or redeemed_at member", async () => {
      const { store } = clocked();
      await store.saveCode(code("k", "g", T0 + 60_000));
      const found = await store.findCode("k", T0);
      expect(found && Object.keys(found).sort()).toEqual(["client_id", "expires_at", "grant_id", "hash", "redirect_uri", "scope", "user_id"]);
      const redeemed = await store.redeemCode("k", pair("1", "g", T0 + 60_000), T0);
      expect(redeemed && "redeemed_at" in redeemed).toBe(false);
    });

    test("a code saved already redeemed does not count against the cap of pending codes", async () => {
      const { store } = clocked();
      await store.saveCode({ ...code("spent", "g1", T0 + 60_000), redeemed_at: T0 }, 1);
      await store.saveCode(code("pending", "g2", T0 + 90_000), 1);
      expect((await store.findCode("spent", T0))?.redeemed_at).toBe(T0);
      expect(await store.findCode("pending", T0)).not.toBeNull();
    });

    test("over the cap, the pending code that expires first goes, not the one saved first", async () => {
      const { store } = clocked();
      await store.saveCode(code("a", "ga", T0 + 60_000), 2);
      await store.saveCode(code("b", "gb", T0 + 30_000), 2);
      await store.saveCode(code("c", "gc", T0 + 90_000), 2);
      expect([await store.findCode("a", T0) !== null, await store.findCode("b", T0) !== null]).toEqual([true, false]);
    });

    test("over the cap, of pending codes that expire at the same instant the one saved first goes", async () => {
      const { store } = clocked();
      for (const hash of ["a", "b", "c"]) await store.saveCode(code(hash, `g${hash}`, T0 + 60_000), 2);
      expect([await store.findCode("a", T0) !== null, await store.findCode("b", T0) !== null]).toEqual([false, true]);
    });

    test("a code stored again under the same hash survives the sweep of the first one's expiry", async () => {
      const { clock, store } = clocked();
      await store.saveCode(code("k", "g", T0 + 1000));
      await store.saveCode(code("k", "g", T0 + 100_000));
      clock.now += 2500; // the first code's slot (1001) has ended
      expect(await store.purgeExpired(clock.now)).toBe(0);
      expect(await store.findCode("k", clock.now)).not.toBeNull();
    });
  });

  describe("refresh tokens: expiry at the exact instant, and rotation", () => {
    const E = T0 + 60_000;

    test("a refresh token is found until the instant it expires, and cannot be rotated from that instant on", async () => {
      const { store } = clocked();
      await store.saveTokens(pair("1", "g", E), T0);
      expect(await store.findRefreshToken("rt-1", E - 1)).not.toBeNull();
      expect(await store.findRefreshToken("rt-1", E)).toBeNull();
      expect(await store.findRefreshToken("rt-1", E + 1)).toBeNull();
      expect(await store.rotateRefreshToken("rt-1", pair("2", "g", E + 60_000), E)).toBeNull();
      expect(await store.rotateRefreshToken("rt-1", pair("3", "g", E + 60_000), E + 1)).toBeNull();
    });

    test("rotation hands back the token as it was before it was rotated", async () => {
      const { store } = clocked();
      await store.saveTokens(pair("1", "g", E), T0);
      // (Its rotated_at may or may not show this call: the contract allows both.)
      expect(await store.rotateRefreshToken("rt-1", pair("2", "g", E), T0 + 1000))
        .toMatchObject({ hash: "rt-1", grant_id: "g", client_id: "c", user_id: "u", scope: "read", expires_at: E });
    });

    test("a rotation that issues no new refresh token leaves no successor, so a grace retry is refused", async () => {
      const { store } = clocked();
      await store.saveTokens(pair("1", "g", E), T0);
      const { access } = pair("2", "g", E);
      expect(await store.rotateRefreshToken("rt-1", { access }, T0 + 1000)).not.toBeNull();
      expect(await store.findAccessToken("at-2", T0 + 1000)).not.toBeNull();
      expect(await store.rotateRefreshToken("rt-1", pair("3", "g", E), T0 + 2000, 60_000)).toBeNull();
    });
  });

  describe("grant and client indexes: revocation and listing reach exactly the live members", () => {
    test("a shorter-lived member saved later does not shorten its grant's life", async () => {
      const { clock, store } = clocked();
      await store.saveTokens(pair("1", "g", T0 + 100_000), T0);
      await store.saveTokens({ access: { hash: "at-short", client_id: "c", user_id: "u", scope: "read", grant_id: "g", expires_at: T0 + 5000 } }, T0);
      clock.now += 20_000;
      await store.purgeExpired(clock.now);
      expect((await store.listGrants("u", clock.now)).map((g) => g.grant_id)).toEqual(["g"]);
      await store.revokeGrant("g");
      expect(await store.findRefreshToken("rt-1", clock.now)).toBeNull();
    });

    test("a grant whose life a later member extended is swept once that member has expired, not before", async () => {
      const { clock, store } = clocked();
      await store.saveCode(code("k", "g", T0 + 5000)); // the grant's first expiry: slot 1005
      await store.redeemCode("k", pair("1", "g", T0 + 30_000), T0); // extended to slot 1030
      clock.now = T0 + 20_000;
      await store.purgeExpired(clock.now);
      expect(store.size()).toMatchObject({ codes: 0, grants: 1 });
      clock.now = T0 + 40_000;
      await store.purgeExpired(clock.now);
      expect(store.size()).toMatchObject({ access: 0, refresh: 0, grants: 0 });
    });

    test("revokeClientGrants counts listed grants only, and creates nothing for a client without any", async () => {
      const { store } = clocked();
      await store.saveCode(code("k", "g", T0 + 60_000)); // a grant with only a pending code is not listed
      expect(await store.revokeClientGrants("c")).toBe(0);
      expect(await store.findCode("k", T0)).toBeNull();
      expect(await store.revokeClientGrants("nobody")).toBe(0);
      expect(store.size().grants).toBe(1); // the tombstone of "g" only
    });

    test("a grant swept at expiry leaves the client's and the user's indexes", async () => {
      const { clock, store } = clocked();
      await store.saveTokens(pair("1", "g", T0 + 5000), T0);
      expect((await store.listGrants("u", T0)).length).toBe(1);
      clock.now += 20_000;
      await store.purgeExpired(clock.now);
      expect(store.size().grants).toBe(0);
      // Revoking the client's grants finds none (a stale entry would leave a tombstone behind).
      expect(await store.revokeClientGrants("c")).toBe(0);
      expect(store.size().grants).toBe(0);
      // The same grant id, later issued to another user, is not listed for the first one.
      await store.saveTokens(pair("2", "g", clock.now + 100_000, "v"), clock.now);
      expect(await store.listGrants("u", clock.now)).toEqual([]);
      expect((await store.listGrants("v", clock.now)).map((g) => g.grant_id)).toEqual(["g"]);
    });

    test("revoking a grant or a client again does not reach records stored since under the hashes it held", async () => {
      const { store } = clocked();
      await store.saveCode(code("k", "g1", T0 + 60_000));
      await store.saveTokens(pair("1", "g1", T0 + 60_000), T0);
      await store.revokeGrant("g1");
      await store.saveCode(code("k", "g2", T0 + 60_000));
      await store.saveTokens(pair("1", "g2", T0 + 60_000), T0);
      await store.revokeGrant("g1");
      expect(await store.findCode("k", T0)).not.toBeNull();
      expect(await store.findAccessToken("at-1", T0)).not.toBeNull();
      expect(await store.findRefreshToken("rt-1", T0)).not.toBeNull();
      // A client's grantless tokens: revoked with the client, then a hash stored again for another client.
      await store.saveTokens(token("own", T0 + 60_000), T0);
      await store.revokeClientGrants("c");
      await store.saveTokens({ access: { hash: "own", client_id: "d", scope: "read", expires_at: T0 + 60_000 } }, T0);
      await store.revokeClientGrants("c");
      expect(await store.findAccessToken("own", T0)).not.toBeNull();
    });

    test("a token revoked on its own leaves its grant's and its client's index", async () => {
      const { store } = clocked();
      await store.saveTokens(pair("1", "g1", T0 + 60_000), T0);
      await store.revokeAccessToken("at-1");
      await store.saveTokens(pair("1", "g2", T0 + 60_000), T0);
      await store.revokeGrant("g1");
      expect(await store.findAccessToken("at-1", T0)).not.toBeNull();
      await store.saveTokens(token("own", T0 + 60_000), T0);
      await store.revokeAccessToken("own");
      await store.saveTokens({ access: { hash: "own", client_id: "d", scope: "read", expires_at: T0 + 60_000 } }, T0);
      await store.revokeClientGrants("c");
      expect(await store.findAccessToken("own", T0)).not.toBeNull();
    });

    test("a code stored again under its hash, in another grant, leaves the first grant's index: revoking that grant spares it", async () => {
      const { store } = clocked();
      await store.saveCode(code("k", "g1", T0 + 60_000));
      await store.saveCode(code("k", "g2", T0 + 60_000));
      await store.revokeGrant("g1");
      expect(await store.findCode("k", T0)).not.toBeNull();
      await store.revokeGrant("g2");
      expect(await store.findCode("k", T0)).toBeNull();
    });

    test("a code stored again under its hash, for another client or already redeemed, leaves its pending entry (the cap once threw)", async () => {
      const { store } = clocked();
      await store.saveCode(code("h", "g1", T0 + 60_000), 1);
      await store.saveCode({ ...code("h", "g2", T0 + 60_000), client_id: "d" }, 1);
      await store.saveCode(code("k", "g3", T0 + 60_000), 1);
      await store.saveCode(code("k2", "g4", T0 + 60_000), 1);
      expect([await store.findCode("h", T0) !== null, await store.findCode("k", T0), await store.findCode("k2", T0) !== null])
        .toEqual([true, null, true]);
      await store.saveCode(code("r", "g5", T0 + 60_000, "w"), 1);
      await store.saveCode({ ...code("r", "g5", T0 + 60_000, "w"), redeemed_at: T0 }, 1);
      await store.saveCode(code("s", "g6", T0 + 60_000, "w"), 1);
      expect([(await store.findCode("r", T0))?.redeemed_at, await store.findCode("s", T0) !== null]).toEqual([T0, true]);
    });
  });

  describe("a large store", () => {
    test("past its indexes' split size, a grant without a user and a rotation without a successor touch no index under `undefined`", async () => {
      const { store } = clocked();
      const E = T0 + 600_000;
      // 17,000 users' grants: the refresh token and user indexes grow past the size at which they split (16,384 on
      // V8, 4,096 on JavaScriptCore), and a split index cannot even look up an `undefined` key.
      for (let i = 0; i < 17_000; i++) await store.saveTokens(pair(`${i}`, `g-${i}`, E, `user-${i}`), T0);
      // A client_credentials grant with a refresh token: no user.
      const cc = (n: string) => ({
        access: { hash: `cc-at-${n}`, client_id: "c", scope: "read", grant_id: "cc", expires_at: E },
        refresh: { hash: `cc-rt-${n}`, client_id: "c", scope: "read", grant_id: "cc", expires_at: E },
      });
      await store.saveTokens(cc("1"), T0);
      expect(await store.rotateRefreshToken("cc-rt-1", { access: cc("2").access }, T0 + 1000)).not.toBeNull();
      expect(await store.rotateRefreshToken("cc-rt-1", cc("3"), T0 + 2000, 60_000)).toBeNull();
      await store.revokeGrant("cc");
      expect(await store.findAccessToken("cc-at-2", T0 + 2000)).toBeNull();
      expect((await store.listGrants("user-16999", T0 + 2000)).map((g) => g.grant_id)).toEqual(["g-16999"]);
    });
  });

  describe("marks", () => {
    test("a mark set again after it expired is counted once, even while the marks index is settling", async () => {
      const { clock, store } = clocked();
      await store.markOnce("k", T0 + 1000, T0);
      // Enough marks to start moving the first ones, "k" among them, into the settled part of the index.
      for (let i = 0; i < 4200; i++) await store.markOnce(`m-${i}`, T0 + 1_000_000, T0);
      clock.now = T0 + 1500; // "k" has expired; its slot (1001) has not ended, so no sweep removed it
      expect(await store.markOnce("k", T0 + 100_000, clock.now)).toBe(true);
      expect(store.size().marks).toBe(4201);
    });
  });
});
