/**
 * Steady load on a store: every cycle issues codes, tokens with refresh tokens (grants) and once-marks that
 * expire a few cycles later, then purges. What a store holds must level off, not grow with the total issued.
 *
 * @module
 */
import type { Storage } from "../../mod.ts";

export interface SteadyLoad {
  cycles: number;
  perCycle: number;
  /** How long each record lives, in ms. */
  lifetime: number;
  /** Moves time on by one cycle and returns the new "now" (a fake clock, or a real wait). */
  advance(): Promise<number>;
  /** How many records (rows, keys) the store holds now. */
  count(): Promise<number>;
}

/** Runs the load; returns the record count after each cycle's purge, and how many records were issued. */
export async function steadyLoad(store: Storage, load: SteadyLoad): Promise<{ counts: number[]; issued: number }> {
  const counts: number[] = [];
  let issued = 0;
  for (let cycle = 0; cycle < load.cycles; cycle++) {
    const now = await load.advance();
    for (let i = 0; i < load.perCycle; i++) {
      const id = `${cycle}-${i}-${Math.random().toString(36).slice(2)}`;
      const expires = now + load.lifetime;
      await store.saveCode({ hash: `code-${id}`, grant_id: `g-${id}`, client_id: "c", user_id: `u-${i}`, redirect_uri: "https://a.example/cb", scope: "read", expires_at: expires });
      await store.saveTokens({
        access: { hash: `at-${id}`, client_id: "c", user_id: `u-${i}`, scope: "read", grant_id: `t-${id}`, expires_at: expires },
        refresh: { hash: `rt-${id}`, client_id: "c", user_id: `u-${i}`, scope: "read", grant_id: `t-${id}`, expires_at: expires },
      }, now);
      await store.saveTokens({ access: { hash: `cc-${id}`, client_id: "c", scope: "read", expires_at: expires } }, now);
      await store.markOnce(`once-${id}`, expires, now);
      issued += 6;
    }
    await store.purgeExpired(now);
    counts.push(await load.count());
  }
  return { counts, issued };
}
