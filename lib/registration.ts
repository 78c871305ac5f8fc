/**
 * Dynamic Client Registration (RFC 7591): checking the metadata a client sends, minting its id and secret, and
 * the answer that echoes what was registered. Off unless the `registration` option enables it.
 *
 * @module
 */
import { randomToken, timingSafeEqual } from "./crypto.ts";
import { sha256 } from "./sha256.ts";
import { OAuthError } from "./errors.ts";
import { CLIENT_AUTH_METHOD_NAMES, CLIENT_AUTH_METHODS } from "./client_auth/registry.ts";
import type { PresentedCredentials } from "./client_auth/client_secret_basic.ts";
import { GRANT_TYPES, grantOf } from "./grants/registry.ts";
import { checkRedirectUriValue } from "./registration_rules.ts";
import type { ClientRecord, Storage } from "./storage/types.ts";

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

/** What checking registration metadata needs from the server. */
export interface RegistrationContext {
  scopes: ReadonlyMap<string, string>;
  defaultScope: string | undefined;
  clock: () => number;
}

/** Metadata stored and echoed as given, when they are strings (RFC 7591 §2). */
const ECHOED_STRINGS = ["client_uri", "logo_uri", "tos_uri", "policy_uri", "software_id", "software_version"];

const metadataError = (description: string) => new OAuthError("invalid_client_metadata", { description });
const isString = (v: unknown): v is string => typeof v === "string" && v !== "";

/** Checks a registration's initial access token when one is configured (RFC 7591 §3). */
export function checkInitialAccessToken(authorization: string | null, expected: string | undefined): void {
  if (expected === undefined) return;
  const presented = /^Bearer +(\S+) *$/i.exec(authorization ?? "")?.[1];
  if (presented === undefined || !timingSafeEqual(sha256(presented), sha256(expected))) {
    throw new OAuthError("invalid_token", {
      description: "A valid initial access token is required to register",
      headers: { "www-authenticate": `Bearer error="invalid_token"` },
    });
  }
}

/**
 * Validates RFC 7591 §2 metadata and builds the client: a new `client_id`, a secret for a confidential one, and
 * the 201 body (RFC 7591 §3.2.1) that echoes the registered metadata. The secret is in the body only; the record
 * keeps its hash.
 */
export function buildRegisteredClient(
  body: unknown,
  context: RegistrationContext,
): { client: ClientRecord; response: Record<string, unknown> } {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw metadataError("The body must be a JSON object");
  const m = body as Record<string, unknown>;

  const method = m.token_endpoint_auth_method ?? "client_secret_basic";
  if (!CLIENT_AUTH_METHOD_NAMES.includes(method as never)) {
    throw metadataError(`token_endpoint_auth_method must be one of ${CLIENT_AUTH_METHOD_NAMES.join(", ")}`);
  }
  const confidential = CLIENT_AUTH_METHODS[method as PresentedCredentials["method"]].confidential;
  const grants = m.grant_types ?? ["authorization_code"];
  if (!Array.isArray(grants) || grants.length === 0 || !grants.every((g) => grantOf(g) !== undefined)) {
    throw metadataError(`grant_types may hold only ${GRANT_TYPES.join(", ")}`);
  }
  const confidentialOnly = grants.find((g) => grantOf(g)!.confidentialOnly);
  if (!confidential && confidentialOnly !== undefined) {
    throw metadataError(`${confidentialOnly} needs a confidential client (RFC 6749 §4.4)`);
  }
  const responseTypes = m.response_types ?? (grants.includes("authorization_code") ? ["code"] : []);
  if (!Array.isArray(responseTypes) || !responseTypes.every((t) => t === "code")) {
    throw metadataError("response_types may hold only code");
  }
  if (grants.includes("authorization_code") !== responseTypes.includes("code")) {
    throw metadataError("authorization_code and the code response type go together (RFC 7591 §2.1)");
  }

  const redirectUris = m.redirect_uris ?? [];
  if (!Array.isArray(redirectUris)) throw new OAuthError("invalid_redirect_uri", { description: "redirect_uris must be a list" });
  const redirecting = grants.find((g) => grantOf(g)!.clientFields.includes("redirect_uris"));
  if (redirecting !== undefined && redirectUris.length === 0) {
    throw new OAuthError("invalid_redirect_uri", { description: `redirect_uris is required for ${redirecting}` });
  }
  for (const uri of redirectUris) {
    const problem = checkRedirectUriValue(uri);
    if (problem !== null) throw new OAuthError("invalid_redirect_uri", { description: `A redirect URI is refused: it ${problem}` });
  }

  let scopes = [...context.scopes.keys()];
  if (m.scope !== undefined) {
    if (!isString(m.scope)) throw metadataError("scope must be a space-delimited string");
    const asked = m.scope.split(" ");
    if (!asked.every((s) => context.scopes.has(s))) throw new OAuthError("invalid_client_metadata", { description: "scope names an unknown scope" });
    scopes = [...new Set(asked)];
  }
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

  const now = context.clock();
  const clientId = randomToken().slice(0, 22);
  const name = isString(m.client_name) ? m.client_name : "Unnamed application";
  const metadata: Record<string, unknown> = {};
  for (const key of [...ECHOED_STRINGS, "contacts", "application_type"]) if (m[key] !== undefined) metadata[key] = m[key];
  metadata.token_endpoint_auth_method = method;

  const client: ClientRecord = {
    client_id: clientId,
    name,
    type: confidential ? "confidential" : "public",
    redirect_uris: [...redirectUris] as string[],
    scopes,
    grant_types: [...grants],
    client_credentials_refresh_token: false,
    active: true,
    created_at: now,
    origin: "registration",
    metadata,
  };
  const defaults = context.defaultScope?.split(" ").filter((s) => scopes.includes(s)) ?? [];
  if (defaults.length > 0) client.default_scope = defaults.join(" ");

  const response: Record<string, unknown> = {
    client_id: clientId,
    client_id_issued_at: Math.floor(now / 1000),
    client_name: name,
    redirect_uris: client.redirect_uris,
    grant_types: client.grant_types,
    response_types: responseTypes,
    scope: scopes.join(" "),
    ...metadata,
  };
  if (confidential) {
    const secret = randomToken();
    client.secret_hash = sha256(secret);
    response.client_secret = secret;
    response.client_secret_expires_at = 0; // RFC 7591 §3.2.1: 0 = never expires.
  }
  return { client, response };
}

/**
 * Removes registered (and document) clients that have no live grant and have been unused for `maxIdleMs`.
 * A client that never received a token has no grant, so it goes `maxIdleMs` after its creation (most of the
 * clients hosts register and abandon). One that did may still hold a live refresh token until
 * `grantLifetimeMs` after its last use (a grant never outlives its authorization, which is no later than that
 * use), so it stays at least that long. Deleting a client revokes its grants. Returns how many were removed.
 */
export async function removeUnusedClients(
  storage: Storage,
  now: number,
  maxIdleMs: number,
  grantLifetimeMs: number,
): Promise<number> {
  let removed = 0;
  for (const client of await storage.listClients()) {
    if (client.origin !== "registration" && client.origin !== "document") continue;
    const idle = client.last_used_at === undefined
      ? now - client.created_at >= maxIdleMs
      : now - client.last_used_at >= Math.max(maxIdleMs, grantLifetimeMs);
    if (idle && await storage.deleteClient(client.client_id)) removed++;
  }
  return removed;
}
