/**
 * The reference server's config file: its format, its checks, and the demo used when there is none.
 *
 * ```json
 * {
 *   "users":   [{ "username": "demo", "password": "demo-password" }],
 *   "scopes":  [{ "name": "reports.read", "description": "Read your analytics reports" }],
 *   "clients": [{ "client_id": "backend", "client_secret": "…", "name": "Backend",
 *                 "redirect_uris": [], "scopes": ["reports.read"], "grant_types": ["client_credentials"] }]
 * }
 * ```
 *
 * @module
 */
import type { ClientRegistration } from "../clients.ts";
import { AdmissionError } from "../core/admission.ts";
import { assemble } from "../core/assemble.ts";
import { ConfigFieldError, configPathOf, fromConfig } from "../core/option_config.ts";
import { checkOptions } from "../core/option_table.ts";
import { ConfigurationError } from "../errors.ts";
import type { AuthorizationServerOptions } from "../options.ts";
import { OPTIONS, SERVER_TABLES } from "../server.ts";
import type { GrantType } from "../storage/types.ts";
import { CONFIG_FIELDS, REFERENCE_FIELDS } from "./config_fields.ts";
import { isPasswordHash } from "./passwords.ts";

export { configSchema } from "./config_fields.ts";

/** A user of the reference server's login form: exactly one of `password_hash` and `password`. */
export interface ConfigUser {
  username: string;
  /** From `oauth2-fetch-server hash-password`: `pbkdf2-sha256$ITERATIONS$SALT$HASH`. */
  password_hash?: string;
  /** Plaintext: accepted so old files keep working, with a warning at start ({@link configWarnings}). */
  password?: string;
  /** Display name; default the username. */
  name?: string;
  /** The e-mail address identity assertions (ID-JAG) are linked by. */
  email?: string;
}

/** A client in the config file; it is confidential exactly when it has a `client_secret` or uses `private_key_jwt`. */
export interface ConfigClient {
  client_id: string;
  client_secret?: string;
  name: string;
  redirect_uris: string[];
  scopes: string[];
  grant_types: GrantType[];
  client_credentials_refresh_token?: boolean;
  /** Space-delimited scope granted when a request names none. */
  default_scope?: string;
  introspection?: "own" | "all";
  /** The client's access-token format, over the top-level `access_token_format`. */
  access_token_format?: "opaque" | "jwt";
  /** How the client authenticates; `private_key_jwt` makes it confidential without a secret. */
  token_endpoint_auth_method?: "client_secret_basic" | "client_secret_post" | "private_key_jwt" | "none";
  /** A `private_key_jwt` client's public keys. */
  jwks?: { keys: Record<string, unknown>[] };
  /** Where a `private_key_jwt` client's public keys are published. */
  jwks_uri?: string;
  /** The client must send a DPoP proof with every token request (RFC 9449 §5.2). */
  dpop_bound_access_tokens?: boolean;
}

/**
 * The config file, checked, with `{ "env": NAME }` values resolved. Keys are the file's own (snake_case); every
 * key but users, scopes and clients is optional. The command line's `--store`, `--secret` and `--trust-proxy`
 * override `store`, `secret` and `trust_proxy` here before the app is built.
 */
export interface ReferenceConfig {
  users: ConfigUser[];
  scopes: { name: string; description: string }[];
  clients: ConfigClient[];
  /** Store URL: `memory`, `sqlite:PATH`, `postgres://…`, `redis://…`. */
  store?: string;
  /** Signing secret shared by every instance of one issuer. */
  secret?: string;
  /** `"single"` (the spec, default) or `"multiple"` (RFC 6749 §3.3): the scope part of the spec profile. */
  scope_policy?: "single" | "multiple";
  /** Space-delimited scope for clients that register themselves. */
  default_scope?: string;
  resources?: string[];
  client_metadata_documents?: { enabled?: boolean; allow_origins?: string[]; max_per_hour?: number; remove_unused_after_days?: number };
  registration?: { enabled?: boolean; initial_access_token?: string; remove_unused_after_days?: number; max_per_hour?: number };
  /** Lifetimes in seconds. */
  lifetimes?: { access_token?: number; authorization_code?: number; refresh_token?: number };
  /** `"opaque"` (default) or `"jwt"` (RFC 9068); a client's own key overrides it. */
  access_token_format?: "opaque" | "jwt";
  /** The `aud` of JWT access tokens bound to no resource; default the issuer. */
  access_token_audience?: string;
  /** The keys that sign JWT access tokens; setting it (or access_token_format) serves /jwks. */
  signing_keys?: { algorithm?: "ES256" | "EdDSA" | "RS256" | "PS256"; rotate_after_days?: number; retire_after_days?: number };
  /** DPoP (RFC 9449): sender-constrained tokens; `require_nonce` makes every proof carry a server nonce. */
  dpop?: { enabled?: boolean; require_nonce?: boolean };
  cors?: { origins?: string[] };
  /** Identity providers and workload platforms whose JWTs the jwt-bearer grant and token exchange accept. */
  trusted_issuers?: {
    issuer: string;
    jwks_uri?: string;
    jwks?: { keys: Record<string, unknown>[] };
    kind: "id-jag" | "workload";
    clients: string[];
    scopes: string[];
    audiences?: string[];
  }[];
  /** Token exchange (RFC 8693). */
  token_exchange?: { enabled?: boolean };
  /** The device authorization grant (RFC 8628); `expires_in` and `interval` in seconds. */
  device_authorization?: { enabled?: boolean; expires_in?: number; interval?: number };
  refresh_grace_seconds?: number;
  /** Refresh tokens of the code flow only when `offline_access` is granted (MCP 2026-07-28). */
  offline_access?: boolean;
  /** Addresses or CIDR ranges of trusted reverse proxies. */
  trust_proxy?: string[];
  /** Seconds a request body may take to arrive (408 past it). */
  body_timeout_seconds?: number;
  /** Milliseconds a durable store's access token is served from this process's cache; 0 turns it off. */
  token_cache_ms?: number;
  /** Audit events as JSON lines: `"stderr"` or a file path. */
  audit_log?: string;
  metrics?: { enabled?: boolean };
}

