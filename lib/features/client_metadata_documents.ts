/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP 2025-11-25): a client whose
 * `client_id` is an https URL publishes its metadata there, and the server fetches it instead of requiring a
 * registration. The fetch is an outgoing request chosen by a stranger, so it is fenced in: no redirects, a size
 * cap, a deadline, no private hosts, and nothing cached that failed.
 *
 * @module
 */
import type { ClientAdmission, ClientDraft } from "../core/admission.ts";
import { ConfigurationError } from "../errors.ts";
import { defineFeature, type Feature } from "../core/feature.ts";
import { OAuthError } from "../errors.ts";
import type { ClientRecord, Storage } from "../storage/types.ts";
import { readBody } from "../http.ts";

/** Options of client metadata documents (`clientMetadataDocuments` of the server). */
export interface ClientMetadataDocumentOptions {
  /** Default false. */
  enabled?: boolean;
  /**
   * Origins exempt from the https and private-host rules, e.g. `http://127.0.0.1:8123` for a test or an intranet
   * document host. Exact origins.
   */
  allowOrigins?: string[];
  /** The fetch to use. Default `globalThis.fetch`. */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * Decides, before each fetch, whether a URL may be fetched: add a DNS check of the resolved address here (Web
   * `fetch` cannot pin it) or an allow list. Default: everything that passed the built-in checks.
   */
  allowFetch?: (url: URL) => boolean | Promise<boolean>;
  /** Milliseconds before a fetch is abandoned. Default 5000. */
  timeout?: number;
}

/** What the document check needs from the server. */
export interface DocumentContext {
  scopes: ReadonlyMap<string, string>;
  defaultScope: string | undefined;
  clock: () => number;
  /** The one door for clients: a document's client passes the same rules as any other. */
  admission: ClientAdmission;
}

/** The options this feature adds. */
export interface ClientMetadataDocumentFeatureOptions {
  /**
   * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP 2025-11-25): a client_id
   * that is an https URL is resolved by fetching the client's metadata from it. Off by default.
   */
  clientMetadataDocuments?: ClientMetadataDocumentOptions;
}

/** Largest document accepted, in bytes (the draft suggests 5 KB). */
export const MAX_DOCUMENT_BYTES: number = 5 * 1024;
const MIN_CACHE_MS = 30_000;
const MAX_CACHE_MS = 24 * 3600_000;
const DEFAULT_CACHE_MS = 300_000;
const MAX_CACHED = 1000;
/** Members that carry a private key in a JWK (RFC 7518 §6.2.2, §6.3.2, §6.4.1). */
const PRIVATE_JWK_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];
const SECRET_METHODS = ["client_secret_basic", "client_secret_post", "client_secret_jwt"];

const refused = (description: string, cause?: unknown) =>
  new OAuthError("invalid_request", { description, ...(cause === undefined ? {} : { cause }) });

/**
 * Whether a client_id is a client identifier URL: checked on the raw string, because WHATWG `URL` collapses dot
 * segments and would let `https://a.example/x/../y` pass for `https://a.example/y`. An https URL with a path
 * other than `/`, and no userinfo, fragment or dot segment. Listed origins may be http.
 */
export function isClientIdUrl(clientId: string, allowOrigins: readonly string[] = []): boolean {
  const exempt = allowOrigins.some((origin) => clientId.startsWith(origin + "/"));
  if (!clientId.startsWith("https://") && !exempt) return false;
  const match = /^[a-z]+:\/\/([^/?#]*)(\/[^?#]*)(\?[^#]*)?$/.exec(clientId);
  if (!match) return false; // no path, or a fragment
  const [, authority, path] = match;
  if (authority!.includes("@") || authority === "" || path === "/") return false;
  // Dot segments, also percent-encoded (%2e), which some servers decode before routing.
  for (const segment of path!.split("/")) if (/^(?:\.|%2e){1,2}$/i.test(segment)) return false;
  if (/[\\\s]/.test(clientId)) return false;
  try {
    new URL(clientId);
  } catch {
    return false;
  }
  return true;
}

/**
 * Refuses hosts an attacker could use to make the server reach its own network: IP literals, `localhost`, and
 * the `.local`, `.internal` and `.localhost` names (RFC 6762, RFC 6761); resolving names to special-use ranges
 * (RFC 6890) can only be caught by the `allowFetch` hook or an egress policy.
 */
function isPrivateHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host.startsWith("[") || /^[0-9.]+$/.test(host) || /^0x/i.test(host)) return true;
  return host === "localhost" || /\.(?:local|internal|localhost)$/.test(host) || !host.includes(".");
}

interface Cached {
  client: ClientRecord;
  until: number;
}

