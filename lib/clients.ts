/**
 * Client registration: the programmatic API behind `server.clients`.
 *
 * @module
 */
import { audit } from "./audit.ts";
import { randomToken } from "./crypto.ts";
import { sha256 } from "./sha256.ts";
import { ConfigurationError } from "./errors.ts";
import { grantTypesProblem } from "./grants/registry.ts";
import type { ResolvedOptions } from "./options.ts";
import type { ClientRecord, GrantType } from "./storage/types.ts";
import { LOOPBACK_HOSTS } from "./redirect_uri.ts";

/** What {@link ClientRegistry.register} takes. */
export interface ClientRegistration {
  /** Default: generated. */
  client_id?: string;
  /** Confidential clients only. Default: 256 random bits, returned once by `register`. */
  client_secret?: string;
  /** A display name, shown on the consent page. */
  name: string;
  /** `public` clients have no secret and must use PKCE. */
  type: "public" | "confidential";
  /** Exact redirect URIs; required for the authorization_code grant. */
  redirect_uris?: string[];
  /** Scopes the client may ask for; each must be one of the server's. */
  scopes: string[];
  /**
   * Space-delimited scope granted when a request names none (RFC 6749 §3.3); each must be in `scopes`, and
   * under the single scope policy it is one scope. Default: none, so requests must name a scope.
   */
  default_scope?: string;
  /**
   * Which tokens the client may introspect (RFC 7662): its own (`"own"`, default), or every access token
   * (`"all"`, for a resource server). Refresh tokens answer only to their own client either way.
   */
  introspection?: "own" | "all";
  /** Default: `["authorization_code", "refresh_token"]`. */
  grant_types?: GrantType[];
  /** Whether client_credentials responses carry a refresh token. Default false. */
  client_credentials_refresh_token?: boolean;
}

/** What {@link ClientRegistry.register} returns: the stored record, and the secret, which is not kept. */
export interface RegisteredClient {
  /** The stored record (the secret only as its hash). */
  client: ClientRecord;
  /** The plain secret of a confidential client; only its hash is stored, so this is the one chance to read it. */
  client_secret?: string;
}

/** The client administration API. */
export interface ClientRegistry {
  /** Registers a client, or replaces the one with the same id. */
  register(registration: ClientRegistration): Promise<RegisteredClient>;
  /** A client by id, or null. */
  get(clientId: string): Promise<ClientRecord | null>;
  /** Pauses a client: it can no longer authenticate, and its tokens stop working. */
  pause(clientId: string): Promise<ClientRecord | null>;
  /** Resumes a paused client. */
  resume(clientId: string): Promise<ClientRecord | null>;
  /** Deletes a client and revokes all its grants; false when there was none. */
  delete(clientId: string): Promise<boolean>;
}

// RFC 6749 Appendix A.1: client_id = *VSCHAR (0x20-0x7E).
const CLIENT_ID = /^[\x20-\x7e]{1,255}$/;

const fail = (message: string): never => {
  throw new ConfigurationError(`Cannot register client: ${message}`);
};

/** Checks a redirect URI as RFC 6749 §3.1.2 and RFC 9700 §4.1 require: absolute, no fragment, no plain http. */
function checkRedirectUri(uri: unknown): string {
  if (typeof uri !== "string") return fail(`redirect URIs must be strings`);
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return fail(`redirect URI must be an absolute URL: "${uri}"`);
  }
  if (uri.includes("#")) fail(`redirect URI must not have a fragment: "${uri}"`);
  if (url.protocol === "http:" && !LOOPBACK_HOSTS.includes(url.hostname)) {
    fail(`redirect URI must use https (http only on a loopback host): "${uri}"`);
  }
  if (url.protocol === "javascript:" || url.protocol === "data:") fail(`redirect URI scheme is not allowed: "${uri}"`);
  return uri;
}

