/**
 * Dynamic Client Registration (RFC 7591) at `{issuer}/register`: the metadata a client sends becomes a draft
 * that passes the one door for clients, and the 201 answer echoes what was registered. Off unless enabled.
 *
 * @module
 */
import { AdmissionError, type AdmissionRule, type ClientDraft } from "../core/admission.ts";
import { defineEndpoint } from "../core/endpoint.ts";
import { defineFeature, type Feature } from "../core/feature.ts";
import { presentedToken } from "../bearer.ts";
import { timingSafeEqual } from "../crypto.ts";
import { OAuthError } from "../errors.ts";
import { jsonResponse, readText } from "../http.ts";
import { sha256 } from "../sha256.ts";
import { memoryThrottle, type Throttle } from "../throttle.ts";
import { REAP_INTERVAL_MS, removeUnusedClients } from "./unused_clients.ts";

/** Options of dynamic registration (`registration` of the server). */
export interface RegistrationOptions {
  /** Default false: no registration endpoint, and none in the metadata. */
  enabled?: boolean;
  /**
   * When set, registering requires `Authorization: Bearer <this token>` (RFC 7591 §3, "initial access token").
   * Without it, registration is open, as MCP hosts expect.
   */
  initialAccessToken?: string;
  /** Registered clients unused (no token issued or refreshed) for this many days are removed. Default: never. */
  removeUnusedAfterDays?: number;
  /** Most registrations per client address per hour: a ceiling against floods. Default 20. */
  maxPerHour?: number;
}

/** The options this feature adds. */
export interface RegistrationFeatureOptions {
  /** Dynamic Client Registration (RFC 7591) at `{issuer}/register`. Off by default. */
  registration?: RegistrationOptions;
}

/** Registration, when enabled. */
export interface Registration {
  readonly initialAccessToken: string | undefined;
  readonly removeUnusedAfterMs: number | undefined;
  readonly throttle: Throttle;
  /** When the unused clients were last removed. */
  lastReap: number;
}

/** Metadata stored and echoed as given, when they are strings (RFC 7591 §2). */
const ECHOED_STRINGS = ["client_uri", "logo_uri", "tos_uri", "policy_uri", "software_id", "software_version"];
/**
 * The methods a registration may ask for: `none` makes a public client, the others a confidential one, which
 * proves itself with a secret or, for `private_key_jwt` (RFC 7523 §2.2), with the keys it registers.
 */
const REGISTRABLE_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"];

const metadataError = (description: string) => new OAuthError("invalid_client_metadata", { description });
const isString = (v: unknown): v is string => typeof v === "string" && v !== "";

/** Checks a registration's initial access token when one is configured (RFC 7591 §3). */
export function checkInitialAccessToken(authorization: string | null, expected: string | undefined): void {
  if (expected === undefined) return;
  const presented = presentedToken(authorization);
  if (presented.kind !== "token" || !timingSafeEqual(sha256(presented.token), sha256(expected))) {
    throw new OAuthError("invalid_token", {
      description: "A valid initial access token is required to register",
      headers: { "www-authenticate": `Bearer error="invalid_token"` },
    });
  }
}

/**
 * Reads RFC 7591 §2 metadata into a client draft, and the response types and method to echo. Only the shape is
 * checked here; the rules are the door's.
 */