/** Fetches, checks and caches client metadata documents. */
export interface ClientMetadataDocuments {
  /** Whether this client_id should be resolved through a document. */
  handles(clientId: string): boolean;
  /**
   * The client the document at `clientId` describes, as a public client record with `origin: "document"`.
   * Throws `OAuthError` (`invalid_request`, with the reason in `cause`) when it cannot be fetched or is refused.
   */
  resolve(clientId: string, context: DocumentContext): Promise<{ client: ClientRecord; fresh: boolean }>;
}

/** Creates the document resolver for one server. */
export function clientMetadataDocuments(options: ClientMetadataDocumentOptions): ClientMetadataDocuments {
  const allowOrigins = options.allowOrigins ?? [];
  const doFetch = options.fetch ?? ((request: Request) => fetch(request));
  const timeout = options.timeout ?? 5000;
  const cache = new Map<string, Cached>();
  // Concurrent requests for one uncached document share one fetch: a burst of authorization requests naming
  // someone else's URL must not turn this server into an amplifier against that host.
  const inFlight = new Map<string, Promise<{ client: ClientRecord; ttl: number }>>();

  async function load(clientId: string, context: DocumentContext): Promise<{ client: ClientRecord; ttl: number }> {
    const url = new URL(clientId);
    const exempt = allowOrigins.includes(url.origin);
    if (!exempt && isPrivateHost(url.hostname)) throw refused("The client's metadata document is on a private host");
    if (options.allowFetch && !(await options.allowFetch(url))) {
      throw refused("The client's metadata document may not be fetched");
    }
    let response: Response;
    const deadline = AbortSignal.timeout(timeout);
    try {
      response = await until(doFetch(new Request(clientId, {
        headers: { accept: "application/json" },
        // The draft: the server MUST NOT follow redirects; a document elsewhere is not this client_id's.
        redirect: "manual",
        signal: deadline,
      })), deadline);
    } catch (cause) {
      throw refused("The client's metadata document could not be fetched", cause);
    }
    if (response.status !== 200) {
      void response.body?.cancel().catch(() => {});
      throw refused("The client's metadata document could not be fetched", new Error(`status ${response.status}`));
    }
    let text: string;
    try {
      text = await until(readBody(response, MAX_DOCUMENT_BYTES, () => refused("The client's metadata document is too large")), deadline);
    } catch (cause) {
      if (cause instanceof OAuthError) throw cause;
      throw refused("The client's metadata document could not be fetched", cause);
    }
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch (cause) {
      throw refused("The client's metadata document is not JSON", cause);
    }
    const client = documentClient(document, clientId, context, exempt);
    return { client, ttl: cacheLifetime(response.headers.get("cache-control")) };
  }

  return {
    handles: (clientId) => options.enabled === true && isClientIdUrl(clientId, allowOrigins),
    async resolve(clientId, context) {
      const now = context.clock();
      const hit = cache.get(clientId);
      if (hit && hit.until > now) return { client: hit.client, fresh: false };
      cache.delete(clientId);
      // Errors propagate uncached: a document fixed a second later must work a second later.
      let pending = inFlight.get(clientId);
      if (pending === undefined) {
        pending = load(clientId, context).finally(() => inFlight.delete(clientId));
        inFlight.set(clientId, pending);
      }
      const { client, ttl } = await pending;
      if (ttl > 0) {
        if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
        cache.set(clientId, { client, until: now + ttl });
      }
      return { client, fresh: true };
    },
  };
}

/**
 * Settles as `promise` does, or rejects once `signal` aborts: the deadline holds even when an injected fetch
 * ignores the request's signal, or a body trickles in, so a document host cannot hang an authorization request.
 */
function until<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
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

const isString = (v: unknown): v is string => typeof v === "string" && v !== "";

