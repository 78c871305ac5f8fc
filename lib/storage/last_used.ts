/**
 * When a store writes a client's `last_used_at`: at most once a minute per client and instance (types.ts,
 * `saveTokens`, allows that lag), so that the write, and on Redis the read that decides it, stays off the hot
 * path the rest of the time.
 *
 * @module
 */

/** Clients' `last_used_at` is written at most this often (types.ts: "at least 60 000 ms older"). */
export const LAST_USED_GRANULARITY = 60_000;

/** When this instance last wrote each client's `last_used_at`. */
export class LastUsedWrites {
  private readonly written = new Map<string, number>();

  /** Whether the client's `last_used_at` is due a write at `now`; when it is, it counts as written from `now`. */
  due(clientId: string, now: number): boolean {
    const written = this.written.get(clientId);
    if (written !== undefined && now - written < LAST_USED_GRANULARITY && now >= written) return false;
    this.written.set(clientId, now);
    if (this.written.size > 10_000) this.written.clear();
    return true;
  }

  /** Forgets the client (its record was replaced or deleted): its next token writes `last_used_at` again. */
  forget(clientId: string): void {
    this.written.delete(clientId);
  }
}