export function registrationDraft(body: unknown, scopes: ReadonlyMap<string, string>, defaultScope: string | undefined): {
  draft: ClientDraft;
  responseTypes: string[] | undefined;
} {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw metadataError("The body must be a JSON object");
  const m = body as Record<string, unknown>;
  const method = m.token_endpoint_auth_method ?? "client_secret_basic";
  if (typeof method !== "string" || !REGISTRABLE_METHODS.includes(method)) {
    throw metadataError(`token_endpoint_auth_method must be one of ${REGISTRABLE_METHODS.join(", ")}`);
  }
  // Absent grant types take the one default of every path (the door's): with redirect URIs, the code flow and
  // refresh (RFC 7591 §2 says the code flow alone; the answer echoes what was registered).
  const grants = m.grant_types;
  if (grants !== undefined && (!Array.isArray(grants) || grants.length === 0 || !grants.every((g) => typeof g === "string"))) {
    throw metadataError("grant_types must be a non-empty list of strings");
  }
  const responseTypes = m.response_types;
  if (responseTypes !== undefined && (!Array.isArray(responseTypes) || !responseTypes.every((t) => t === "code"))) {
    throw metadataError("response_types may hold only code");
  }
  const redirectUris = m.redirect_uris ?? [];
  if (!Array.isArray(redirectUris)) throw new OAuthError("invalid_redirect_uri", { description: "redirect_uris must be a list" });
  // A client that names no scope gets the server's default scope, never every scope: "admin" is not a default.
  const requested = m.scope ?? defaultScope;
  if (requested === undefined) throw metadataError("scope is required: this server has no default scope");
  if (!isString(requested)) throw metadataError("scope must be a space-delimited string");
  const asked = requested.split(" ");
  if (!asked.every((s) => scopes.has(s))) throw metadataError("scope names an unknown scope");
  if (m.client_name !== undefined && !isString(m.client_name)) throw metadataError("client_name must be a string");
  if (isString(m.client_name) && m.client_name.length > 200) throw metadataError("client_name is too long");
  for (const name of ECHOED_STRINGS) {
    const value = m[name];
    if (value === undefined) continue;
    if (!isString(value) || value.length > 2000) throw metadataError(`${name} must be a string`);
    if (name.endsWith("_uri") && !/^https:\/\/[^\s"<>\\]+$/.test(value)) throw metadataError(`${name} must be an https URL`);
  }
  if (m.contacts !== undefined && (!Array.isArray(m.contacts) || !m.contacts.every(isString) || m.contacts.length > 10)) {
    throw metadataError("contacts must be a list of strings");
  }
  if (m.application_type !== undefined && m.application_type !== "web" && m.application_type !== "native") {
    throw metadataError("application_type must be web or native");
  }
  const metadata: Record<string, unknown> = {};
  for (const key of [...ECHOED_STRINGS, "contacts", "application_type"]) if (m[key] !== undefined) metadata[key] = m[key];
  // RFC 7591 §2: jwks and jwks_uri are for private_key_jwt; the door checks them (shape, https, no private host).
  if (m.jwks !== undefined && (typeof m.jwks !== "object" || m.jwks === null || Array.isArray(m.jwks))) throw metadataError("jwks must be a JWK Set");
  if (m.jwks_uri !== undefined && !isString(m.jwks_uri)) throw metadataError("jwks_uri must be a string");
  const draft: ClientDraft = {
    name: isString(m.client_name) ? m.client_name : "Unnamed application",
    type: method === "none" ? "public" : "confidential",
    redirect_uris: redirectUris as string[],
    scopes: [...new Set(asked)],
    ...(grants === undefined ? {} : { grant_types: grants as string[] }),
    token_endpoint_auth_method: method as NonNullable<ClientDraft["token_endpoint_auth_method"]>,
    ...(m.jwks === undefined ? {} : { jwks: m.jwks as NonNullable<ClientDraft["jwks"]> }),
    ...(m.jwks_uri === undefined ? {} : { jwks_uri: m.jwks_uri as string }),
    metadata,
  };
  const defaults = defaultScope?.split(" ").filter((s) => asked.includes(s)) ?? [];
  if (defaults.length > 0) draft.default_scope = defaults.join(" ");
  return { draft, responseTypes: responseTypes as string[] | undefined };
}

/**
 * Open registration admits only grants a user approves each time (the code flow, and refresh of what a user
 * approved): a stranger's POST must not mint a client that gets tokens with no user or operator involved
 * (client_credentials, and any machine grant a feature adds). The initial access token, or an operator's
 * tool, may register those.
 */
export const userApprovedGrantsOnly: AdmissionRule = (client, { origin, authorized, grants }) => {
  if (origin !== "registration" || authorized) return;
  for (const name of client.grant_types) {
    if (grants.get(name)?.userApproved !== true) {
      throw new AdmissionError("grant_types", `open registration admits only grants a user approves: "${name}" needs the initial access token or an operator`);
    }
  }
};

const registerEndpoint = (state: Registration) =>
  defineEndpoint({
    name: "register",
    route: "/register",
    page: false,
    cors: true,
    reads: ["clock", "storage", "scopes", "defaultScope", "admission", "maxBodyBytes", "bodyTimeout", "refreshTokenTtl", "onError"],
    methods: {
      async POST(exchange, core) {
        const { request } = exchange;
        checkInitialAccessToken(request.headers.get("authorization"), state.initialAccessToken);
        const now = core.clock();
        // Behind a trusted proxy, the address it forwarded (trustProxy); else the peer.
        const key = `register:${exchange.address ?? "unknown"}`;
        const wait = await state.throttle.retryAfter(key, now);
        if (wait > 0) {
          throw new OAuthError("slow_down", {
            description: "Too many registrations from this address; try again later",
            headers: { "retry-after": String(Math.ceil(wait / 1000)) },
          });
        }
        if (!/^application\/json\s*(?:;|$)/i.test(request.headers.get("content-type") ?? "")) {
          throw new OAuthError("invalid_client_metadata", { description: "The body must be application/json" });
        }
        let body: unknown;
        try {
          body = JSON.parse(await readText(request, core.maxBodyBytes, core.bodyTimeout));
        } catch (error) {
          if (error instanceof OAuthError) throw error;
          throw new OAuthError("invalid_client_metadata", { description: "The body is not valid JSON" });
        }
        const { draft, responseTypes } = registrationDraft(body, core.scopes, core.defaultScope);
        await core.admission.learnNames(() => core.storage.listClients(), now);
        let admitted;
        try {
          admitted = core.admission.admit(draft, { origin: "registration", authorized: state.initialAccessToken !== undefined });
        } catch (error) {
          if (!(error instanceof AdmissionError)) throw error;
          throw new OAuthError(error.code, { description: error.message.replace(/^Cannot register client: /, "") });
        }
        const { client, client_secret } = admitted;
        const code = client.grant_types.includes("authorization_code");
        if (responseTypes !== undefined && code !== responseTypes.includes("code")) {
          throw metadataError("authorization_code and the code response type go together (RFC 7591 §2.1)");
        }
        await state.throttle.fail(key, now);
        await core.storage.saveClient(client);
        exchange.emit({ type: "client.registered", client_id: client.client_id, reason: "registration" });
        if (state.removeUnusedAfterMs !== undefined && now - state.lastReap >= REAP_INTERVAL_MS) {
          state.lastReap = now;
          try {
            await removeUnusedClients(core.storage, now, { origin: "registration", maxIdleMs: state.removeUnusedAfterMs, grantLifetimeMs: core.refreshTokenTtl });
          } catch (error) {
            // The registration itself succeeded; a failed clean-up is retried at the next interval.
            core.onError(error, { endpoint: "register", method: "POST", path: "/register" });
          }
        }
        const response: Record<string, unknown> = {
          client_id: client.client_id,
          client_id_issued_at: Math.floor(now / 1000),
          client_name: client.name,
          redirect_uris: client.redirect_uris,
          grant_types: client.grant_types,
          response_types: responseTypes ?? (code ? ["code"] : []),
          scope: client.scopes.join(" "),
          ...client.metadata,
        };
        if (client_secret !== undefined) {
          response.client_secret = client_secret;
          response.client_secret_expires_at = 0; // RFC 7591 §3.2.1: 0 = never expires.
        }
        // RFC 7591 §3.2.1: the answer holds the secret; it must not be cached.
        return jsonResponse(201, response);
      },
    },
  });

/** The dynamic registration feature. */
export const registration: Feature<"registration", Registration | null, RegistrationFeatureOptions> = defineFeature({
  name: "registration",
  doc: "Dynamic Client Registration (RFC 7591) at /register.",
  options: [{
    key: "registration",
    type: {
      kind: "object",
      fields: [
        { key: "enabled", type: { kind: "boolean" }, doc: "Serve /register." },
        {
          key: "initialAccessToken",
          type: { kind: "string", minLength: 16, secret: true },
          doc: "Bearer token /register requires; without it registration is open.",
        },
        { key: "removeUnusedAfterDays", type: { kind: "integer", min: 1 }, doc: "Delete registered clients unused for this many days." },
        { key: "maxPerHour", type: { kind: "integer", min: 1 }, doc: "Most registrations per client address per hour; default 20." },
      ],
    },
    doc: "Dynamic client registration (RFC 7591) at /register.",
    check: (value: RegistrationOptions) =>
      value.initialAccessToken !== undefined && value.enabled !== true ? '"initialAccessToken" is set but "enabled" is not true' : undefined,
  }],
  reads: [],
  setup(options): Registration | null {
    const value = options.registration;
    if (value?.enabled !== true) return null;
    const days = value.removeUnusedAfterDays;
    return {
      initialAccessToken: value.initialAccessToken,
      removeUnusedAfterMs: days === undefined ? undefined : days * 24 * 3600_000,
      // A ceiling per address against floods, not a quota: hosted MCP connectors share egress addresses.
      throttle: memoryThrottle({ maxFailures: value.maxPerHour ?? 20, windowSeconds: 3600, blockSeconds: 600 }),
      lastReap: -Infinity,
    };
  },
  endpoints: (state) => [registerEndpoint(state)],
  admission: () => userApprovedGrantsOnly,
  metadata: (_, { url }) => ({ registration_endpoint: url("register") }),
});
