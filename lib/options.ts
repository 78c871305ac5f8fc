/**
 * Options of {@link createAuthorizationServer}, their defaults, and the checks made on them at start.
 *
 * @module
 */
import { ConfigurationError } from "./errors.ts";
import { DEFAULT_BODY_TIMEOUT, DEFAULT_FORM_LIMITS } from "./http.ts";
import {
  type ClientMetadataDocumentOptions,
  type ClientMetadataDocuments,
  clientMetadataDocuments,
} from "./client_metadata_document.ts";
import { type CorsOrigins, type CorsPolicy, resolveCors } from "./cors.ts";
import type { RegistrationOptions } from "./registration.ts";
import { checkConfiguredResources } from "./resource_indicator.ts";
import type { Storage } from "./storage/types.ts";
import { memoryStorage } from "./storage/memory.ts";
import { withTimeout } from "./storage/timeout.ts";
import type { ScopePolicy } from "./scope.ts";
import { memoryThrottle, type Throttle } from "./throttle.ts";
import { type ClientAddressResolver, trustedProxies } from "./proxy.ts";
import type { AuditEvent } from "./audit.ts";
import type { BoundGrant } from "./grants/types.ts";
import { LOOPBACK_HOSTS } from "./redirect_uri.ts";

/** The logged-in end user, as the authentication hook reports them. */
export interface EndUser {
  /** Stable identifier: becomes the `sub` of introspection and of the resource guard. */
  id: string;
  /** Display name for the consent page. */
  name?: string;
}

/** What the authentication hook is told besides the request. */
export interface InteractionContext {
  /** Form fields of a POST to the authorization endpoint (a login form posts back there), else null. */
  form: URLSearchParams | null;
  /** The client the user is asked to authorize. */
  client: { client_id: string; name: string };
  /** The requested scope. */
  scope: string;
  /**
   * The client's network address, when the runtime or adapter reports it (for throttling); behind a trusted
   * proxy (`trustProxy`), the address it forwarded.
   */
  remoteAddress: string | undefined;
  /** The server's issuer: a hook builds absolute URLs from it, never from the request's `Host`. */
  issuer?: string;
  /** Reports an audit event (sign-in succeeded, failed or throttled) to the server's `onEvent`. */
  audit?: (event: Omit<AuditEvent, "time" | "address">) => void;
}

/**
 * Authenticates the end user at the authorization endpoint. Returns the user, or a `Response` to send
 * instead, such as a login page or the redirect that follows a successful login.
 */
export type AuthenticateUser = (
  request: Request,
  context: InteractionContext,
) => EndUser | Response | Promise<EndUser | Response>;

/** Where an error happened, for {@link AuthorizationServerOptions.onError}. */
export interface ErrorContext {
  /** The endpoint: `authorize`, `token`, `revoke`, `introspect`, `metadata` or `resource`. */
  endpoint: string;
  /** The request method, e.g. `POST`. */
  method: string;
  /** The request path, without the query (which may hold a code or state). */
  path: string;
}

/**
 * Which rule book the server follows. `"spec"` (the default): the spec's `index.php?module=OAuth2&action=…`
 * addresses besides the clean paths, and exactly one scope per request (spec §8). `"rfc6749"`: clean paths
 * only, and several space-delimited scopes (RFC 6749 §3.3), as MCP hosts send them. An object picks each part;
 * what it leaves out comes from `"spec"`.
 *
 * @example
 * ```ts
 * createAuthorizationServer({ issuer, scopes, profile: { scopePolicy: "multiple" } });
 * ```
 */
export type Profile = "spec" | "rfc6749" | ProfileParts;

/** The parts of a {@link Profile}. */
export interface ProfileParts {
  /** Serve `{issuer}/index.php?module=OAuth2&action=authorize|token` (spec §4.1, §4.2). */
  specAddresses?: boolean;
  /** `"single"`: exactly one scope per request; `"multiple"`: RFC 6749 §3.3. */
  scopePolicy?: ScopePolicy;
}

