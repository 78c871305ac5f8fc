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

/** A user of the reference server's login form. */
export interface ConfigUser {
  username: string;
  password: string;
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
}

/** The config file. */
export interface ReferenceConfig {
  users: ConfigUser[];
  scopes: { name: string; description: string }[];
  clients: ConfigClient[];
  /** `"single"` (the spec, default) or `"multiple"` (RFC 6749 §3.3): the scope part of the spec profile. */
  scope_policy?: "single" | "multiple";
  /** Space-delimited scope for clients that register themselves. */
  default_scope?: string;
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

const TOP_LEVEL_KEYS = ["users", "scopes", "clients", "scope_policy", "default_scope"];
const isString = (v: unknown): v is string => typeof v === "string" && v !== "";
const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === "string");

/**
 * Checks a parsed config file; throws `ConfigurationError` naming the file and the entry at fault. Deeper
 * checks (redirect URI rules, known scopes, grant types) happen at client registration, with the same error type.
 */
export function parseConfig(value: unknown, source: string): ReferenceConfig {
  const fail = (message: string): never => {
    throw new ConfigurationError(`Cannot load config "${source}": ${message}`);
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) return fail("the top level must be an object");
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v)) {
    if (!TOP_LEVEL_KEYS.includes(key)) fail(`unknown key "${key}" (expected ${TOP_LEVEL_KEYS.join(", ")})`);
  }
  const users = v.users ?? [];
  const scopes = v.scopes;
  const clients = v.clients;
  if (!Array.isArray(users)) return fail(`"users" must be a list`);
  if (!Array.isArray(scopes) || scopes.length === 0) return fail(`"scopes" must be a non-empty list`);
  if (!Array.isArray(clients)) return fail(`"clients" must be a list`);
  users.forEach((u, i) => {
    if (!isString(u?.username) || !isString(u?.password)) fail(`users[${i}] needs "username" and "password" strings`);
    if (u.name !== undefined && typeof u.name !== "string") fail(`users[${i}].name must be a string`);
  });
  const names = new Set(users.map((u: ConfigUser) => u.username));
  if (names.size !== users.length) fail(`two users share a username`);
  scopes.forEach((s, i) => {
    if (!isString(s?.name) || typeof s?.description !== "string") fail(`scopes[${i}] needs "name" and "description"`);
  });
  if (v.scope_policy !== undefined && v.scope_policy !== "single" && v.scope_policy !== "multiple") {
    fail(`"scope_policy" must be "single" or "multiple"`);
  }
  if (v.default_scope !== undefined && !isString(v.default_scope)) fail(`"default_scope" must be a non-empty string`);
  const ids = new Set<string>();
  clients.forEach((c, i) => {
    const at = `clients[${i}]`;
    if (typeof c !== "object" || c === null) fail(`${at} must be an object`);
    if (!isString(c.client_id)) fail(`${at}.client_id must be a non-empty string`);
    if (ids.has(c.client_id)) fail(`client_id "${c.client_id}" appears twice`);
    ids.add(c.client_id);
    if (c.client_secret !== undefined && !isString(c.client_secret)) fail(`${at}.client_secret must be a string`);
    if (!isString(c.name)) fail(`${at}.name must be a non-empty string`);
    if (!isStringList(c.redirect_uris ?? [])) fail(`${at}.redirect_uris must be a list of strings`);
    if (!isStringList(c.scopes)) fail(`${at}.scopes must be a list of strings`);
    if (!isStringList(c.grant_types)) fail(`${at}.grant_types must be a list of strings`);
    if (c.client_credentials_refresh_token !== undefined && typeof c.client_credentials_refresh_token !== "boolean") {
      fail(`${at}.client_credentials_refresh_token must be true or false`);
    }
    if (c.default_scope !== undefined && !isString(c.default_scope)) fail(`${at}.default_scope must be a non-empty string`);
  });
  const config = { users, scopes, clients } as ReferenceConfig;
  if (v.scope_policy !== undefined) config.scope_policy = v.scope_policy as "single" | "multiple";
  if (v.default_scope !== undefined) config.default_scope = v.default_scope as string;
  return config;
}