/** The redirect URI of the demo clients: nothing listens there; the code is read from the address bar. */
export const DEMO_REDIRECT_URI = "http://127.0.0.1:9999/callback";

/** The demo seeded when no config file is given. Its secrets are public: never use it beyond a laptop. */
export const DEMO_CONFIG: ReferenceConfig = {
  users: [{ username: "demo", password: "demo-password", name: "Demo User" }],
  scopes: [
    { name: "reports.read", description: "Read your analytics reports and dashboards" },
    { name: "reports.write", description: "Create and edit your analytics reports" },
    { name: "exports", description: "Run scheduled exports of your analytics data" },
    { name: "admin", description: "Manage users and billing of your analytics account" },
  ],
  clients: [
    {
      client_id: "demo-spa",
      name: "Demo Dashboard (single-page app)",
      redirect_uris: [DEMO_REDIRECT_URI],
      scopes: ["reports.read", "reports.write"],
      grant_types: ["authorization_code", "refresh_token"],
    },
    {
      client_id: "demo-web",
      client_secret: "demo-web-secret-change-me",
      name: "Demo Reporting (web app)",
      redirect_uris: [DEMO_REDIRECT_URI],
      scopes: ["reports.read", "reports.write"],
      grant_types: ["authorization_code", "refresh_token"],
    },
    {
      client_id: "demo-backend",
      client_secret: "demo-backend-secret-change-me",
      name: "Demo Export Job",
      redirect_uris: [],
      scopes: ["exports", "reports.read"],
      grant_types: ["client_credentials"],
    },
    {
      client_id: "demo-backend-refresh",
      client_secret: "demo-backend-refresh-secret",
      name: "Demo Integration",
      redirect_uris: [],
      scopes: ["exports"],
      grant_types: ["client_credentials", "refresh_token"],
      client_credentials_refresh_token: true,
    },
    {
      client_id: "demo-other",
      name: "Demo Other App",
      redirect_uris: ["http://127.0.0.1:9999/other"],
      scopes: ["reports.read"],
      grant_types: ["authorization_code", "refresh_token"],
    },
  ],
};

/**
 * Checks a parsed config file against the config table (the library's option table and the reference server's
 * own keys) and the library's own checks; throws `ConfigurationError` naming the file, the JSON path and the
 * problem: `Cannot load config "app.json": clients[0].clientSecret: unknown key (did you mean "client_secret"?)`.
 * Values written `{ "env": "NAME" }` are read from `env` (the CLI passes the process environment). Each client
 * passes the one door for clients when the server starts, with the same error type.
 */
