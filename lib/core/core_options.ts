/**
 * The core's options: their table (types, docs, config keys) and their resolution into the values the core
 * context holds. Each feature adds its own options in its module.
 *
 * @module
 */
import { ConfigurationError } from "../errors.ts";
import { DEFAULT_BODY_TIMEOUT, DEFAULT_FORM_LIMITS } from "../http.ts";
import { trustedProxies, type ClientAddressResolver, parseNetwork } from "../proxy.ts";
import { LOOPBACK_HOSTS } from "../redirect_uri.ts";
import { SCOPE_TOKEN } from "../scope.ts";
import { memoryStorage, MemoryStorage } from "../storage/memory.ts";
import { withTimeout } from "../storage/timeout.ts";
import type { Storage } from "../storage/types.ts";
import { memoryThrottle, type Throttle } from "../throttle.ts";
import type { AuditEvent } from "../audit.ts";
import type { AuthenticateUser, ErrorHook } from "./hooks.ts";
import { optionError, type OptionSpec } from "./option_table.ts";


/** The core's options of {@link createAuthorizationServer}. */
export interface CoreOptions {
  /**
   * The issuer identifier and base URL (RFC 8414 §2): absolute, https (http only for loopback hosts), no query
   * or fragment. The spec's addresses hang below it: `{issuer}/index.php?module=OAuth2&action=token`.
   */
  issuer: string;
  /** Where clients, codes and tokens live. Default: a new `memoryStorage`. */
  storage?: Storage;
  /**
   * Deadline of each call to a given `storage`, in ms; past it the request fails with 503
   * `temporarily_unavailable`. Default 5000. This library's memory store never waits, so it gets no timers.
   */
  storageTimeout?: number;
  /**
   * Throttling of failed client authentications per address and per client_id at that address (429 with
   * `Retry-After`). Default: `memoryThrottle` with its defaults; `false` switches it off.
   */
  throttle?: Throttle | false;
  /** The end-user authentication hook; without it the authorization endpoint answers 404. */
  authenticateUser?: AuthenticateUser;
  /** Every scope the server knows, with the description shown on the consent page. */
  scopes: Record<string, string>;
  /**
   * Space-delimited scope given to clients that register themselves (dynamic registration, client metadata
   * documents) and granted when their request names none. Default: none, so such requests must name a scope.
   */
  defaultScope?: string;
  /** Lifetimes in seconds. */
  lifetimes?: {
    /** Default 3600 (one hour); reported as `expires_in`. */
    accessToken?: number;
    /** Default 600 (ten minutes; RFC 6749 §4.1.2 recommends at most ten). */
    authorizationCode?: number;
    /** Default 2 592 000 (30 days), counted from the authorization: rotation does not extend it. */
    refreshToken?: number;
  };
  /** Milliseconds since the epoch. Default `Date.now`; tests inject their own. */
  clock?: () => number;
  /**
   * Clean paths, relative to the issuer's path. Defaults: `/authorize`, `/token`, `/revoke`, `/introspect`.
   * Set one to `null` to leave it out.
   */
  paths?: Partial<Record<"authorize" | "token" | "revoke" | "introspect", string | null>>;
  /** Key for the consent page's CSRF tokens, at least 32 bytes. Default: random, made at start. */
  secret?: string | Uint8Array;
  /** Request limits. */
  limits?: {
    /** Largest request body, in bytes (413 past it). Default 16 384. */
    maxBodyBytes?: number;
    /** Milliseconds a request body may take to arrive before the request gets 408 (slowloris). Default 10 000. */
    bodyTimeout?: number;
    /** Most parameters in one form or query. Default 64. */
    maxParameters?: number;
    /** Longest parameter name or value. Default 4096. */
    maxParameterLength?: number;
  };
  /** Called with each unexpected failure and each error response's cause. Never sent to the client. */
  onError?: ErrorHook;
  /**
   * Called with each audit event (sign-ins, consents, codes, tokens, clients, throttling; see `AuditEvent`).
   * Events carry ids and the client's address, never a secret, code or token. A hook that throws is ignored.
   */
  onEvent?: (event: AuditEvent) => void;
  /**
   * Reverse proxies whose forwarding headers are believed: addresses or CIDR ranges (`10.0.0.0/8`). When the
   * socket's peer is one of them, the client's address (throttles, audit events) is the rightmost address of
   * `X-Forwarded-For` (else of `Forwarded`) that is not a trusted proxy. Default none: the headers are ignored.
   */
  trustProxy?: readonly string[];
}

