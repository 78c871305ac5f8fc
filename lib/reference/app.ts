/**
 * The reference server as a runtime-neutral app: the authorization server, the built-in password login, and a
 * sample protected API, so the whole round trip can be seen. The entry points in `lib/cli/` serve it on Node,
 * Deno and Bun; the conformance suite can load it in process, with no socket.
 *
 * @module
 */
import { trustedProxies } from "../proxy.ts";
import type { AuditEvent } from "../audit.ts";
import { passwordLogin } from "../consent/login.ts";
import { errorPage } from "../consent/pages.ts";
import { base64url, timingSafeEqual } from "../crypto.ts";
import { sha256 } from "../sha256.ts";
import { AdmissionError } from "../core/admission.ts";
import { errorJson } from "../core/render.ts";
import { ConfigurationError, OAuthError } from "../errors.ts";
import { jsonResponse, pathOf, respond, type ResponseParts, targetOf } from "../http.ts";
import type { EndUser } from "../options.ts";
import { type AuthorizationServer, createAuthorizationServer } from "../server.ts";
import { localTokenVerifier, type ProtectedResource, protectedResource } from "../resource_server.ts";
import { memoryStorage } from "../storage/memory.ts";
import type { Storage } from "../storage/types.ts";
import { configClient, type ConfigUser, DEMO_CONFIG, libraryOptions, type ReferenceConfig } from "./config.ts";
import { connectedApps } from "./connected_apps.ts";
import { createMetrics } from "./metrics.ts";
import { observe, watchEvents } from "./observe.ts";
import { verifyPassword } from "./passwords.ts";

/** Options of {@link createReferenceApp}. */
export interface ReferenceAppOptions {
  /** The base URL the app is served at, e.g. `http://127.0.0.1:8080`. */
  issuer: string;
  /** Users, scopes and clients; default {@link DEMO_CONFIG}. */
  config?: ReferenceConfig;
  /** Where clients, codes, tokens and grants live. Default: a new memory store. */
  storage?: Storage;
  /**
   * Signing secret of login sessions and CSRF tokens (at least 32 characters). Default: `config.secret`, else
   * one generated for this app alone. Never kept in the store: whoever can read a store must not be able to
   * forge a session from it. Instances that share a store share this secret through their configuration
   * (the command line reads it from `--secret`, `OAUTH2_FETCH_SERVER_SECRET` or a key file; see secrets.md).
   */
  secret?: string;
  /** How often expired records are purged from the store, in ms; 0 never. Default 60 000. */
  purgeInterval?: number;
  clock?: () => number;
  /** PBKDF2 iterations for the users' passwords. Default 100 000; tests lower it. */
  passwordIterations?: number;
  onError?: (error: unknown, context: { endpoint: string; method: string; path: string }) => void;
  /** Receives one JSON line per request (the request log); none = no log. The CLI prints them on stdout. */
  log?: (line: string) => void;
  /** Audit events (see `AuditEvent`), e.g. written as JSON lines. */
  onEvent?: (event: AuditEvent) => void;
  /** How client metadata documents are fetched (default the global `fetch`); the conformance tests plant broken ones. */
  fetchDocument?: (request: Request) => Promise<Response>;
}

/** The reference app: the server plus its two handlers. */
export interface ReferenceApp {
  server: AuthorizationServer;
  /** Web-standard handler for everything: OAuth endpoints, `/api/*`, and a landing page. */
  fetch: (request: Request, info?: unknown) => Promise<Response>;
  /** Stops the periodic purge; the store itself belongs to the caller. */
  close(): void;
}

const REPORTS = [
  { id: "weekly-visits", title: "Weekly visits", visits: 18_204 },
  { id: "top-pages", title: "Top pages", pages: ["/", "/pricing", "/docs"] },
];

/**
 * The configured server on a store, for the operator's commands (`clients add`, `rotate-secret`, `keys …`): its
 * client registry is the one door with the server's own rules. It serves nothing, so its issuer plays no part.
 * Without a config file it knows no scopes, so the ones asked for are declared. With `secret` (the servers' own,
 * as `serve` resolves it) its signing keys are the serving instances' keys, on even without `signing_keys`.
 */
