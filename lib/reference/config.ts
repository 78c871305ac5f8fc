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
import { ConfigurationError } from "../errors.ts";
import type { GrantType } from "../storage/types.ts";
import { checkField, CONFIG_FILE, FieldError } from "./config_fields.ts";
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
}

/** A client in the config file; it is confidential exactly when it has a `client_secret`. */
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
  client_metadata_documents?: { enabled?: boolean; allow_origins?: string[] };
  registration?: { enabled?: boolean; initial_access_token?: string; remove_unused_after_days?: number };
  cors?: { origins?: string[] };
  refresh_grace_seconds?: number;
  /** Addresses or CIDR ranges of trusted reverse proxies. */
  trust_proxy?: string[];
  /** Seconds a request body may take to arrive (408 past it). */
  body_timeout_seconds?: number;
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
 * Checks a parsed config file against {@link CONFIG_FILE} and the rules between fields; throws
 * `ConfigurationError` naming the file, the JSON path and the problem:
 * `Cannot load config "app.json": clients[0].clientSecret: unknown key (did you mean "client_secret"?)`.
 * Values written `{ "env": "NAME" }` are read from `env` (the CLI passes the process environment).
 * Deeper checks (redirect URI rules, known scopes) happen at client registration, with the same error type.
 */
export function parseConfig(
  value: unknown,
  source: string,
  env: (name: string) => string | undefined = () => undefined,
): ReferenceConfig {
  const fail = (path: string, message: string): never => {
    throw new ConfigurationError(`Cannot load config "${source}": ${path === "" ? "" : `${path}: `}${message}`);
  };
  let config: ReferenceConfig;
  try {
    config = checkField(CONFIG_FILE, value, "", env) as ReferenceConfig;
  } catch (error) {
    if (error instanceof FieldError) return fail(error.path === "" ? "the top level" : error.path, error.message);
    throw error;
  }
  config.users ??= [];
  config.clients ??= [];
  delete (config as { $schema?: unknown }).$schema;
  if (config.scopes.length === 0) fail("scopes", "must name at least one scope");
  const scopeNames = unique(config.scopes.map((s) => s.name), (i, name) => fail(`scopes[${i}].name`, `"${name}" appears twice`));
  const knownScope = (path: string, scope: string, within: Set<string> = scopeNames) => {
    for (const s of scope.split(" ")) if (!within.has(s)) fail(path, `"${s}" is not ${within === scopeNames ? "a declared scope" : "one of the client's scopes"}`);
  };
  unique(config.users.map((u) => u.username), (i, name) => fail(`users[${i}].username`, `"${name}" appears twice`));
  config.users.forEach((u, i) => {
    if ((u.password === undefined) === (u.password_hash === undefined)) fail(`users[${i}]`, 'give exactly one of "password_hash" and "password"');
    if (u.password_hash !== undefined && !isPasswordHash(u.password_hash)) {
      fail(`users[${i}].password_hash`, "is not a hash from `oauth2-fetch-server hash-password`");
    }
  });
  unique(config.clients.map((c) => c.client_id), (i, id) => fail(`clients[${i}].client_id`, `"${id}" appears twice`));
  config.clients.forEach((c, i) => {
    const at = `clients[${i}]`;
    c.redirect_uris ??= [];
    if (c.client_credentials_refresh_token === true && !c.grant_types.includes("refresh_token")) {
      fail(`${at}.client_credentials_refresh_token`, 'is true but grant_types lacks "refresh_token", so no refresh token could be used');
    }
    if (c.client_credentials_refresh_token === true && !c.grant_types.includes("client_credentials")) {
      fail(`${at}.client_credentials_refresh_token`, 'is true but grant_types lacks "client_credentials"');
    }
    if (c.client_secret === undefined && c.grant_types.includes("client_credentials")) {
      fail(`${at}.grant_types`, 'a public client (no client_secret) cannot use "client_credentials"');
    }
    if (c.default_scope !== undefined) {
      knownScope(`${at}.default_scope`, c.default_scope, new Set(c.scopes));
      if (config.scope_policy !== "multiple" && c.default_scope.includes(" ")) {
        fail(`${at}.default_scope`, 'names several scopes, but scope_policy is "single" (one scope per request)');
      }
    }
  });
  if (config.default_scope !== undefined) {
    knownScope("default_scope", config.default_scope);
    if (config.scope_policy !== "multiple" && config.default_scope.includes(" ")) {
      fail("default_scope", 'names several scopes, but scope_policy is "single" (one scope per request)');
    }
  }
  if (config.registration?.initial_access_token !== undefined && config.registration.enabled !== true) {
    fail("registration.initial_access_token", "is set but registration.enabled is not true");
  }
  if (config.client_metadata_documents?.allow_origins !== undefined && config.client_metadata_documents.enabled !== true) {
    fail("client_metadata_documents.allow_origins", "is set but client_metadata_documents.enabled is not true");
  }
  if (config.secret !== undefined && config.secret.length < 32) fail("secret", "must be at least 32 characters");
  return config;
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