/** Checks a parsed document and turns it into a public client record, through the one door for clients. */
export function documentClient(
  document: unknown,
  clientId: string,
  context: DocumentContext,
  exempt = false,
): ClientRecord {
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    throw refused("The client's metadata document is not a JSON object");
  }
  const d = document as Record<string, unknown>;
  // The document speaks for exactly this URL, compared as strings.
  if (d.client_id !== clientId) throw refused("The client's metadata document names another client_id");
  if (!isString(d.client_name)) throw refused("The client's metadata document has no client_name");
  if (!Array.isArray(d.redirect_uris) || d.redirect_uris.length === 0) {
    throw refused("The client's metadata document has no redirect_uris");
  }
  // A document is public: anything secret in it is known to the world, so the document is refused outright.
  if ("client_secret" in d || "client_secret_expires_at" in d) throw refused("The client's metadata document holds a secret");
  const keys = [d.jwks, ...(Array.isArray((d.jwks as { keys?: unknown })?.keys) ? (d.jwks as { keys: unknown[] }).keys : [])];
  for (const key of keys) {
    if (typeof key === "object" && key !== null && PRIVATE_JWK_MEMBERS.some((m) => m in key)) {
      throw refused("The client's metadata document holds private key material");
    }
  }
  const method = d.token_endpoint_auth_method;
  if (typeof method === "string" && SECRET_METHODS.includes(method)) {
    throw refused("The client's metadata document asks for a shared secret");
  }
  // The client authenticates with `none` (PKCE only): it must say so, or offer it among its choices (the
  // RP-Metadata-Choices array ChatGPT sends), or say nothing.
  const choices = d.token_endpoint_auth_methods_supported;
  if (method !== undefined && method !== "none" && !(Array.isArray(choices) && choices.includes("none"))) {
    throw refused("The client's metadata document does not offer the none authentication method");
  }
  if (method === undefined && Array.isArray(choices) && !choices.includes("none")) {
    throw refused("The client's metadata document does not offer the none authentication method");
  }
  // Grant types this server lacks are ignored, not refused (Claude lists jwt-bearer beside authorization_code);
  // absent ones take the door's default (the code flow and refresh).
  const declared = Array.isArray(d.grant_types) ? d.grant_types : undefined;
  if (declared !== undefined && !declared.includes("authorization_code")) throw refused("The client's metadata document does not use authorization_code");
  const grantTypes = declared === undefined ? undefined : declared.includes("refresh_token") ? ["authorization_code", "refresh_token"] : ["authorization_code"];
  if (Array.isArray(d.response_types) && !d.response_types.includes("code")) {
    throw refused("The client's metadata document does not use response_type code");
  }
  const scopes = typeof d.scope === "string"
    ? d.scope.split(" ").filter((s) => context.scopes.has(s))
    : [...context.scopes.keys()];
  if (scopes.length === 0) throw refused("The client's metadata document asks for no scope this server has");
  const draft: ClientDraft = {
    client_id: clientId,
    name: d.client_name,
    type: "public",
    redirect_uris: d.redirect_uris as string[],
    scopes,
    ...(grantTypes === undefined ? {} : { grant_types: grantTypes }),
    metadata: echoMetadata(d),
  };
  const defaults = context.defaultScope?.split(" ").filter((s) => scopes.includes(s)) ?? [];
  if (defaults.length > 0) draft.default_scope = defaults.join(" ");
  try {
    return context.admission.admit(draft, { origin: "document", relaxHttp: exempt }).client;
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    throw refused(`The client's metadata document is refused: ${error.message.replace(/^Cannot register client: /, "")}`);
  }
}

/** Display metadata kept with the record (strings only; escaped wherever they are shown). */
function echoMetadata(d: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of ["client_uri", "logo_uri", "tos_uri", "policy_uri", "software_id", "software_version", "application_type"]) {
    if (isString(d[name])) out[name] = d[name];
  }
  return out;
}

/**
 * The client of an authorization request: in the store, or, for a client identifier URL, through its metadata
 * document, which is then written to the store so the token endpoint and every other instance find the same
 * record. Null when there is none; throws `OAuthError` when a document is refused.
 */
export async function findClient(
  clientId: string,
  documents: ClientMetadataDocuments | null,
  context: DocumentContext & { storage: Storage },
): Promise<ClientRecord | null> {
  const { storage } = context;
  if (documents === null || !documents.handles(clientId)) return storage.getClient(clientId);
  const stored = await storage.getClient(clientId);
  // A client registered any other way is never replaced by a document at its address; one an administrator
  // paused stays paused, whatever its document says.
  if (stored && (stored.origin !== "document" || !stored.active)) return stored;
  const { client, fresh } = await documents.resolve(clientId, context);
  if (fresh || stored === null) {
    const record: ClientRecord = { ...client, created_at: stored?.created_at ?? client.created_at };
    if (stored?.last_used_at !== undefined) record.last_used_at = stored.last_used_at;
    if (stored?.introspection !== undefined) record.introspection = stored.introspection;
    await storage.saveClient(record);
  }
  return client;
}

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
        { key: "fetch", type: { kind: "value", expect: "a function", test: (v) => typeof v === "function" }, doc: "The fetch to use.", config: null },
        { key: "allowFetch", type: { kind: "value", expect: "a function", test: (v) => typeof v === "function" }, doc: "Decides whether a URL may be fetched.", config: null },
        { key: "timeout", type: { kind: "integer", min: 1 }, doc: "Milliseconds before a fetch is abandoned; default 5000.", config: null },
      ],
    },
    doc: "Client ID Metadata Documents: https URLs as client_id.",
    check: (value: ClientMetadataDocumentOptions) =>
      value.allowOrigins !== undefined && value.enabled !== true ? '"allowOrigins" is set but "enabled" is not true' : undefined,
  }],
  reads: [],
  setup: (options): ClientMetadataDocuments | null =>
    options.clientMetadataDocuments?.enabled === true ? clientMetadataDocuments(options.clientMetadataDocuments) : null,
  metadata: () => ({ client_id_metadata_document_supported: true }),
});