export function adminServer(
  config: ReferenceConfig | undefined,
  storage: Storage,
  scopes: readonly string[],
  secret?: string,
): AuthorizationServer {
  const fromFile = config === undefined ? {} : libraryOptions(config);
  return createAuthorizationServer({
    profile: { specAddresses: true, scopePolicy: "single" },
    ...fromFile,
    ...(secret === undefined ? {} : { secret: librarySecret(secret), signingKeys: fromFile.signingKeys ?? {} }),
    scopes: Object.fromEntries(config === undefined ? scopes.map((s) => [s, s]) : config.scopes.map((s) => [s.name, s.description])),
    issuer: "http://127.0.0.1",
    storage,
  });
}

/** The library's secret (CSRF tokens, the signing keys' sealing key), derived from the shared one. */
const librarySecret = (secret: string): string => sha256(`csrf\u0000${secret}`);

/** Builds the reference app. Resolves once the users' password hashes and the clients are ready. */
export async function createReferenceApp(options: ReferenceAppOptions): Promise<ReferenceApp> {
  const config = options.config ?? DEMO_CONFIG;
  const clock = options.clock ?? Date.now;
  const users = await hashUsers(config.users, options.passwordIterations ?? 100_000);
  const storage = options.storage ?? memoryStorage({ clock });
  const secret = options.secret ?? config.secret ?? base64url(crypto.getRandomValues(new Uint8Array(32)));
  const login = passwordLogin({
    verify: (username, password) => users.verify(username, password),
    secret: sha256(`login-session\u0000${secret}`),
    clock,
    // A logout ends the session in the store, for every instance; through the server's store, so that a hung
    // database gets the same storageTimeout (503) as the endpoints instead of holding the request forever.
    sessions: {
      markOnce: (key, expiresAt, now) => server.storage.markOnce(key, expiresAt, now),
      isMarked: (key, now) => server.storage.isMarked(key, now),
    },
  });
  const metrics = config.metrics?.enabled === true ? createMetrics() : undefined;
  // Refused client metadata documents: counted, and logged at most once a minute, never with a stack.
  const watched = watchEvents({ log: options.log, metrics, clock });
  const fromFile = libraryOptions(config);
  if (options.fetchDocument !== undefined && fromFile.clientMetadataDocuments !== undefined) {
    fromFile.clientMetadataDocuments = { ...fromFile.clientMetadataDocuments, fetch: options.fetchDocument };
  }
  const server = createAuthorizationServer({
    // The spec's addresses always; its one-scope rule unless the config asks for several.
    profile: { specAddresses: true, scopePolicy: "single" },
    ...fromFile,
    scopes: Object.fromEntries(config.scopes.map((s) => [s.name, s.description])),
    issuer: options.issuer,
    clock,
    storage,
    // One key per use, derived from the shared secret: a CSRF token can never pass for a session, or back.
    secret: librarySecret(secret),
    ...(options.onError ? { onError: options.onError } : {}),
    onEvent: (event) => {
      watched(event);
      options.onEvent?.(event);
    },
    ...(config.body_timeout_seconds === undefined ? {} : { limits: { bodyTimeout: config.body_timeout_seconds * 1000 } }),
    authenticateUser: login,
    // Identity assertions (ID-JAG) of trusted issuers: the user whose configured email the assertion names.
    linkUser: linkByEmail(config.users),
  });
  // Signing keys: a runtime without the algorithm, or a secret that does not open the stored keys, stops the start.
  await server.keys.ready();
  await writeConfigClients(config, server);
  const purge = schedulePurge(storage, options.purgeInterval ?? 60_000, clock, options.onError);

  // Connected apps: the signed-in user's grants, each revocable (CSRF-protected, not frameable).
  const apps = connectedApps({
    storage: server.storage,
    authenticateUser: login,
    scopes: Object.fromEntries(config.scopes.map((s) => [s.name, s.description])),
    secret: sha256(`connected-apps\u0000${secret}`),
    clock,
    issuer: server.issuer,
    ...(config.trust_proxy ? { clientAddress: trustedProxies(config.trust_proxy) } : {}),
  });
  const sampleApi = sampleResource(server, config, options.onError);
  /** A page's failure (the store down or slow) as the router renders one: reported, then an error page. */
  const page = async (request: Request, endpoint: string, handler: () => Promise<Response>): Promise<Response> => {
    try {
      return await handler();
    } catch (error) {
      options.onError?.(error, { endpoint, method: request.method, path: pathOf(targetOf(request.url)) });
      // Never the exception's message: it may hold internals. A store timeout keeps its 503 and Retry-After.
      const oauth = error instanceof OAuthError && error.status >= 500 ? error : new OAuthError("server_error");
      const parts = errorPage(oauth.status, "Please try again shortly", "The service could not complete the request.");
      for (const name in oauth.headers) parts.headers.push([name, oauth.headers[name]!]);
      return respond(request, parts);
    }
  };
  const route = async (request: Request, info?: unknown): Promise<Response> => {
    const path = pathOf(targetOf(request.url));
    if (path.startsWith("/.well-known/oauth-protected-resource")) {
      const metadata = sampleApi.resource.metadataResponse(request);
      if (metadata) return metadata;
    }
    const read = request.method === "GET" || request.method === "HEAD";
    const routes = sampleApi.routes.get(path);
    if (routes) {
      const handler = routes.get(read ? "GET" : request.method);
      if (handler) return handler(request);
      const allow = [...routes.keys()].flatMap((m) => (m === "GET" ? ["GET", "HEAD"] : [m])).join(", ");
      return respond(request, errorJson(new OAuthError("invalid_request", { status: 405, headers: { allow } })));
    }
    if (path === "/" && read) return respond(request, landing(server));
    if (path === `${new URL(server.issuer).pathname.replace(/\/$/, "")}/account/apps`) return page(request, "connected_apps", () => apps(request, info));
    if (path === `${new URL(server.issuer).pathname.replace(/\/$/, "")}/logout`) return page(request, "logout", () => login.logout(request));
    return server.fetch(request, info);
  };
  // The request log, /healthz, /readyz, and /metrics when the config enables it (never public by accident).
  const observed = observe(route, {
    log: options.log,
    metrics,
    ready: () => server.storage.getClient("readyz-probe"),
    basePath: new URL(server.issuer).pathname.replace(/\/$/, ""),
  });
  return { server, fetch: observed, close: () => clearInterval(purge) };
}

