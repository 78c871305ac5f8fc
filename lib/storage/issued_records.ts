/**
 * A per-process copy of the codes and refresh tokens this process stored, so that redeeming a code or rotating a
 * refresh token on the instance that issued it takes one round trip to the store (the deciding statement or
 * script) instead of two (a read, then that statement).
 *
 * This is not a cache with a staleness bound. It serves only reads made with `{ beforeDecision: true }`, whose
 * callers act on nothing but the fields that never change once stored (client, redirect URI, challenge, bound
 * key, scope, audiences, grant, expiry), spend the record with `redeemCode` or `rotateRefreshToken`, and read the
 * store again when that fails (see {@link ReadOptions}). The store's atomic verb decides whether the record is
 * still live, unspent and of a grant not revoked, on this instance or any other, so the answer is the one a fresh
 * read would have given. Every other read goes to the store.
 *
 * A copy is dropped when it is spent through this wrapper (whatever the outcome), when it expires, and, oldest
 * first, beyond `maxEntries` of each kind.
 *
 * @module
 */
import { forwarding } from "./stale_reads.ts";
import type { CodeRecord, IssuedTokens, ReadOptions, RefreshTokenRecord, Storage } from "./types.ts";
import { OAuthError } from "../errors.ts";
import { makeRoom } from "../evict.ts";

/** Options of {@link issuedRecords}. */
export interface IssuedRecordsOptions {
  /** Codes, and refresh tokens, kept at most each; at the cap the oldest quarter goes. Default 10 000; 0 disables. */
  maxEntries?: number;
}

/** Records by hash in the order stored, at most `max`, each dropped once it expires. */
class Kept<V extends { hash: string; expires_at: number }> {
  private readonly records = new Map<string, V>();
  private readonly max: number;
  constructor(max: number) {
    this.max = max;
  }

  keep(record: V): void {
    this.records.delete(record.hash);
    makeRoom(this.records, this.max);
    this.records.set(record.hash, Object.freeze({ ...record }));
  }

  /** The copy of `hash` while it is live at `now`. */
  get(hash: string, now: number): V | undefined {
    const record = this.records.get(hash);
    if (record !== undefined && record.expires_at <= now) this.records.delete(hash);
    return record !== undefined && record.expires_at > now ? record : undefined;
  }

  drop(hash: string): void {
    this.records.delete(hash);
  }
}

/**
 * Wraps a store so that `findCode` and `findRefreshToken` with `{ beforeDecision: true }` answer from the codes
 * and refresh tokens stored through it (see the module for why that is exact). For a durable store shared by
 * instances; a memory store gains nothing.
 */
export function issuedRecords(storage: Storage, options: IssuedRecordsOptions = {}): Storage {
  const max = Math.floor(options.maxEntries ?? 10_000);
  if (!(max > 0)) return storage;
  const codes = new Kept<CodeRecord>(max);
  const refresh = new Kept<RefreshTokenRecord>(max);
  // Kept once the store answered: a write that failed leaves no copy. One the store declined (a revoked grant's)
  // is harmless: a copy is only ever spent through the store's own check.
  const keepRefresh = (tokens: IssuedTokens) => tokens.refresh && refresh.keep(tokens.refresh);

  const overrides: Partial<Storage> = {
    async saveCode(code, limit) {
      await storage.saveCode(code, limit);
      codes.keep(code);
    },
    findCode(hash, now, read?: ReadOptions) {
      const kept = read?.beforeDecision ? codes.get(hash, now) : undefined;
      return kept !== undefined ? Promise.resolve(kept) : storage.findCode(hash, now, read);
    },
    async redeemCode(hash, tokens, now) {
      codes.drop(hash);
      const won = await storage.redeemCode(hash, tokens, now);
      if (won) keepRefresh(tokens);
      return won;
    },
    async saveTokens(tokens, now) {
      await storage.saveTokens(tokens, now);
      keepRefresh(tokens);
    },
    findRefreshToken(hash, now, read?: ReadOptions) {
      const kept = read?.beforeDecision ? refresh.get(hash, now) : undefined;
      return kept !== undefined ? Promise.resolve(kept) : storage.findRefreshToken(hash, now, read);
    },
    async rotateRefreshToken(hash, next, now, graceMs) {
      refresh.drop(hash);
      const old = await storage.rotateRefreshToken(hash, next, now, graceMs);
      // A grace retry stores no refresh token of its own: the answer is the successor already issued.
      if (old && old.rotated_at === undefined) keepRefresh(next);
      return old;
    },
    async redeemDeviceAuthorization(hash, tokens, now) {
      const won = await storage.redeemDeviceAuthorization(hash, tokens, now);
      if (won) keepRefresh(tokens);
      return won;
    },
  };
  return Object.assign(forwarding(storage), overrides) as unknown as Storage;
}

/**
 * How a grant spends a code or refresh token with a read that may be a copy: `judge` runs on the answer of
 * `read({ beforeDecision: true })` and ends by spending the record through the store's atomic verb. While that
 * record is unspent it may be a copy, so the run is `tentative`: when it answers null (the verb failed) or throws a
 * 4xx, `judge` runs again on a fresh `read()`, whose answer stands. A spent record or none is the store's own
 * answer (a copy is neither), so it is judged once. A tentative run must store and revoke nothing unless it wins.
 */
export async function judgeFromCopy<R, T>(
  read: (options?: ReadOptions) => Promise<R | null>,
  spent: (record: R) => boolean,
  judge: (record: R | null, tentative: boolean) => Promise<T | null>,
): Promise<T> {
  const kept = await read({ beforeDecision: true });
  if (kept !== null && !spent(kept)) {
    const answer = await judge(kept, true).catch((error: unknown) => {
      if (error instanceof OAuthError && error.status < 500) return null;
      throw error;
    });
    if (answer !== null) return answer;
    return (await judge(await read(), false))!;
  }
  return (await judge(kept, false))!;
}
