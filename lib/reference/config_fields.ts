/**
 * The config file's fields as one table: the parser walks it, and `config.schema.json` beside it is generated from it, so
 * the two cannot drift apart (test/reference/config_schema.test.ts compares them).
 *
 * @module
 */
import { GRANT_TYPES } from "../grants/registry.ts";

/** One field of the config file. `secret` fields may also be given as `{ "env": "NAME" }`. */
export type Field =
  | { kind: "string"; description: string; secret?: boolean; enum?: readonly string[]; nonEmpty?: boolean }
  | { kind: "boolean"; description: string }
  | { kind: "integer"; description: string; minimum: number }
  | { kind: "list"; description: string; items: Field }
  | { kind: "object"; description: string; fields: Readonly<Record<string, Field>>; required?: readonly string[] };

const str = (description: string, more: { secret?: boolean; enum?: readonly string[] } = {}): Field => ({
  kind: "string",
  description,
  nonEmpty: true,
  ...more,
});
const bool = (description: string): Field => ({ kind: "boolean", description });
const strings = (description: string): Field => ({ kind: "list", description, items: { kind: "string", description: "", nonEmpty: true } });

const USER: Field = {
  kind: "object",
  description: "A user of the built-in login form. Give exactly one of password_hash and password.",
  required: ["username"],
  fields: {
    username: str("The name typed at the login form; also the user id in tokens."),
    password_hash: str('A hash from `oauth2-fetch-server hash-password` ("pbkdf2-sha256$…").', { secret: true }),
    password: str("Plaintext password: works, but the server warns at start. Prefer password_hash.", { secret: true }),
    name: str("Display name; default the username."),
  },
};

const CLIENT: Field = {
  kind: "object",
  description: "A client. It is confidential exactly when it has a client_secret.",
  required: ["client_id", "name", "scopes", "grant_types"],
  fields: {
    client_id: str("The client identifier."),
    client_secret: str("The client secret (at least 16 characters); only its SHA-256 is stored.", { secret: true }),
    name: str("Shown on the consent page."),
    redirect_uris: strings("Exact redirect URIs (loopback URIs match on any port)."),
    scopes: strings("Scopes the client may ask for; each must be declared in the top-level scopes."),
    grant_types: { kind: "list", description: "Grant types the client may use.", items: { kind: "string", description: "", enum: GRANT_TYPES } },
    client_credentials_refresh_token: bool("Whether a client_credentials response carries a refresh token (needs the refresh_token grant)."),
    default_scope: str("Scope granted when a request names none; within the client's scopes."),
    introspection: str('Which tokens the client may introspect: its own ("own", default) or every one ("all").', { enum: ["own", "all"] }),
  },
};

/** The whole config file. */
export const CONFIG_FILE: Field = {
  kind: "object",
  description: "The config file of the oauth2-fetch-server reference server.",
  required: ["scopes"],
  fields: {
    $schema: str("The JSON Schema of this file, for editors; ignored by the server."),
    users: { kind: "list", description: "Users of the built-in login form.", items: USER },
    scopes: {
      kind: "list",
      description: "The scopes the server knows; the description is shown on the consent page.",
      items: {
        kind: "object",
        description: "A scope.",
        required: ["name", "description"],
        fields: { name: str("The scope value."), description: { kind: "string", description: "Shown on the consent page." } },
      },
    },
    clients: { kind: "list", description: "Clients registered at start.", items: CLIENT },
    store: str('Where state lives: "memory", "sqlite:PATH", "postgres://…" or "redis://…". Default: a SQLite file next to the config file.', { secret: true }),
    secret: str("Signing key shared by every instance of one issuer (at least 32 characters).", { secret: true }),
    scope_policy: str('"single" (the spec: exactly one scope per request, default) or "multiple".', { enum: ["single", "multiple"] }),
    default_scope: str("Scope granted when a request names none."),
    resources: strings("Resource indicators (RFC 8707) clients may ask tokens for."),
    client_metadata_documents: {
      kind: "object",
      description: "Client ID Metadata Documents: https URLs as client_id.",
      fields: {
        enabled: bool("Accept client ID metadata documents."),
        allow_origins: strings('Origins exempt from the https and private-host rules, e.g. "http://127.0.0.1:8123" in tests.'),
      },
    },
    registration: {
      kind: "object",
      description: "Dynamic client registration (RFC 7591) at /register.",
      fields: {
        enabled: bool("Serve /register."),
        initial_access_token: str("Bearer token /register requires; without it registration is open.", { secret: true }),
        remove_unused_after_days: { kind: "integer", description: "Delete registered clients unused for this many days.", minimum: 1 },
      },
    },
    cors: {
      kind: "object",
      description: "Cross-origin requests to the token, revocation and metadata endpoints.",
      fields: { origins: strings('Allowed origins, e.g. "https://app.example"; "*" for any.') },
    },
    refresh_grace_seconds: {
      kind: "integer",
      description: "Seconds during which a just-rotated refresh token may be retried (multi-process clients); 0 = strict.",
      minimum: 0,
    },
    trust_proxy: strings("Addresses or CIDR ranges of reverse proxies whose X-Forwarded-For is believed."),
    body_timeout_seconds: {
      kind: "integer",
      description: "Seconds a request body may take to arrive before the request gets 408 (slowloris); default 10.",
      minimum: 1,
    },
    audit_log: str('Where audit events go, one JSON line each: "stderr", or a file path (appended to). Default: none.'),
    metrics: {
      kind: "object",
      description: "Prometheus text metrics at /metrics (off by default, so never public by accident).",
      fields: { enabled: bool("Serve /metrics.") },
    },
  },
};

