/**
 * The reference server's Prometheus metrics, in the text exposition format (version 0.0.4). Labels take only
 * values from fixed lists (endpoint names, status codes, grant types), so a hostile client cannot grow them.
 *
 * @module
 */

/** Upper bounds of the latency histogram, in seconds. */
export const LATENCY_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** The reasons of `client.document_refused` (anything else is counted as `other`). */
const DOCUMENT_REASONS: readonly string[] = ["status", "too_large", "timeout", "network", "redirect", "private_host", "refused", "invalid", "throttled"];

/** Counters and one histogram, rendered by {@link Metrics.render}. */
export interface Metrics {
  /** One finished request. */
  request(endpoint: string, status: number, seconds: number): void;
  tokenIssued(grantType: string): void;
  throttled(endpoint: string): void;
  storeError(): void;
  /** A client metadata document refused or unreachable, by its one-word reason (audit event `client.document_refused`). */
  documentRefused(reason: string): void;
  /** The `/metrics` body. */
  render(): string;
}

/** A fresh set of metrics. */
export function createMetrics(): Metrics {
  const requests = new Map<string, number>();
  const tokens = new Map<string, number>();
  const throttled = new Map<string, number>();
  const histograms = new Map<string, { buckets: number[]; sum: number; count: number }>();
  const refusedDocuments = new Map<string, number>();
  let storeErrors = 0;
  const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const label = (value: string) => value.replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));

  return {
    request(endpoint, status, seconds) {
      bump(requests, `endpoint="${label(endpoint)}",status="${status}"`);
      let h = histograms.get(endpoint);
      if (!h) histograms.set(endpoint, h = { buckets: LATENCY_BUCKETS.map(() => 0), sum: 0, count: 0 });
      LATENCY_BUCKETS.forEach((bound, i) => {
        if (seconds <= bound) h.buckets[i]!++;
      });
      h.sum += seconds;
      h.count++;
    },
    tokenIssued: (grantType) => void bump(tokens, `grant_type="${label(grantType)}"`),
    throttled: (endpoint) => void bump(throttled, `endpoint="${label(endpoint)}"`),
    storeError: () => void storeErrors++,
    // A closed list of reasons: a label value never comes from a stranger.
    documentRefused: (reason) => void bump(refusedDocuments, `reason="${DOCUMENT_REASONS.includes(reason) ? reason : "other"}"`),
    render() {
      const lines: string[] = [];
      const counter = (name: string, help: string, values: Map<string, number>) => {
        lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
        for (const [labels, value] of values) lines.push(`${name}{${labels}} ${value}`);
      };
      counter("oauth2_requests_total", "HTTP requests by endpoint and status.", requests);
      lines.push("# HELP oauth2_request_duration_seconds Request latency by endpoint.", "# TYPE oauth2_request_duration_seconds histogram");
      for (const [endpoint, h] of histograms) {
        const l = `endpoint="${label(endpoint)}"`;
        LATENCY_BUCKETS.forEach((bound, i) => lines.push(`oauth2_request_duration_seconds_bucket{${l},le="${bound}"} ${h.buckets[i]}`));
        lines.push(`oauth2_request_duration_seconds_bucket{${l},le="+Inf"} ${h.count}`);
        lines.push(`oauth2_request_duration_seconds_sum{${l}} ${h.sum}`, `oauth2_request_duration_seconds_count{${l}} ${h.count}`);
      }
      counter("oauth2_tokens_issued_total", "Access tokens issued by grant type.", tokens);
      counter("oauth2_throttled_requests_total", "Requests refused with 429 (throttling) by endpoint.", throttled);
      counter("oauth2_client_metadata_documents_refused_total", "Client metadata documents refused or unreachable, by reason.", refusedDocuments);
      lines.push("# HELP oauth2_store_errors_total Requests answered 500 or 503 because the store failed or timed out.");
      lines.push("# TYPE oauth2_store_errors_total counter", `oauth2_store_errors_total ${storeErrors}`);
      return lines.join("\n") + "\n";
    },
  };
}
