// Edges of the memory store's expiry sweep (issue 15 item 12): slots added out of order, a slot added in front
// of a half-visited head slot, and the compaction of the slot list after more than 1024 slots.
import { expect, test } from "vitest";
import { memoryStorage } from "../../mod.ts";

const token = (hash: string, expires_at: number) => ({ access: { hash, client_id: "c", scope: "read", expires_at } });

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