export function parseConfig(
  value: unknown,
  source: string,
  env: (name: string) => string | undefined = () => undefined,
): ReferenceConfig {
  const fail = (path: string, message: string): never => {
    throw new ConfigurationError(`Cannot load config "${source}": ${path === "" ? "" : `${path}: `}${message}`, path);
  };
  let config: ReferenceConfig;
  try {
    config = fromConfig(CONFIG_FIELDS, value, "", env, ["scopes"]).config as unknown as ReferenceConfig;
    const scopes = Object.fromEntries(config.scopes.map((s) => [s.name, s.description]));
    // The library's own checks, then each client through the server's one door, as at every start.
    const { core } = assemble({ ...libraryOptions(config), scopes, issuer: "http://127.0.0.1" }, SERVER_TABLES);
    for (const [i, client] of (config.clients ?? []).entries()) {
      try {
        core.admission.admit(configClient(client), { origin: "config" });
      } catch (error) {
        if (!(error instanceof AdmissionError)) throw error;
        return fail(`clients[${i}].${error.field}`, error.message.replace(/^Cannot register client: /, ""));
      }
    }
  } catch (error) {
    if (error instanceof ConfigurationError && error.message.startsWith("Cannot load config")) throw error;
    if (error instanceof ConfigFieldError) return fail(error.path === "" ? "the top level" : error.path, error.message);
    if (error instanceof ConfigurationError && error.option !== undefined) {
      return fail(configPathOf(OPTIONS, error.option) ?? error.option, error.message.replace(/^Cannot create server: "[^"]*" /, ""));
    }
    throw error;
  }
  config.users ??= [];
  config.clients ??= [];
  delete (config as { $schema?: unknown }).$schema;
  unique(config.users.map((u) => u.username), (i, name) => fail(`users[${i}].username`, `"${name}" appears twice`));
  // Each user's password; and one user per address: identity assertions are linked by it, so two users sharing one would be ambiguous.
  const emails = new Set<string>();
  config.users.forEach((u, i) => {
    if ((u.password === undefined) === (u.password_hash === undefined)) fail(`users[${i}]`, 'give exactly one of "password_hash" and "password"');
    if (u.password_hash !== undefined && !isPasswordHash(u.password_hash)) {
      fail(`users[${i}].password_hash`, "is not a hash from `oauth2-fetch-server hash-password`");
    }
    const email = u.email?.toLowerCase();
    if (email !== undefined && emails.has(email)) fail(`users[${i}].email`, `"${u.email}" appears twice`);
    if (email !== undefined) emails.add(email);
  });
  unique(config.scopes.map((s) => s.name), (i, name) => fail(`scopes[${i}].name`, `"${name}" appears twice`));
  unique(config.clients.map((c) => c.client_id), (i, id) => fail(`clients[${i}].client_id`, `"${id}" appears twice`));
  return config;
}

/**
 * A client of the config file as a registration: it is confidential exactly when it has a secret or signs with
 * its own key (`private_key_jwt`).
 */
export function configClient(c: ConfigClient): ClientRegistration {
  return {
    client_id: c.client_id,
    ...(c.client_secret === undefined ? {} : { client_secret: c.client_secret }),
    name: c.name,
    type: c.client_secret === undefined && c.token_endpoint_auth_method !== "private_key_jwt" ? "public" : "confidential",
    redirect_uris: c.redirect_uris ?? [],
    scopes: c.scopes,
    grant_types: c.grant_types,
    client_credentials_refresh_token: c.client_credentials_refresh_token === true,
    ...(c.default_scope === undefined ? {} : { default_scope: c.default_scope }),
    ...(c.introspection === undefined ? {} : { introspection: c.introspection }),
    ...(c.access_token_format === undefined ? {} : { access_token_format: c.access_token_format }),
    ...(c.token_endpoint_auth_method === undefined ? {} : { token_endpoint_auth_method: c.token_endpoint_auth_method }),
    ...(c.jwks === undefined ? {} : { jwks: c.jwks }),
    ...(c.jwks_uri === undefined ? {} : { jwks_uri: c.jwks_uri }),
    ...(c.dpop_bound_access_tokens === undefined ? {} : { dpop_bound_access_tokens: c.dpop_bound_access_tokens }),
  };
}

/**
 * The library options a config file sets (its keys that are library options, converted), checked by the
 * library's own option checks; a problem is a `ConfigurationError` whose `option` is the option's path.
 */
export function libraryOptions(config: ReferenceConfig): Partial<AuthorizationServerOptions> {
  const reference = new Set(REFERENCE_FIELDS.map((f) => f.key));
  const library = Object.fromEntries(Object.entries(config).filter(([key]) => !reference.has(key)));
  const { options } = fromConfig(OPTIONS.filter((o) => o.config !== null), library, "", () => undefined);
  checkOptions(OPTIONS, options);
  return options as Partial<AuthorizationServerOptions>;
}

/** Warnings to print at start: each user whose password is in plaintext, and whether it is also short. */
export function configWarnings(config: ReferenceConfig, source: string): string[] {
  return config.users
    .filter((u) => u.password !== undefined)
    .map((u) =>
      `warning: config "${source}": user "${u.username}" has a plaintext "password"` +
      ((u.password ?? "").length < 12 ? " of fewer than 12 characters" : "") +
      '; replace it with "password_hash" from `oauth2-fetch-server hash-password`'
    );
}

/** The set of `names`; calls `duplicate(index, name)` at the first repeat. */
function unique(names: string[], duplicate: (index: number, name: string) => void): Set<string> {
  const seen = new Set<string>();
  names.forEach((name, i) => {
    if (seen.has(name)) duplicate(i, name);
    seen.add(name);
  });
  return seen;
}