/** The scopes the sample API's routes need, as its RFC 9728 metadata lists them (those the config declares). */
const SAMPLE_SCOPES = ["reports.read", "reports.write"];

/**
 * The sample protected API (spec §4.3), guarded the way the README tells users to guard theirs: by
 * `protectedResource` for the resource `{issuer}/api`, with RFC 9728 metadata listing the scopes its routes use
 * and 401/403 challenges that point at it. `GET /api/reports` needs `reports.read`, `POST /api/reports`
 * `reports.write` (it stores nothing), `GET /api/me` any valid token. A token bound to another resource (an
 * MCP server's) is refused; a token bound to none is taken, because the spec's clients never send `resource`.
 */
function sampleResource(
  server: AuthorizationServer,
  config: ReferenceConfig,
  onError: ReferenceAppOptions["onError"],
): { resource: ProtectedResource; routes: Map<string, Map<string, (request: Request) => Promise<Response>>> } {
  const known = new Set(config.scopes.map((s) => s.name));
  const scopes = SAMPLE_SCOPES.filter((s) => known.has(s));
  const resource = protectedResource({
    resource: `${server.issuer}/api`,
    authorizationServers: [server.issuer],
    verify: localTokenVerifier(server),
    ...(scopes.length > 0 ? { scopesSupported: scopes } : {}),
    resourceName: "Sample reports API",
    requireAudience: false,
    ...(onError ? { onError } : {}),
  });
  const json = (status: number, body: unknown) => (request: Request) => respond(request, jsonResponse(status, body));
  const routes = new Map([
    ["/api/reports", new Map([
      ["GET", resource.protect(["reports.read"], (r, token) => json(200, { reports: REPORTS, token })(r))],
      ["POST", resource.protect(["reports.write"], (r, token) => json(202, { accepted: true, stored: false, token })(r))],
    ])],
    ["/api/me", new Map([["GET", resource.protect(undefined, (r, token) => json(200, { token })(r))]])],
  ]);
  return { resource, routes };
}

/**
 * Writes the config file's clients into the store at every start, through the one door for clients. The config
 * file wins for what it says (name, secret, redirect URIs, scopes, grant types); the store keeps what happened
 * since (paused or not, created_at, last_used_at). A client the config file created and no longer names is
 * deleted, with its tokens.
 */
