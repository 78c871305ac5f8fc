/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP 2025-11-25 and 2026-07-28): a
 * client whose `client_id` is an https URL publishes its metadata there, and the server fetches it instead of
 * requiring a registration. The fetch is chosen by a stranger, so it is fenced in (`document_fetch.ts`), and so is
 * what a stranger can make of it: new document clients count against a ceiling per address, failed URLs are not
 * fetched again for a minute, and clients that never obtained a token are removed after a day. A refused
 * document is an audit event (`client.document_refused`), never an error report with a stack.
 *
 * @module
 */
import type { Exchange } from "../core/exchange.ts";
import { defineFeature, type Feature } from "../core/feature.ts";
import type { ErrorHook } from "../core/hooks.ts";
import { OAuthError } from "../errors.ts";
import { pathOf } from "../http.ts";
import type { ClientRecord, Storage } from "../storage/types.ts";
import { memoryThrottle, type Throttle, throttleKey } from "../throttle.ts";
import { type DocumentContext, DocumentRefused, isClientIdUrl } from "./document_client.ts";
import { documentResolver, type DocumentResolver } from "./document_fetch.ts";
import { REAP_INTERVAL_MS, removeUnusedClients } from "./unused_clients.ts";

export { type DocumentContext, documentClient, isClientIdUrl } from "./document_client.ts";
export { MAX_DOCUMENT_BYTES } from "./document_fetch.ts";

/** Options of client metadata documents (`clientMetadataDocuments` of the server). */
export interface ClientMetadataDocumentOptions {
  /** Default false. */
  enabled?: boolean;
  /**
   * Origins exempt from the https and private-host rules, e.g. `http://127.0.0.1:8123` for a test or an intranet
   * document host. Exact origins.
   */
  allowOrigins?: string[];
  /** The fetch to use. Default `globalThis.fetch` (see `guardedFetch` for what a replacement must not do). */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * Decides, before each fetch, whether a URL may be fetched: add a DNS check of the resolved address here (Web
   * `fetch` cannot pin it) or an allow list. Default: everything that passed the built-in checks.
   */
  allowFetch?: (url: URL) => boolean | Promise<boolean>;
  /** Milliseconds before a fetch is abandoned. Default 5000. */
  timeout?: number;
  /** Most new document clients (and failed documents) per client address per hour: a ceiling against floods. Default 20. */
  maxPerHour?: number;
  /**
   * Document clients that never obtained a token are removed this many days after they were first seen; ones
   * that did, once unused this long and past their grants' lifetime. Default 1: a document client costs one
   * fetch to come back.
   */
  removeUnusedAfterDays?: number;
}

/** The options this feature adds. */
export interface ClientMetadataDocumentFeatureOptions {
  /**
   * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP 2025-11-25): a client_id
   * that is an https URL is resolved by fetching the client's metadata from it. Off by default.
   */
  clientMetadataDocuments?: ClientMetadataDocumentOptions;
}

/** The feature's state: the resolver and what limits its use. */
export interface ClientMetadataDocuments {
  /** Whether this client_id should be resolved through a document. */
  handles(clientId: string): boolean;
  /** Origins exempt from the https and private-host rules: documents' and their clients' key sets (`jwks_uri`). */
  readonly allowOrigins: readonly string[];
  readonly resolver: DocumentResolver;
  /** New document clients and failures per address. */
  readonly throttle: Throttle;
  readonly removeUnusedAfterMs: number;
  readonly grantLifetimeMs: number;
  readonly onError: ErrorHook;
  /** When unused document clients were last removed. */
  lastReap: number;
}

const DAY_MS = 24 * 3600_000;

/** Creates the state of one server's documents. */
export function clientMetadataDocuments(
  options: ClientMetadataDocumentOptions,
  core: { refreshTokenTtl: number; onError: ErrorHook } = { refreshTokenTtl: 0, onError: () => {} },
): ClientMetadataDocuments {
  const allowOrigins = options.allowOrigins ?? [];
  return {
    handles: (clientId) => options.enabled === true && isClientIdUrl(clientId, allowOrigins),
    allowOrigins,
    resolver: documentResolver({ allowOrigins, fetch: options.fetch, allowFetch: options.allowFetch, timeout: options.timeout ?? 5000 }),
    // A ceiling per address against floods, not a quota: it counts only URLs this server has no client for.
    throttle: memoryThrottle({ maxFailures: options.maxPerHour ?? 20, windowSeconds: 3600, blockSeconds: 600 }),
    removeUnusedAfterMs: (options.removeUnusedAfterDays ?? 1) * DAY_MS,
    grantLifetimeMs: core.refreshTokenTtl,
    onError: core.onError,
    lastReap: -Infinity,
  };
}

/** Counts one new document client for `key`; the milliseconds to wait when the ceiling is reached, else 0. */
async function count(throttle: Throttle, key: string, now: number): Promise<number> {
  if (throttle.reserve) return throttle.reserve(key, now);
  const wait = await throttle.retryAfter(key, now);
  if (wait === 0) await throttle.fail(key, now);
  return wait;
}

/**
 * The client of an authorization request: in the store, or, for a client identifier URL, through its metadata
 * document, which is then written to the store so the token endpoint and every other instance find the same
 * record. Null when there is none; throws `OAuthError` when a document is refused (and reports it as the audit
 * event `client.document_refused`, with a fixed reason).
 */