/** Validates a registration and turns it into a stored record and the secret to hand out. */
export async function buildClient(
  registration: ClientRegistration,
  options: ResolvedOptions,
): Promise<RegisteredClient> {
  const r = registration;
  if (typeof r !== "object" || r === null) fail("the registration must be an object");
  const clientId = r.client_id ?? randomToken().slice(0, 22);
  if (!CLIENT_ID.test(clientId)) fail(`"client_id" must be 1-255 visible ASCII characters or spaces: "${clientId}"`);
  if (typeof r.name !== "string" || r.name.trim() === "") fail(`"name" is required for client "${clientId}"`);
  if (r.type !== "public" && r.type !== "confidential") {
    fail(`"type" must be "public" or "confidential" for client "${clientId}"`);
  }
  const grantTypes = r.grant_types ?? ["authorization_code", "refresh_token"];
  if (!Array.isArray(grantTypes) || grantTypes.length === 0) fail(`"grant_types" must be a non-empty list`);
  const redirectUris = (r.redirect_uris ?? []).map(checkRedirectUri);
  const problem = grantTypesProblem(grantTypes, { type: r.type, redirect_uris: redirectUris });
  if (problem !== undefined) fail(`client "${clientId}": ${problem}`);
  if (!Array.isArray(r.scopes) || r.scopes.length === 0) fail(`"scopes" must list at least one scope`);
  for (const s of r.scopes) if (!options.scopes.has(s)) fail(`client "${clientId}" names unknown scope "${s}"`);

  if (r.default_scope !== undefined) {
    const tokens = typeof r.default_scope === "string" ? r.default_scope.split(" ") : [];
    if (tokens.length === 0 || !tokens.every((t) => r.scopes.includes(t))) {
      fail(`the default scope of client "${clientId}" must be a space-delimited list of its scopes`);
    }
    if (options.scopePolicy === "single" && tokens.length !== 1) {
      fail(`the default scope of client "${clientId}" must be one scope under the single scope policy`);
    }
  }

  let secret: string | undefined;
  if (r.type === "confidential") {
    secret = r.client_secret ?? randomToken();
    if (typeof secret !== "string" || secret.length < 16) {
      fail(`the secret of client "${clientId}" must be at least 16 characters`);
    }
  } else if (r.client_secret !== undefined) {
    fail(`public client "${clientId}" must not have a secret`);
  }
  const client: ClientRecord = {
    client_id: clientId,
    name: r.name,
    type: r.type,
    redirect_uris: redirectUris,
    scopes: [...r.scopes],
    grant_types: [...grantTypes],
    client_credentials_refresh_token: r.client_credentials_refresh_token === true,
    active: true,
    created_at: options.clock(),
  };
  if (secret !== undefined) client.secret_hash = sha256(secret);
  if (r.default_scope !== undefined) client.default_scope = r.default_scope;
  if (r.introspection !== undefined) {
    if (r.introspection !== "own" && r.introspection !== "all") fail(`"introspection" must be "own" or "all" for client "${clientId}"`);
    if (r.type !== "confidential") fail(`public client "${clientId}" cannot introspect`);
    client.introspection = r.introspection;
  }
  return secret === undefined ? { client } : { client, client_secret: secret };
}

/** The registry bound to one server's options. */
export function clientRegistry(options: ResolvedOptions): ClientRegistry {
  const { storage } = options;
  return {
    async register(registration) {
      const registered = await buildClient(registration, options);
      await storage.saveClient(registered.client);
      audit(options, undefined, { type: "client.registered", client_id: registered.client.client_id });
      return registered;
    },
    get: (clientId) => storage.getClient(clientId),
    async pause(clientId) {
      const client = await storage.setClientActive(clientId, false);
      if (client) audit(options, undefined, { type: "client.paused", client_id: clientId });
      return client;
    },
    async resume(clientId) {
      const client = await storage.setClientActive(clientId, true);
      if (client) audit(options, undefined, { type: "client.resumed", client_id: clientId });
      return client;
    },
    async delete(clientId) {
      const deleted = await storage.deleteClient(clientId);
      if (deleted) audit(options, undefined, { type: "client.deleted", client_id: clientId });
      return deleted;
    },
  };
}