/** Options of {@link createAuthorizationServer}. */
export interface AuthorizationServerOptions {
  /**
   * The issuer identifier and base URL (RFC 8414 §2): absolute, https (http only for loopback hosts), no query
   * or fragment. The spec's addresses hang below it: `{issuer}/index.php?module=OAuth2&action=token`.
   */
  issuer: string;
  /** Where clients, codes and tokens live. Default: a new {@link memoryStorage}. */
  storage?: Storage;
  /**
   * Deadline of each call to a given `storage`, in ms; past it the request fails with 503
   * `temporarily_unavailable`. Default 5000. The default store (none given) never waits, so it gets no timers.
   */
  storageTimeout?: number;
  /**
   * Throttling of failed client authentications per address and per client_id at that address (429 with
   * `Retry-After`). Default: {@link memoryThrottle} with its defaults; `false` switches it off.
   */
  throttle?: Throttle | false;
  /** The end-user authentication hook; without it the authorization endpoint answers 404. */
  authenticateUser?: AuthenticateUser;
  /** Every scope the server knows, with the description shown on the consent page. */
  scopes: Record<string, string>;
  /** The spec's rules or RFC 6749's; see {@link Profile}. Default `"spec"`. */
  profile?: Profile;
  /**
   * Space-delimited scope given to clients that register themselves (dynamic registration, client metadata
   * documents) and granted when their request names none. Default: none, so such requests must name a scope.
   */
  defaultScope?: string;
  /**
   * Resource servers that tokens may be issued for (RFC 8707): absolute https URLs (http on loopback), compared
   * as exact strings. A `resource` parameter must name one (else `invalid_target`); it binds the code and the
   * grant, and becomes the token's audience (`aud`). Default none: the parameter is then ignored.
   */
  resources?: string[];
  /**
   * Seconds during which the immediate predecessor of the latest refresh token still works, once, without
   * revoking the grant: for clients whose processes race to refresh with one token (Codex, several MCP hosts).
   * Default 0 (strict: any reuse revokes the grant). The trade-off: inside the window a stolen predecessor is
   * as good as the latest token, so keep it short (seconds); outside it, reuse revokes as before.
   */
  refreshGraceSeconds?: number;
  /**
   * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP 2025-11-25): a client_id
   * that is an https URL is resolved by fetching the client's metadata from it. Off by default.
   */
  clientMetadataDocuments?: ClientMetadataDocumentOptions;
  /** Dynamic Client Registration (RFC 7591) at `{issuer}/register`. Off by default. */
  registration?: RegistrationOptions;
  /**
   * CORS on the token, revocation, introspection, registration and metadata endpoints (never on the
   * authorization endpoint or HTML pages, never with credentials). Default: any origin (`{ origins: "*" }`);
   * a list allows exactly those origins; `false` sends no CORS headers.
   */
  cors?: { origins: CorsOrigins } | false;
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
   * Clean paths, relative to the issuer's path, besides the spec's `index.php` addresses.
   * Defaults: `/authorize`, `/token`, `/revoke`, `/introspect`. Set one to `null` to leave it out.
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
  onError?: (error: unknown, context: ErrorContext) => void;
  /**
   * Called with each audit event (sign-ins, consents, codes, tokens, clients, throttling; see
   * {@link AuditEvent}). Events carry ids and the client's address, never a secret, code or token. A hook that
   * throws is ignored.
   */
  onEvent?: (event: AuditEvent) => void;
  /**
   * Reverse proxies whose forwarding headers are believed: addresses or CIDR ranges (`10.0.0.0/8`,
   * `2001:db8::/32`). When the socket's peer is one of them, the client's address (throttles, audit events) is
   * the rightmost address of `X-Forwarded-For` (else of `Forwarded`) that is not a trusted proxy. Default none:
   * the headers are ignored.
   */
  trustProxy?: readonly string[];
}

/** Options after defaults and checks; what the endpoints read. */
export interface ResolvedOptions {
  issuer: string;
  /** The issuer's path without a trailing slash; "" at the root. */
  basePath: string;
  storage: Storage;
  throttle: Throttle | undefined;
  authenticateUser: AuthenticateUser | undefined;
  scopes: Map<string, string>;
  specAddresses: boolean;
  scopePolicy: ScopePolicy;
  defaultScope: string | undefined;
  resources: string[];
  /** Refresh grace window in ms; 0 for none. */
  refreshGraceMs: number;
  documents: ClientMetadataDocuments | null;
  registration: {
    initialAccessToken: string | undefined;
    removeUnusedAfterMs: number | undefined;
    throttle: Throttle;
  } | null;
  cors: CorsPolicy | null;
  /** Lifetimes in milliseconds. */
  accessTokenTtl: number;
  codeTtl: number;
  refreshTokenTtl: number;
  clock: () => number;
  paths: { authorize: string | null; token: string | null; revoke: string | null; introspect: string | null };
  secret: Uint8Array;
  maxBodyBytes: number;
  bodyTimeout: number;
  formLimits: { maxParameters: number; maxParameterLength: number };
  onError: (error: unknown, context: ErrorContext) => void;
  onEvent: ((event: AuditEvent) => void) | undefined;
  /** The client's address from the socket's peer and the request's headers (see `trustProxy`). */
  clientAddress: ClientAddressResolver;
}

