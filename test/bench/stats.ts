/**
 * Latency samples and their summary, shared by the in-process runner and the orchestrator.
 *
 * @module
 */

/** A summary of one measured row. */
export interface Measurement {
  /** Operations (or requests) per second. */
  rate: number;
  /** Median latency, ms. */
  p50: number;
  /** 99th percentile latency, ms. */
  p99: number;
  /** Worst latency, ms (HTTP rows): the pauses a percentile hides. */
  max?: number;
  /** Operations counted. */
  count: number;
  /** Failed operations (a non-2xx answer or an exception); a row with failures is not a valid result. */
  errors: number;
  /** Seconds measured. */
  seconds: number;
  /** HTTP rows: CPU time of the server process per request, in µs (Linux, from /proc). */
  server_cpu_us?: number;
  /** HTTP rows: CPU time of the load generator per request, in µs. */
  client_cpu_us?: number;
  /** Stored-token rows: CPU seconds of the server per second of the run (1 = one core busy throughout). */
  server_busy?: number;
  /** In-process rows: the rate of each round, in round order (the rows of one round ran back to back). */
  round_rates?: number[];
}

/** Latencies in ms, grown in place so that recording costs no allocation per sample. */
export class Samples {
  #values = new Float64Array(1 << 16);
  #length = 0;
  /** Sum of every sample, ms. */
  total = 0;

  get length(): number {
    return this.#length;
  }

  add(ms: number): void {
    if (this.#length === this.#values.length) {
      const grown = new Float64Array(this.#values.length * 2);
      grown.set(this.#values);
      this.#values = grown;
    }
    this.#values[this.#length++] = ms;
    this.total += ms;
  }

  forEach(f: (ms: number) => void): void {
    for (let i = 0; i < this.#length; i++) f(this.#values[i]!);
  }

  /** The `p`-th percentile (0-100), nearest rank. */
  percentile(p: number): number {
    if (this.#length === 0) return NaN;
    const sorted = this.#values.slice(0, this.#length).sort();
    const rank = Math.min(this.#length - 1, Math.max(0, Math.ceil((p / 100) * this.#length) - 1));
    return sorted[rank]!;
  }
}

/** Rounds for display and JSON: 3 significant decimals for latencies, whole numbers for rates. */
export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
