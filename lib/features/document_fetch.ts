/**
 * Fetching client metadata documents: through the one fenced door for outbound requests (`lib/outbound.ts`:
 * SSRF guard, a cap on decoded bytes, a deadline, no redirects), with a bounded cache of documents that honours
 * Cache-Control, a short memory of failures, and one fetch at a time per URL.
 *
 * @module
 */
import { guardedFetch, OutboundError } from "../outbound.ts";
import type { ClientRecord } from "../storage/types.ts";
import { type DocumentContext, documentClient, DocumentRefused } from "./document_client.ts";
import { makeRoom } from "../evict.ts";

/** Largest document accepted, in decoded bytes (the draft's "5 kilobytes", §8.7 of -02). */
export const MAX_DOCUMENT_BYTES: number = 5 * 1024;
const MIN_CACHE_MS = 30_000;
const MAX_CACHE_MS = 24 * 3600_000;
const DEFAULT_CACHE_MS = 300_000;
/** How long a failed URL is not fetched again: a flood naming one dead URL costs its host one request a minute. */
export const FAILURE_MEMORY_MS = 60_000;
const MAX_CACHED = 1000;

/** How documents are fetched. */
export interface DocumentFetchOptions {
  allowOrigins: readonly string[];
  fetch: ((request: Request) => Promise<Response>) | undefined;
  allowFetch: ((url: URL) => boolean | Promise<boolean>) | undefined;
  timeout: number;
}

/** Fetches, checks and caches client metadata documents. */
export interface DocumentResolver {
  /** Whether `clientId` is known to fail, so that no fetch would be made for it now. */
  failing(clientId: string, now: number): boolean;
  /**
   * The client the document at `clientId` describes, as a public client record with `origin: "document"`, and
   * whether it was fetched just now. Throws {@link DocumentRefused}.
   */
  resolve(clientId: string, context: DocumentContext): Promise<{ client: ClientRecord; fresh: boolean }>;
}

/** A map that forgets its oldest entry past `MAX_CACHED`: a stranger naming URLs cannot grow it. */
function bounded<V>(): Map<string, V> & { put(key: string, value: V): void } {
  const map = new Map<string, V>() as Map<string, V> & { put(key: string, value: V): void };
  map.put = (key, value) => {
    map.delete(key);
    makeRoom(map, MAX_CACHED);
    map.set(key, value);
  };
  return map;
}

const OUTBOUND_DESCRIPTIONS: Record<string, string> = {
  private_host: "The client's metadata document is on a private host",
  refused: "The client's metadata document may not be fetched",
  too_large: "The client's metadata document is too large",
};

/** Creates the document resolver for one server. */
export function documentResolver(options: DocumentFetchOptions): DocumentResolver {
  const cache = bounded<{ client: ClientRecord; until: number }>();
  const failures = bounded<{ until: number; error: DocumentRefused }>();
  // Concurrent requests for one uncached document share one fetch: a burst of authorization requests naming
  // someone else's URL must not turn this server into an amplifier against that host.
  const inFlight = new Map<string, Promise<{ client: ClientRecord; ttl: number }>>();

  async function load(clientId: string, context: DocumentContext): Promise<{ client: ClientRecord; ttl: number }> {
    let text: string;
    let cacheControl: string | null;
    try {
      const response = await guardedFetch(clientId, {
        maxBytes: MAX_DOCUMENT_BYTES,
        timeout: options.timeout,
        allowOrigins: options.allowOrigins,
        ...(options.allowFetch === undefined ? {} : { allowFetch: options.allowFetch }),
        ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
      });
      // -01 and later: a document is a 200, nothing else (a 204 or 206 is not the client's metadata).
      if (response.status !== 200) throw new OutboundError("status", `answered ${response.status}`, { status: response.status });
      text = response.text();
      cacheControl = response.headers.get("cache-control");
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      const status = error.status === undefined ? "" : ` (it answered ${error.status})`;
      throw new DocumentRefused(error.reason, OUTBOUND_DESCRIPTIONS[error.reason] ?? `The client's metadata document could not be fetched${status}`);
    }
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      throw new DocumentRefused("invalid", "The client's metadata document is not JSON");
    }
    const exempt = options.allowOrigins.some((origin) => URL.canParse(origin) && new URL(origin).origin === new URL(clientId).origin);
    return { client: documentClient(document, clientId, context, exempt), ttl: cacheLifetime(cacheControl) };
  }

  return {
    failing: (clientId, now) => (failures.get(clientId)?.until ?? 0) > now,
    async resolve(clientId, context) {
      const now = context.clock();
      const hit = cache.get(clientId);
      if (hit && hit.until > now) return { client: hit.client, fresh: false };
      cache.delete(clientId);
      const failed = failures.get(clientId);
      if (failed && failed.until > now) throw failed.error;
      let pending = inFlight.get(clientId);
      if (pending === undefined) {
        pending = load(clientId, context).finally(() => inFlight.delete(clientId));
        inFlight.set(clientId, pending);
      }
      let loaded;
      try {
        loaded = await pending;
      } catch (error) {
        // Remembered for a minute, never longer: a document fixed now works a minute from now (the drafts'
        // "MUST NOT cache error responses" is about the metadata; this only holds back the next fetch).
        if (error instanceof DocumentRefused) failures.put(clientId, { until: now + FAILURE_MEMORY_MS, error });
        throw error;
      }
      failures.delete(clientId);
      if (loaded.ttl > 0) cache.put(clientId, { client: loaded.client, until: now + loaded.ttl });
      return { client: loaded.client, fresh: true };
    },
  };
}

/** Cache lifetime from Cache-Control: none for no-store/no-cache, else max-age within [30 s, 24 h]; default 5 min. */
function cacheLifetime(header: string | null): number {
  if (header === null) return DEFAULT_CACHE_MS;
  const value = header.toLowerCase();
  if (/(?:^|[\s,])(?:no-store|no-cache|private)(?:$|[\s,=])/.test(value)) return 0;
  const maxAge = /(?:^|[\s,])max-age=(\d+)/.exec(value);
  if (!maxAge) return DEFAULT_CACHE_MS;
  return Math.min(MAX_CACHE_MS, Math.max(MIN_CACHE_MS, Number(maxAge[1]) * 1000));
}
