/**
 * Throttling of failed client authentications: after too many failures a key must wait (429, `Retry-After`).
 *
 * Keys are per address and per client_id at that address. There is deliberately no lock per client_id alone:
 * that would let anyone lock a real client out by sending wrong secrets under its name.
 *
 * @module
 */
import { sha256 } from "./sha256.ts";

/**
 * Where throttling state lives; swap in a shared store when several processes serve one issuer. Keys reach it
 * already hashed ({@link throttleKey}): a fixed 40 characters however long the client_id or username was.
 */
export interface Throttle {
  /** Milliseconds until `key` may try again; 0 when it may try now. */
  retryAfter(key: string, now: number): number | Promise<number>;
  /** Records one failed attempt under `key`. */
  fail(key: string, now: number): void | Promise<void>;
  /**
   * Checks and records an attempt in one atomic step: returns the wait in ms (and records nothing) while `key`
   * is blocked, else counts the attempt as a failure and returns 0. A slow check (a password hash) reserves
   * first, so concurrent guesses cannot all pass the check before any failure is recorded. Without it the
   * throttle falls back to `retryAfter` then `fail`, which is not atomic.
   */
  reserve?(key: string, now: number): number | Promise<number>;
  /** Gives back an attempt reserved by `reserve` that turned out to be a success. */
  release?(key: string, now: number): void | Promise<void>;
}

/**
 * A throttle key of fixed size: `prefix:` and a hash of the parts, so a client_id or username of any length
 * costs the throttle the same few bytes (an attacker cannot grow its memory by sending long ones).
 */
export function throttleKey(prefix: string, ...parts: string[]): string {
  return `${prefix}:${sha256(JSON.stringify(parts)).slice(0, 32)}`;
}

/**
 * Throttles that can say cheaply that they hold no failures at all (the in-memory one), so that a request
 * with the right credentials, nearly every request, is not made to hash its throttle keys for nothing.
 */
const IDLE = new WeakMap<Throttle, () => boolean>();

/** Whether `throttle` is known to hold no failure (then every `retryAfter` is 0); false when it cannot tell. */
export function throttleIdle(throttle: Throttle): boolean {
  return IDLE.get(throttle)?.() ?? false;
}

/** Options of {@link memoryThrottle}. */
export interface MemoryThrottleOptions {
  /** Failures within `windowSeconds` that trigger a block. Default 10. */
  maxFailures?: number;
  /** Default 60. */
  windowSeconds?: number;
  /** How long the first block lasts; each later one doubles, up to an hour. Default 30. */
  blockSeconds?: number;
  /**
   * Most keys remembered; the oldest are forgotten first, half of them at a time (a key seen again is kept).
   * Default 100 000.
   */
  maxKeys?: number;
}

interface Entry {
  failures: number;
  /** The block state before the last reservation blocked the key, so a release can undo it. */
  undo?: { strikes: number; blockedUntil: number } | undefined;
  windowStart: number;
  lastFailure: number;
  blockedUntil: number;
  /** Blocks so far; each one lasts twice as long as the one before. */
  strikes: number;
}

/**
 * The in-memory {@link Throttle}: `maxFailures` within a window trigger a block; after that, every further
 * failure blocks again for twice as long, until the key has been quiet for a window plus its last block.
 *
 * @example
 * ```ts
 * createAuthorizationServer({ ...options, throttle: memoryThrottle({ maxFailures: 5 }) });
 * ```
 */
export function memoryThrottle(options: MemoryThrottleOptions = {}): Throttle {
  const max = options.maxFailures ?? 10;
  const window = (options.windowSeconds ?? 60) * 1000;
  const baseBlock = (options.blockSeconds ?? 30) * 1000;
  const maxKeys = options.maxKeys ?? 100_000;
  // Two generations instead of one map evicted key by key: at the cap, the older half is dropped at once. (A
  // Map emptied from the front one key at a time keeps its deleted slots, and `keys().next()` then scans them
  // all, for every new key during a flood of wrong secrets from many addresses; here it is O(1).)
  const half = Math.max(1, Math.floor(maxKeys / 2));
  let current = new Map<string, Entry>();
  let previous = new Map<string, Entry>();
  const insert = (key: string, entry: Entry): void => {
    if (current.size >= half) {
      previous = current;
      current = new Map();
    }
    current.set(key, entry);
  };
  /** The entry of a key; one found in the older generation moves to the newer, so a key in use is kept. */
  const find = (key: string): Entry | undefined => {
    const entry = current.get(key);
    if (entry !== undefined || previous.size === 0) return entry;
    const old = previous.get(key);
    if (old !== undefined) {
      previous.delete(key);
      insert(key, old);
    }
    return old;
  };
  const forget = (key: string): void => {
    if (!current.delete(key)) previous.delete(key);
  };
  const blockFor = (strikes: number) => Math.min(baseBlock * 2 ** (strikes - 1), 3_600_000);
  // Callers hash their keys (throttleKey); a caller that does not still gets entries of bounded size.
  const short = (key: string) => (key.length > 64 ? throttleKey("long", key) : key);
  const throttle: Throttle = {
    retryAfter(key, now) {
      if (current.size === 0 && previous.size === 0) return 0; // the usual case, answered without hashing the key
      const entry = find(short(key));
      return entry && entry.blockedUntil > now ? entry.blockedUntil - now : 0;
    },
    fail(key, now) {
      record(short(key), now);
    },
    reserve(key, now) {
      const k = short(key);
      const entry = find(k);
      if (entry && entry.blockedUntil > now) return entry.blockedUntil - now;
      record(k, now);
      return 0;
    },
    release(key) {
      const k = short(key);
      const entry = find(k);
      if (!entry) return;
      entry.failures = Math.max(0, entry.failures - 1);
      if (entry.undo) {
        entry.strikes = entry.undo.strikes;
        entry.blockedUntil = entry.undo.blockedUntil;
        entry.undo = undefined;
      }
      if (entry.failures === 0 && entry.strikes === 0) forget(k);
    },
  };
  IDLE.set(throttle, () => current.size === 0 && previous.size === 0);
  return throttle;

  function record(key: string, now: number): void {
    let entry = find(key);
    const quiet = entry && now - entry.lastFailure > window + (entry.strikes ? blockFor(entry.strikes) : 0);
    if (!entry || quiet) {
      entry = { failures: 0, windowStart: now, lastFailure: now, blockedUntil: 0, strikes: 0 };
      forget(key);
      insert(key, entry);
    }
    if (now - entry.windowStart > window && entry.strikes === 0) {
      entry.failures = 0;
      entry.windowStart = now;
    }
    entry.lastFailure = now;
    entry.failures++;
    // Once blocked, a single further failure blocks again: the attacker gets one guess per block.
    entry.undo = undefined;
    if (entry.failures >= max || entry.strikes > 0) {
      entry.undo = { strikes: entry.strikes, blockedUntil: entry.blockedUntil };
      entry.strikes++;
      entry.blockedUntil = now + blockFor(entry.strikes);
    }
  }
}
