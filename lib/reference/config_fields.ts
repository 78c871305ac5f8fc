/**
 * The reference server's config file as one table: the library's option table (each option under its
 * snake_case config key) and the keys only the reference server has (users, clients, store, logs). The parser
 * walks it, and `config.schema.json` beside it is generated from it (`npm run schema`), so the two cannot
 * drift apart.
 *
 * @module
 */
import { configSchema as schemaOf } from "../core/option_config.ts";
import { JWK_SET_TYPE } from "../core/client_keys.ts";
import type { OptionSpec, OptionType } from "../core/option_table.ts";
import { JWT_BEARER } from "../features/jwt_bearer.ts";
import { TOKEN_EXCHANGE } from "../features/token_exchange.ts";
import { DEVICE_CODE_GRANT } from "../grants/device_code.ts";
import { GRANTS } from "../grants/registry.ts";
import { OPTIONS } from "../server.ts";

const str = (key: string, doc: string, more: { secret?: boolean; enum?: readonly string[] } = {}): OptionSpec => ({
  key,
  type: { kind: "string", ...more },
  doc,
});
const bool = (key: string, doc: string): OptionSpec => ({ key, type: { kind: "boolean" }, doc });
const strings = (key: string, doc: string): OptionSpec => ({ key, type: { kind: "list", items: { kind: "string" } }, doc });

const USER: OptionType = {
  kind: "object",
  required: ["username"],
  fields: [
    str("username", "The name typed at the login form; also the user id in tokens."),
    str("password_hash", 'A hash from `oauth2-fetch-server hash-password` ("pbkdf2-sha256$…").', { secret: true }),
    str("password", "Plaintext password: works, but the server warns at start. Prefer password_hash.", { secret: true }),
    str("name", "Display name; default the username."),
    str("email", "The user's e-mail address: identity assertions (ID-JAG) of trusted issuers are linked to the user by it."),
  ],
};

const CLIENT: OptionType = {
  kind: "object",
  required: ["client_id", "name", "scopes", "grant_types"],
  fields: [
    str("client_id", "The client identifier."),
    str("client_secret", "The client secret (at least 16 characters); only its SHA-256 is stored.", { secret: true }),
    str("name", "Shown on the consent page."),
    strings("redirect_uris", "Exact redirect URIs: https, http on loopback (any port), or a native app's private-use scheme."),
    strings("scopes", "Scopes the client may ask for; each must be declared in the top-level scopes."),
    {
      key: "grant_types",
      // The grants of features too; a client naming one whose feature is off is refused at start.
      type: { kind: "list", items: { kind: "string", enum: [...Object.keys(GRANTS), JWT_BEARER, TOKEN_EXCHANGE, DEVICE_CODE_GRANT] } },
      doc: "Grant types the client may use.",
    },
    bool("client_credentials_refresh_token", "Whether a client_credentials response carries a refresh token (needs the refresh_token grant)."),
    str("default_scope", "Scope granted when a request names none; within the client's scopes."),
    str("introspection", 'Which tokens the client may introspect: its own ("own", default) or every one ("all").', { enum: ["own", "all"] }),
    str("access_token_format", 'The client\'s access tokens: "opaque" or "jwt" (RFC 9068), over the top-level access_token_format.', { enum: ["opaque", "jwt"] }),
    str("token_endpoint_auth_method", 'How the client authenticates; "private_key_jwt" (RFC 7523) needs jwks or jwks_uri and no client_secret.', {
      enum: ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"],
    }),
    { key: "jwks", type: JWK_SET_TYPE, doc: "A private_key_jwt client's public keys (a JWK Set)." },
    str("jwks_uri", "Where a private_key_jwt client publishes its public keys (fetched as given, loopback included)."),
    bool("dpop_bound_access_tokens", "The client must send a DPoP proof with every token request (RFC 9449 §5.2; needs dpop.enabled)."),
  ],
};

/** The keys only the reference server has. */
export const REFERENCE_FIELDS: readonly OptionSpec[] = [
  { key: "$schema", type: { kind: "string" }, doc: "The JSON Schema of this file, for editors; ignored by the server." },
  { key: "users", type: { kind: "list", items: USER }, doc: "Users of the built-in login form." },
  { key: "clients", type: { kind: "list", items: CLIENT }, doc: "Clients registered at start." },
  str("store", 'Where state lives: "memory", "sqlite:PATH", "postgres://…" or "redis://…". Default: a SQLite file next to the config file.', { secret: true }),
  {
    key: "secret",
    type: { kind: "string", secret: true, minLength: 32 },
    doc: "The server secret shared by every instance of one issuer (at least 32 characters).",
  },
  {
    key: "body_timeout_seconds",
    type: { kind: "integer", min: 1 },
    doc: "Seconds a request body may take to arrive before the request gets 408 (slowloris); default 10.",
  },
  {
    key: "token_cache_ms",
    type: { kind: "integer", min: 0 },
    doc: "Milliseconds a durable store's access token is served from this process's cache (RFC 7662 §4): a token revoked by another instance is refused here within this bound, one revoked through this instance at once. 0 reads the store on every check. Default 1000.",
  },
  str("audit_log", 'Where audit events go, one JSON line each: "stderr", or a file path (appended to). Default: none.'),
  {
    key: "metrics",
    type: { kind: "object", fields: [bool("enabled", "Serve /metrics.")] },
    doc: "Prometheus text metrics at /metrics (off by default, so never public by accident).",
  },
];

/** The whole config file: the library's options that have a config key, and the reference server's own. */
export const CONFIG_FIELDS: readonly OptionSpec[] = [...OPTIONS.filter((o) => o.config !== null), ...REFERENCE_FIELDS];

/** The JSON Schema (draft 2020-12) of the config file. */
export function configSchema(): Record<string, unknown> {
  return schemaOf(CONFIG_FIELDS, "oauth2-fetch-server config file", ["scopes"]);
}
