// The grace window's sealed successors, as a store keeps them: a rotation keeps one with the rotated token, and
// the next rotation drops its predecessor's, so that only the live token's predecessor holds one (an old stolen
// token, with a copy of the store, opens nothing). Not visible through the Storage verbs: each store test reads
// its database with `sealOf`.
import { expect } from "vitest";
import type { IssuedTokens, Storage } from "../../mod.ts";

/** An access and a refresh token of `grant`, numbered `n`. */
export const pair = (n: string, grant: string, now: number): IssuedTokens => ({
  access: { hash: `seal-at-${n}`, client_id: "c", user_id: "u", scope: "read", grant_id: grant, expires_at: now + 60_000 },
  refresh: { hash: `seal-rt-${n}`, client_id: "c", user_id: "u", scope: "read", grant_id: grant, expires_at: now + 120_000 },
});

/** Rotates a chain twice with seals, and checks which records keep one, read by `sealOf(hash)`. */
export async function sealsFollowTheChain(store: Storage, sealOf: (hash: string) => Promise<string | null>): Promise<void> {
  const now = Date.now();
  const id = `${now}-${Math.random().toString(36).slice(2)}`;
  const [first, second, third] = ["1", "2", "3"].map((n) => pair(`${id}-${n}`, `seal-g-${id}`, now)) as [IssuedTokens, IssuedTokens, IssuedTokens];
  await store.saveTokens(first, now);
  expect(await store.rotateRefreshToken(first.refresh!.hash, { ...second, sealed: "seal-2" }, now, 10_000)).not.toBeNull();
  expect(await sealOf(first.refresh!.hash)).toBe("seal-2");
  expect(await store.rotateRefreshToken(second.refresh!.hash, { ...third, sealed: "seal-3" }, now + 1, 10_000)).not.toBeNull();
  expect([await sealOf(first.refresh!.hash), await sealOf(second.refresh!.hash), await sealOf(third.refresh!.hash)],
    "only the live token's predecessor keeps a seal").toEqual([null, "seal-3", null]);
}