const isFunction = (value: unknown): boolean => typeof value === "function";
const fn = (expect = "a function") => ({ kind: "value", expect, test: isFunction }) as const;
const seconds = (doc: string): OptionSpec => ({ key: "", type: { kind: "integer", min: 1 }, doc });
const positive = (key: string, doc: string): OptionSpec => ({ key, type: { kind: "integer", min: 1 }, doc });
const path = (key: string): OptionSpec => ({
  key,
  type: { kind: "value", expect: 'a path starting with "/" and holding no query or fragment, or null', test: (v) => v === null || (typeof v === "string" && v.startsWith("/") && !/[?#]/.test(v)) },
  doc: `The clean path of the ${key} endpoint below the issuer's path; null leaves it out.`,
});

/** The core's option table. */
export const CORE_OPTIONS: readonly OptionSpec[] = [
  {
    key: "issuer",
    type: { kind: "string" },
    doc: "The issuer identifier and base URL: https (http only on loopback), no query or fragment.",
    config: null,
    check: (issuer: string) => issuerProblem(issuer),
  },
  {
    key: "storage",
    type: { kind: "value", expect: "a store (see the Storage interface)", test: (v) => typeof v === "object" && v !== null },
    doc: "Where clients, codes and tokens live.",
    config: null,
  },
  { ...positive("storageTimeout", "Milliseconds each storage call may take before the request gets 503."), config: null },
  {
    key: "throttle",
    type: { kind: "value", expect: "a throttle or false", test: (v) => v === false || (typeof v === "object" && v !== null) },
    doc: "Throttling of failed client authentications; false switches it off.",
    config: null,
  },
  { key: "authenticateUser", type: fn(), doc: "The end-user authentication hook.", config: null },
  {
    key: "scopes",
    type: { kind: "value", expect: "an object mapping scope names to descriptions", test: (v) => typeof v === "object" && v !== null && !Array.isArray(v) },
    doc: "The scopes the server knows; the description is shown on the consent page.",
    check: (scopes: Record<string, unknown>) => scopesProblem(scopes),
    config: {
      type: {
        kind: "list",
        items: {
          kind: "object",
          required: ["name", "description"],
          fields: [
            { key: "name", type: { kind: "string" }, doc: "The scope value." },
            { key: "description", type: { kind: "string" }, doc: "Shown on the consent page." },
          ],
        },
      },
      convert: (list) => Object.fromEntries((list as { name: string; description: string }[]).map((s) => [s.name, s.description])),
    },
  },
  { key: "defaultScope", type: { kind: "string" }, doc: "Scope granted when a request names none, and given to clients that register themselves." },
  {
    key: "lifetimes",
    type: {
      kind: "object",
      fields: [
        { ...seconds("Seconds an access token lives (expires_in); default 3600."), key: "accessToken" },
        { ...seconds("Seconds an authorization code lives; default 600."), key: "authorizationCode" },
        { ...seconds("Seconds a grant's refresh tokens live from the authorization; default 2592000 (30 days)."), key: "refreshToken" },
      ],
    },
    doc: "Lifetimes in seconds.",
  },
  { key: "clock", type: fn("a function returning milliseconds"), doc: "Milliseconds since the epoch; tests inject their own.", config: null },
  {
    key: "paths",
    type: { kind: "object", fields: [path("authorize"), path("token"), path("revoke"), path("introspect")] },
    doc: "Clean paths of the endpoints.",
    config: null,
  },
  {
    key: "secret",
    type: { kind: "value", expect: "a string or bytes", test: (v) => typeof v === "string" || v instanceof Uint8Array },
    doc: "Key for CSRF tokens and everything derived from the server secret, at least 32 bytes.",
    check: (secret: string | Uint8Array) => (bytesOf(secret).byteLength < 32 ? "must be at least 32 bytes long" : undefined),
    config: null,
  },
  {
    key: "limits",
    type: {
      kind: "object",
      fields: [
        positive("maxBodyBytes", "Largest request body in bytes (413 past it); default 16384."),
        positive("bodyTimeout", "Milliseconds a request body may take to arrive (408 past it); default 10000."),
        positive("maxParameters", "Most parameters in one form or query; default 64."),
        positive("maxParameterLength", "Longest parameter name or value; default 4096."),
      ],
    },
    doc: "Request limits.",
    config: null,
  },
  { key: "onError", type: fn(), doc: "Called with each unexpected failure.", config: null },
  { key: "onEvent", type: fn(), doc: "Called with each audit event.", config: null },
  {
    key: "trustProxy",
    type: { kind: "list", items: { kind: "string" } },
    doc: "Addresses or CIDR ranges of reverse proxies whose X-Forwarded-For is believed.",
    check: (networks: string[]) => {
      for (const network of networks) {
        try {
          parseNetwork(network);
        } catch {
          return `holds "${network}", which is no address or CIDR range`;
        }
      }
      return undefined;
    },
  },
];

function bytesOf(secret: string | Uint8Array): Uint8Array {
  return typeof secret === "string" ? new TextEncoder().encode(secret) : secret;
}

function issuerProblem(issuer: string): string | undefined {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return `must be an absolute URL: "${issuer}"`;
  }
  if (url.search || url.hash || issuer.includes("?") || issuer.includes("#")) return `must have no query or fragment: "${issuer}"`;
  if (url.protocol !== "https:" && !(url.protocol === "http:" && LOOPBACK_HOSTS.includes(url.hostname))) {
    return `must use https (http only on a loopback host): "${issuer}"`;
  }
  return undefined;
}

function scopesProblem(scopes: Record<string, unknown>): string | undefined {
  const entries = Object.entries(scopes);
  if (entries.length === 0) return "must name at least one scope";
  for (const [name, description] of entries) {
    if (!SCOPE_TOKEN.test(name)) return `names "${name}", which is no RFC 6749 scope token`;
    if (typeof description !== "string") return `gives scope "${name}" a description that is not a string`;
  }
  return undefined;
}

/** The core's values, resolved from checked options. */
export interface CoreValues {
  issuer: string;
  basePath: string;
  storage: Storage;
  clock: () => number;
  scopes: ReadonlyMap<string, string>;
  defaultScope: string | undefined;
  accessTokenTtl: number;
  codeTtl: number;
  refreshTokenTtl: number;
  maxBodyBytes: number;
  bodyTimeout: number;
  formLimits: { maxParameters: number; maxParameterLength: number };
  throttle: Throttle | undefined;
  authenticateUser: AuthenticateUser | undefined;
  secret: Uint8Array;
  onError: ErrorHook;
  onEvent: ((event: AuditEvent) => void) | undefined;
  clientAddress: ClientAddressResolver;
  paths: { authorize: string | null; token: string | null; revoke: string | null; introspect: string | null };
}

/** Resolves the core's options (already checked against {@link CORE_OPTIONS}) into its values. */
export function resolveCore(options: CoreOptions): CoreValues {
  if (options.issuer === undefined) throw new ConfigurationError('Cannot create server: "issuer" is required', "issuer");
  if (options.scopes === undefined) throw new ConfigurationError('Cannot create server: "scopes" is required', "scopes");
  const url = new URL(options.issuer);
  const basePath = url.pathname.replace(/\/+$/, "");
  const clock = options.clock ?? Date.now;
  const lifetimes = options.lifetimes ?? {};
  const limits = options.limits ?? {};
  const paths = options.paths ?? {};
  const scopes = new Map(Object.entries(options.scopes));
  if (options.defaultScope !== undefined && !options.defaultScope.split(" ").every((s) => scopes.has(s))) {
    throw optionError("defaultScope", `must be a space-delimited list of known scopes: "${options.defaultScope}"`);
  }
  const pathOf = (name: keyof CoreValues["paths"]) => (paths[name] === null ? null : paths[name] ?? `/${name}`);
  return {
    issuer: url.origin + basePath,
    basePath,
    storage: options.storage === undefined ? memoryStorage({ clock }) : deadlined(options.storage, options.storageTimeout ?? 5000),
    clock,
    scopes,
    defaultScope: options.defaultScope,
    accessTokenTtl: (lifetimes.accessToken ?? 3600) * 1000,
    codeTtl: (lifetimes.authorizationCode ?? 600) * 1000,
    refreshTokenTtl: (lifetimes.refreshToken ?? 30 * 24 * 3600) * 1000,
    maxBodyBytes: limits.maxBodyBytes ?? 16_384,
    bodyTimeout: limits.bodyTimeout ?? DEFAULT_BODY_TIMEOUT,
    formLimits: {
      maxParameters: limits.maxParameters ?? DEFAULT_FORM_LIMITS.maxParameters,
      maxParameterLength: limits.maxParameterLength ?? DEFAULT_FORM_LIMITS.maxParameterLength,
    },
    throttle: options.throttle === false ? undefined : options.throttle ?? memoryThrottle(),
    authenticateUser: options.authenticateUser,
    secret: options.secret === undefined ? crypto.getRandomValues(new Uint8Array(32)) : bytesOf(options.secret),
    onError: options.onError ?? (() => {}),
    onEvent: options.onEvent,
    clientAddress: options.trustProxy === undefined || options.trustProxy.length === 0 ? (peer) => peer : trustedProxies(options.trustProxy),
    paths: { authorize: pathOf("authorize"), token: pathOf("token"), revoke: pathOf("revoke"), introspect: pathOf("introspect") },
  };
}

/**
 * A given store with a deadline on every call, except this library's own memory store (its exact class, not a
 * subclass that may override a method with remote work): it answers in the same turn and can never hang.
 */
function deadlined(storage: Storage, ms: number): Storage {
  return Object.getPrototypeOf(storage) === MemoryStorage.prototype ? storage : withTimeout(storage, ms);
}