/** A scope token (RFC 6749 §3.3): printable ASCII except space, `"` and `\`. */
export const SCOPE_TOKEN: RegExp = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

const fail = (message: string): never => {
  throw new ConfigurationError(`Cannot create server: ${message}`);
};

function seconds(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback * 1000;
  if (!Number.isInteger(value) || value <= 0) fail(`"lifetimes.${name}" must be a positive whole number of seconds`);
  return value * 1000;
}

function resolveRegistration(registration: RegistrationOptions | undefined): ResolvedOptions["registration"] {
  if (registration?.enabled !== true) return null;
  const token = registration.initialAccessToken;
  if (token !== undefined && (typeof token !== "string" || token.length < 16)) {
    fail(`"registration.initialAccessToken" must be at least 16 characters`);
  }
  const days = registration.removeUnusedAfterDays;
  if (days !== undefined && (!Number.isInteger(days) || days <= 0)) {
    fail(`"registration.removeUnusedAfterDays" must be a positive whole number`);
  }
  const perHour = positive("maxPerHour", registration.maxPerHour, 20, "registration.");
  return {
    initialAccessToken: token,
    removeUnusedAfterMs: days === undefined ? undefined : days * 24 * 3600_000,
    // A ceiling per address against floods, not a quota: hosted MCP connectors share egress addresses.
    throttle: memoryThrottle({ maxFailures: perHour, windowSeconds: 3600, blockSeconds: 600 }),
  };
}

function graceMs(value: number | undefined): number {
  if (value === undefined) return 0;
  if (!Number.isInteger(value) || value < 0 || value > 3600) {
    fail(`"refreshGraceSeconds" must be a whole number of seconds from 0 to 3600`);
  }
  return value * 1000;
}

function positive(name: string, value: number | undefined, fallback: number, prefix = "limits."): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0) fail(`"${prefix}${name}" must be a positive whole number`);
  return value;
}

function checkPath(name: string, value: string | null | undefined, fallback: string): string | null {
  if (value === null) return null;
  const path = value ?? fallback;
  if (!path.startsWith("/") || path.includes("?") || path.includes("#")) {
    fail(`"paths.${name}" must start with "/" and hold no query or fragment: "${path}"`);
  }
  return path;
}

const PROFILES = {
  spec: { specAddresses: true, scopePolicy: "single" },
  rfc6749: { specAddresses: false, scopePolicy: "multiple" },
} as const satisfies Record<string, Required<ProfileParts>>;

function resolveProfile(profile: Profile | undefined): Required<ProfileParts> {
  if (profile === undefined) return PROFILES.spec;
  if (profile === "spec" || profile === "rfc6749") return PROFILES[profile];
  if (typeof profile !== "object" || profile === null) return fail(`"profile" must be "spec", "rfc6749" or an object`);
  const { specAddresses = true, scopePolicy = "single" } = profile;
  if (typeof specAddresses !== "boolean") fail(`"profile.specAddresses" must be true or false`);
  if (scopePolicy !== "single" && scopePolicy !== "multiple") {
    fail(`"profile.scopePolicy" must be "single" or "multiple": "${String(scopePolicy)}"`);
  }
  return { specAddresses, scopePolicy };
}

/** Runs a check that throws a plain message, as a `ConfigurationError`. */
function configured<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    return fail((error as Error).message);
  }
}

