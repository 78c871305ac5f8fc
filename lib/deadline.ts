/**
 * Deadlines without a timer per call: the storage deadline (every store call) and the body deadline (every
 * request body read) both sit on the token endpoint's hot path.
 *
 * Calls wait in a queue in deadline order (one queue has one timeout, so arrival order is deadline order) and a
 * single timer is armed for the oldest one only. A call that settles in time costs a queue slot and a `then`,
 * not a timer, a `Promise.race` and a `finally` of its own (those made an explicitly passed store markedly dearer
 * than the default one; `test/bench/HISTORY.md`).
 *
 * @module
 */

interface Pending {
  deadline: number;
  name: string;
  settled: boolean;
  reject: (reason: unknown) => void;
}

/** One timeout shared by many calls in flight; a late call is rejected with `timeoutError(name)`. */
export class DeadlineQueue {
  private readonly ms: number;
  private readonly timeoutError: (name: string) => unknown;
  private queue: Pending[] = [];
  private head = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ms: number, timeoutError: (name: string) => unknown) {
    this.ms = ms;
    this.timeoutError = timeoutError;
  }

  /** Settles as `result` does, or rejects once `ms` have passed; a plain value settles at once, unwatched. */
  watch<T>(result: T | PromiseLike<T>, name: string): Promise<T> {
    if (!isThenable(result)) return Promise.resolve(result);
    return new Promise<T>((resolve, reject) => {
      const entry: Pending = { deadline: Date.now() + this.ms, name, settled: false, reject };
      this.queue.push(entry);
      result.then(
        (value) => this.settle(entry, () => resolve(value)),
        (error: unknown) => this.settle(entry, () => reject(error)),
      );
      this.timer ??= unref(setTimeout(this.expire, this.ms));
    });
  }

  private settle(entry: Pending, done: () => void): void {
    if (entry.settled) return; // already rejected by its deadline; a late answer is dropped
    entry.settled = true;
    this.compact();
    done();
  }

  /** Drops settled calls from the front, so that the queue holds about the calls in flight. */
  private compact(): void {
    while (this.head < this.queue.length && this.queue[this.head]!.settled) this.head++;
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const now = Date.now();
    for (let i = this.head; i < this.queue.length; i++) {
      const entry = this.queue[i]!;
      if (entry.settled) continue;
      if (entry.deadline > now) break;
      entry.settled = true;
      entry.reject(this.timeoutError(entry.name));
    }
    this.compact();
    const next = this.queue[this.head];
    // Re-armed only while calls are in flight.
    if (next) this.timer = unref(setTimeout(this.expire, Math.max(0, next.deadline - now)));
  };
}

function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as PromiseLike<T> | null)?.then === "function";
}

/** Where timers have `unref` (Node, Bun), a deadline timer alone does not keep a finished process alive. */
function unref(timer: ReturnType<typeof setTimeout>): ReturnType<typeof setTimeout> {
  (timer as { unref?: () => void }).unref?.();
  return timer;
}