export async function findClient(
  clientId: string,
  documents: ClientMetadataDocuments | null,
  context: DocumentContext & { storage: Storage },
  exchange: Pick<Exchange, "address" | "emit" | "request" | "target">,
): Promise<ClientRecord | null> {
  const { storage } = context;
  if (documents === null || !documents.handles(clientId)) return storage.getClient(clientId);
  const stored = await storage.getClient(clientId);
  // A client registered any other way is never replaced by a document at its address; one an administrator
  // paused stays paused, whatever its document says.
  if (stored && (stored.origin !== "document" || !stored.active)) return stored;
  const now = context.clock();
  const refuse = (reason: string, error: OAuthError): OAuthError => {
    exchange.emit({ type: "client.document_refused", client_id: clientId, reason });
    return error;
  };
  if (stored === null && !documents.resolver.failing(clientId, now)) {
    // Each URL this server has no client for costs a fetch and maybe a record, and makes this server a GET
    // reflector towards its host: a ceiling per address. Behind a trusted proxy, the address it forwarded.
    const wait = await count(documents.throttle, throttleKey("document", exchange.address ?? "unknown"), now);
    if (wait > 0) {
      throw refuse("throttled", new OAuthError("slow_down", {
        description: "Too many new applications from this address; try again later",
        headers: { "retry-after": String(Math.ceil(wait / 1000)) },
      }));
    }
  }
  await context.admission.learnNames(() => storage.listClients(), now);
  let resolved: { client: ClientRecord; fresh: boolean };
  try {
    resolved = await documents.resolver.resolve(clientId, context);
  } catch (error) {
    if (!(error instanceof DocumentRefused)) throw error;
    // No cause: a stranger's broken document is not the server's error, and must not write a stack trace.
    throw refuse(error.reason, new OAuthError("invalid_request", { description: error.description }));
  }
  const { client, fresh } = resolved;
  if (fresh || stored === null) {
    const record: ClientRecord = { ...client, created_at: stored?.created_at ?? client.created_at };
    if (stored?.last_used_at !== undefined) record.last_used_at = stored.last_used_at;
    if (stored?.introspection !== undefined) record.introspection = stored.introspection;
    await storage.saveClient(record);
  }
  if (stored === null) await removeUnused(documents, storage, now, exchange);
  return client;
}

/** At most hourly, on a new document client: removes the unused ones. A failure is reported, not fatal. */
async function removeUnused(
  documents: ClientMetadataDocuments,
  storage: Storage,
  now: number,
  exchange: Pick<Exchange, "request" | "target">,
): Promise<void> {
  if (now - documents.lastReap < REAP_INTERVAL_MS) return;
  documents.lastReap = now;
  try {
    await removeUnusedClients(storage, now, {
      origin: "document",
      maxIdleMs: documents.removeUnusedAfterMs,
      grantLifetimeMs: documents.grantLifetimeMs,
      keepPaused: true,
    });
  } catch (error) {
    documents.onError(error, { endpoint: "authorize", method: exchange.request.method, path: pathOf(exchange.target) });
  }
}

const fn = { kind: "value", expect: "a function", test: (v: unknown) => typeof v === "function" } as const;

/** The client metadata documents feature. */
export const clientMetadataDocumentsFeature: Feature<
  "client_metadata_documents",
  ClientMetadataDocuments | null,
  ClientMetadataDocumentFeatureOptions
> = defineFeature({
  name: "client_metadata_documents",
  doc: "Client ID Metadata Documents: an https URL as client_id, its metadata fetched from there.",
  options: [{
    key: "clientMetadataDocuments",
    type: {
      kind: "object",
      fields: [
        { key: "enabled", type: { kind: "boolean" }, doc: "Accept client ID metadata documents." },
        {
          key: "allowOrigins",
          type: { kind: "list", items: { kind: "string" } },
          doc: 'Origins exempt from the https and private-host rules, e.g. "http://127.0.0.1:8123" in tests.',
        },
        { key: "fetch", type: fn, doc: "The fetch to use.", config: null },
        { key: "allowFetch", type: fn, doc: "Decides whether a URL may be fetched.", config: null },
        { key: "timeout", type: { kind: "integer", min: 1 }, doc: "Milliseconds before a fetch is abandoned; default 5000.", config: null },
        { key: "maxPerHour", type: { kind: "integer", min: 1 }, doc: "Most new document clients per client address per hour; default 20." },
        {
          key: "removeUnusedAfterDays",
          type: { kind: "integer", min: 1 },
          doc: "Delete document clients that never obtained a token after this many days; default 1.",
        },
      ],
    },
    doc: "Client ID Metadata Documents: https URLs as client_id.",
    check: (value: ClientMetadataDocumentOptions) =>
      value.allowOrigins !== undefined && value.enabled !== true ? '"allowOrigins" is set but "enabled" is not true' : undefined,
  }],
  reads: ["refreshTokenTtl", "onError"],
  setup: (options, core): ClientMetadataDocuments | null =>
    options.clientMetadataDocuments?.enabled === true ? clientMetadataDocuments(options.clientMetadataDocuments, core) : null,
  metadata: () => ({ client_id_metadata_document_supported: true }),
});