/** Checks options and fills in defaults; throws {@link ConfigurationError} naming the bad option. */
export function resolveOptions(options: AuthorizationServerOptions): ResolvedOptions {
  if (typeof options !== "object" || options === null) fail("options must be an object");
  let url: URL;
  try {
    url = new URL(options.issuer);
  } catch {
    return fail(`"issuer" must be an absolute URL: "${String(options.issuer)}"`);
  }
  if (url.search || url.hash || options.issuer.includes("?") || options.issuer.includes("#")) {
    fail(`"issuer" must have no query or fragment: "${options.issuer}"`);
  }
  const loopback = LOOPBACK_HOSTS.includes(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
    fail(`"issuer" must use https (http only on a loopback host): "${options.issuer}"`);
  }
  const basePath = url.pathname.replace(/\/+$/, "");
  const issuer = url.origin + basePath;

  const scopes = new Map<string, string>();
  if (typeof options.scopes !== "object" || options.scopes === null) fail(`"scopes" must map names to descriptions`);
  for (const [name, description] of Object.entries(options.scopes)) {
    if (!SCOPE_TOKEN.test(name)) fail(`scope names must be RFC 6749 scope tokens: "${name}"`);
    if (typeof description !== "string") fail(`the description of scope "${name}" must be a string`);
    scopes.set(name, description);
  }
  if (scopes.size === 0) fail(`"scopes" must name at least one scope`);

  const profile = resolveProfile(options.profile);
  const defaultScope = options.defaultScope;
  if (defaultScope !== undefined) {
    const tokens = typeof defaultScope === "string" ? defaultScope.split(" ") : [];
    if (tokens.length === 0 || !tokens.every((t) => scopes.has(t))) {
      fail(`"defaultScope" must be a space-delimited list of known scopes: "${String(defaultScope)}"`);
    }
    if (profile.scopePolicy === "single" && tokens.length !== 1) {
      fail(`"defaultScope" must be one scope under the single scope policy: "${defaultScope}"`);
    }
  }

  let secret: Uint8Array;
  if (options.secret === undefined) secret = crypto.getRandomValues(new Uint8Array(32));
  else {
    secret = typeof options.secret === "string" ? new TextEncoder().encode(options.secret) : options.secret;
    if (secret.byteLength < 32) fail(`"secret" must be at least 32 bytes long`);
  }
  if (options.authenticateUser !== undefined && typeof options.authenticateUser !== "function") {
    fail(`"authenticateUser" must be a function`);
  }
  const clock = options.clock ?? Date.now;
  if (typeof clock !== "function") fail(`"clock" must be a function returning milliseconds`);
  const lifetimes = options.lifetimes ?? {};
  const limits = options.limits ?? {};
  const paths = options.paths ?? {};

  return {
    issuer,
    basePath,
    storage: options.storage === undefined
      ? memoryStorage({ clock })
      : withTimeout(options.storage, positive("storageTimeout", options.storageTimeout, 5000, "")),
    throttle: options.throttle === false ? undefined : options.throttle ?? memoryThrottle(),
    authenticateUser: options.authenticateUser,
    scopes,
    ...profile,
    defaultScope,
    resources: configured(() => checkConfiguredResources(options.resources)),
    refreshGraceMs: graceMs(options.refreshGraceSeconds),
    documents: options.clientMetadataDocuments?.enabled === true
      ? clientMetadataDocuments(options.clientMetadataDocuments)
      : null,
    registration: resolveRegistration(options.registration),
    cors: configured(() => resolveCors(options.cors)),
    accessTokenTtl: seconds("accessToken", lifetimes.accessToken, 3600),
    codeTtl: seconds("authorizationCode", lifetimes.authorizationCode, 600),
    refreshTokenTtl: seconds("refreshToken", lifetimes.refreshToken, 30 * 24 * 3600),
    clock,
    paths: {
      authorize: checkPath("authorize", paths.authorize, "/authorize"),
      token: checkPath("token", paths.token, "/token"),
      revoke: checkPath("revoke", paths.revoke, "/revoke"),
      introspect: checkPath("introspect", paths.introspect, "/introspect"),
    },
    secret,
    maxBodyBytes: positive("maxBodyBytes", limits.maxBodyBytes, 16_384),
    bodyTimeout: positive("bodyTimeout", limits.bodyTimeout, DEFAULT_BODY_TIMEOUT),
    formLimits: {
      maxParameters: positive("maxParameters", limits.maxParameters, DEFAULT_FORM_LIMITS.maxParameters),
      maxParameterLength: positive(
        "maxParameterLength",
        limits.maxParameterLength,
        DEFAULT_FORM_LIMITS.maxParameterLength,
      ),
    },
    onError: options.onError ?? (() => {}),
    onEvent: checkHook("onEvent", options.onEvent),
    clientAddress: trustedProxiesOption(options.trustProxy),
  };
}

function checkHook<T>(name: string, hook: T | undefined): T | undefined {
  if (hook !== undefined && typeof hook !== "function") fail(`"${name}" must be a function`);
  return hook;
}

function trustedProxiesOption(value: readonly string[] | undefined): ClientAddressResolver {
  if (value === undefined || (Array.isArray(value) && value.length === 0)) return (peer) => peer;
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) fail(`"trustProxy" must be a list of addresses or CIDR ranges`);
  return trustedProxies(value);
}

/** What every endpoint receives: the resolved options and the keys derived from them. */
export interface ServerContext extends ResolvedOptions {
  /** The HMAC key for CSRF tokens, imported on first use. */
  csrfKey(): Promise<CryptoKey>;
  /** Every grant by its wire name, bound to this server: each sees only the context fields it reads. */
  readonly grants: ReadonlyMap<string, BoundGrant>;
}