async function writeConfigClients(config: ReferenceConfig, server: AuthorizationServer): Promise<void> {
  const { storage } = server;
  const named = new Set(config.clients.map((c) => c.client_id));
  for (const stored of await storage.listClients()) {
    if (stored.origin === "config" && !named.has(stored.client_id)) await storage.deleteClient(stored.client_id);
  }
  for (const [i, c] of config.clients.entries()) {
    try {
      await server.clients.register(configClient(c), { origin: "config", keepState: true });
    } catch (error) {
      if (!(error instanceof AdmissionError)) throw error;
      throw new ConfigurationError(`Cannot load config: clients[${i}].${error.field}: ${error.message.replace(/^Cannot register client: /, "")}`, `clients[${i}].${error.field}`);
    }
  }
}

/**
 * Purges expired records every `interval` ms, one purge at a time, on a timer that does not keep the process
 * alive. A failed purge (the database away) is reported and tried again at the next tick.
 */
function schedulePurge(
  storage: Storage,
  interval: number,
  clock: () => number,
  onError: ReferenceAppOptions["onError"],
): ReturnType<typeof setInterval> | undefined {
  if (!(interval > 0)) return undefined;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    storage.purgeExpired(clock()).catch((error: unknown) => {
      onError?.(error, { endpoint: "purge", method: "", path: "" });
    }).finally(() => (running = false));
  }, interval);
  (timer as { unref?: () => void }).unref?.();
  return timer;
}

/**
 * Links an identity assertion to the user whose `email` it names, compared without case (the draft §3 recommends
 * the claim for subject resolution). An address the issuer marks unverified never reaches here.
 */
function linkByEmail(users: readonly ConfigUser[]): (identity: { email?: string }) => string | null {
  const byEmail = new Map(users.flatMap((u) => (u.email === undefined ? [] : [[u.email.toLowerCase(), u.username] as const])));
  return (identity) => (identity.email === undefined ? null : byEmail.get(identity.email.toLowerCase()) ?? null);
}

function landing(server: AuthorizationServer): ResponseParts {
  const body = [
    "oauth2-fetch-server reference server",
    "",
    `authorize: GET  ${server.issuer}/index.php?module=OAuth2&action=authorize`,
    `token:     POST ${server.issuer}/index.php?module=OAuth2&action=token`,
    `metadata:  GET  ${server.issuer}/.well-known/oauth-authorization-server`,
    `sample API: GET ${server.issuer}/api/reports (scope reports.read), POST ${server.issuer}/api/reports (reports.write), GET ${server.issuer}/api/me`,
    `resource metadata: GET ${new URL(server.issuer).origin}/.well-known/oauth-protected-resource`,
    `connected apps (for users): ${server.issuer}/account/apps`,
    `health: GET ${server.issuer}/healthz, GET ${server.issuer}/readyz`,
    "",
  ].join("\n");
  return { status: 200, headers: [["content-type", "text/plain;charset=UTF-8"]], body };
}

/** Users with PBKDF2-SHA-256 password hashes: from the config's `password_hash`, or derived at start from a plaintext `password`. */
async function hashUsers(users: ConfigUser[], iterations: number) {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const derive = async (password: string) => {
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(password), "PBKDF2", false, ["deriveBits"]);
    const bits = await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, key, 256);
    return base64url(new Uint8Array(bits));
  };
  const table = new Map<string, { check: (password: string) => Promise<boolean>; user: EndUser }>();
  for (const u of users) {
    const user = { id: u.username, name: u.name ?? u.username };
    if (u.password_hash !== undefined) {
      const stored = u.password_hash;
      table.set(u.username, { check: (password) => verifyPassword(password, stored), user });
    } else {
      const hash = await derive(u.password ?? "");
      table.set(u.username, { check: async (password) => timingSafeEqual(await derive(password), hash), user });
    }
  }
  const decoy = await derive(base64url(crypto.getRandomValues(new Uint8Array(16))));
  // With hashed users, an unknown name costs what a hashed user's check costs (same iterations).
  const decoyHash = users.find((u) => u.password_hash !== undefined)?.password_hash;
  return {
    async verify(username: string, password: string): Promise<EndUser | null> {
      const entry = table.get(username);
      // Derive even for an unknown user, so the answer's timing does not reveal which usernames exist.
      if (!entry) return (decoyHash ? await verifyPassword(password, decoyHash) : timingSafeEqual(await derive(password), decoy), null);
      return (await entry.check(password)) ? entry.user : null;
    },
  };
}