/** The JSON Schema (draft 2020-12) of the config file, built from {@link CONFIG_FILE}. */
export function configSchema(): Record<string, unknown> {
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    title: "oauth2-fetch-server config file",
    ...toSchema(CONFIG_FILE),
    $defs: {
      env: {
        description: "Read the value from this environment variable at start.",
        type: "object",
        properties: { env: { type: "string", minLength: 1 } },
        required: ["env"],
        additionalProperties: false,
      },
    },
  };
}

function toSchema(field: Field): Record<string, unknown> {
  const description = field.description === "" ? {} : { description: field.description };
  switch (field.kind) {
    case "string": {
      const plain = { type: "string", ...(field.nonEmpty ? { minLength: 1 } : {}), ...(field.enum ? { enum: [...field.enum] } : {}) };
      return field.secret ? { ...description, anyOf: [plain, { $ref: "#/$defs/env" }] } : { ...description, ...plain };
    }
    case "boolean":
      return { ...description, type: "boolean" };
    case "integer":
      return { ...description, type: "integer", minimum: field.minimum };
    case "list":
      return { ...description, type: "array", items: toSchema(field.items) };
    case "object":
      return {
        ...description,
        type: "object",
        properties: Object.fromEntries(Object.entries(field.fields).map(([key, f]) => [key, toSchema(f)])),
        ...(field.required ? { required: [...field.required] } : {}),
        additionalProperties: false,
      };
  }
}

/** Walks `value` along `field`; returns it with `{ "env": NAME }` resolved, or the first problem as `[path, message]`. */
export function checkField(field: Field, value: unknown, path: string, env: (name: string) => string | undefined): unknown {
  const fail = (message: string): never => {
    throw new FieldError(path, message);
  };
  switch (field.kind) {
    case "string": {
      if (field.secret && typeof value === "object" && value !== null && !Array.isArray(value)) {
        const keys = Object.keys(value);
        const name = (value as { env?: unknown }).env;
        if (keys.length !== 1 || typeof name !== "string" || name === "") return fail('must be a string or { "env": "VARIABLE" }');
        const resolved = env(name);
        if (resolved === undefined || resolved === "") return fail(`environment variable "${name}" is not set`);
        return resolved;
      }
      if (typeof value !== "string") return fail(`must be a string${field.secret ? ' or { "env": "VARIABLE" }' : ""}, not ${describe(value)}`);
      if (field.nonEmpty && value === "") return fail("must not be empty");
      if (field.enum && !field.enum.includes(value)) return fail(`must be one of ${field.enum.map((e) => `"${e}"`).join(", ")}, not "${value}"${didYouMean(value, field.enum)}`);
      return value;
    }
    case "boolean":
      return typeof value === "boolean" ? value : fail(`must be true or false, not ${describe(value)}`);
    case "integer":
      if (typeof value !== "number" || !Number.isInteger(value)) return fail(`must be a whole number, not ${describe(value)}`);
      return value < field.minimum ? fail(`must be at least ${field.minimum}`) : value;
    case "list":
      if (!Array.isArray(value)) return fail(`must be a list, not ${describe(value)}`);
      return value.map((item, i) => checkField(field.items, item, `${path}[${i}]`, env));
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return fail(`must be an object, not ${describe(value)}`);
      const known = Object.keys(field.fields);
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) {
        const at = path === "" ? key : `${path}.${key}`;
        const spec = field.fields[key];
        if (!spec) throw new FieldError(at, `unknown key${didYouMean(key, known)}`);
        out[key] = checkField(spec, item, at, env);
      }
      for (const key of field.required ?? []) {
        if (!(key in out)) throw new FieldError(path === "" ? key : `${path}.${key}`, "is missing");
      }
      return out;
    }
  }
}

/** A problem at one JSON path of the config file. */
export class FieldError extends Error {
  readonly path: string;
  constructor(path: string, message: string) {
    super(message);
    this.path = path;
  }
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${typeof value} ${String(value)}`;
}

/** ` (did you mean "x"?)` for the closest known name, or nothing when none is close. */
export function didYouMean(name: string, known: readonly string[]): string {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    // Case-blind, so clientSecret and CLIENT_SECRET are one edit from client_secret.
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(name.length / 3)) ? ` (did you mean "${best}"?)` : "";
}

function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}
