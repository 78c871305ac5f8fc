/**
 * The client registry behind `server.clients`: registration, pausing, deletion and secret rotation, each
 * through the one door for clients (`lib/core/admission.ts`), so the library, the config file and the command
 * line keep the same rules as dynamic registration and client metadata documents.
 *
 * @module
 */
import type { ClientAdmission, ClientDraft } from "./core/admission.ts";
import type { EventInput } from "./core/exchange.ts";
import { ConfigurationError } from "./errors.ts";
import { randomToken } from "./crypto.ts";
import { sha256 } from "./sha256.ts";
import type { ClientOrigin, ClientRecord, GrantType, Storage } from "./storage/types.ts";

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
  /**
   * Exact redirect URIs; required for the authorization_code grant. https, http only on a loopback host, or a
   * private-use scheme in reverse-domain form for native apps (RFC 8252 §7.1); never a fragment or userinfo.
   */
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
  /** Default: with redirect URIs `["authorization_code", "refresh_token"]`, else `["client_credentials"]`. */
  grant_types?: GrantType[];
  /** Whether client_credentials responses carry a refresh token. Default false. */
  client_credentials_refresh_token?: boolean;
  /**
   * The format of this client's access tokens, over the server's `accessTokenFormat`: `"jwt"` (RFC 9068, needs
   * signing keys) or `"opaque"`. Kept in the record's `metadata`.
   */
  access_token_format?: "opaque" | "jwt";
  /**
   * How the client authenticates at the token endpoint (RFC 7591 §2). Default: `none` for a public client, a
   * secret for a confidential one. `private_key_jwt` (RFC 7523 §2.2): a confidential client without a secret,
   * with its public keys in `jwks` or at `jwks_uri`.
   */
  token_endpoint_auth_method?: "client_secret_basic" | "client_secret_post" | "private_key_jwt" | "none";
  /** The public keys of a `private_key_jwt` client, as a JWK Set (RFC 7517 §5). */
  jwks?: { keys: Record<string, unknown>[] };
  /**
   * Where a `private_key_jwt` client publishes its public keys. Given by the operator, it is fetched as it is
   * (loopback and http included); fetched with a deadline, a size cap and Cache-Control bounds either way.
   */
  jwks_uri?: string;
}

/** Options of {@link ClientRegistry.register} for the operator's own tools. */
export interface RegisterOptions {
  /** Who registers it: the config file or the command line (default: the library, no origin). */
  origin?: ClientOrigin;
  /**
   * Keep what happened since an earlier registration of the same id: paused or not, `created_at` and
   * `last_used_at` (the config file, which registers its clients at every start).
   */
  keepState?: boolean;
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
  /** Registers a client, or replaces the one with the same id; throws `ConfigurationError` naming the field. */
  register(registration: ClientRegistration, options?: RegisterOptions): Promise<RegisteredClient>;
  /** A client by id, or null. */
  get(clientId: string): Promise<ClientRecord | null>;
  /** Pauses a client: it can no longer authenticate, and its tokens stop working. */
  pause(clientId: string): Promise<ClientRecord | null>;
  /** Resumes a paused client. */
  resume(clientId: string): Promise<ClientRecord | null>;
  /** Deletes a client and revokes all its grants; false when there was none. */
  delete(clientId: string): Promise<boolean>;
  /**
   * Gives a confidential client a new secret, returned once; the old one stops working. Refuses a public
   * client, and one from the config file (which sets its secret again at every start).
   */
  rotateSecret(clientId: string): Promise<{ client: ClientRecord; client_secret: string }>;
}

/** What the registry needs of its server. */
export interface RegistryContext {
  readonly storage: Storage;
  readonly admission: ClientAdmission;
  emit(event: EventInput): void;
}

/** The registry of one server. */
export function clientRegistry({ storage, admission, emit }: RegistryContext): ClientRegistry {
  return {
    async register(registration, options = {}) {
      const draft: ClientDraft = registration;
      const admitted = admission.admit(draft, { origin: options.origin, authorized: true });
      const { client } = admitted;
      if (options.keepState) {
        const before = await storage.getClient(client.client_id);
        if (before) {
          client.active = before.active;
          client.created_at = before.created_at;
          if (before.last_used_at !== undefined) client.last_used_at = before.last_used_at;
        }
      }
      await storage.saveClient(client);
      emit({ type: "client.registered", client_id: client.client_id, reason: options.origin });
      return admitted;
    },
    get: (clientId) => storage.getClient(clientId),
    async pause(clientId) {
      const client = await storage.setClientActive(clientId, false);
      if (client) emit({ type: "client.paused", client_id: clientId });
      return client;
    },
    async resume(clientId) {
      const client = await storage.setClientActive(clientId, true);
      if (client) emit({ type: "client.resumed", client_id: clientId });
      return client;
    },
    async delete(clientId) {
      const deleted = await storage.deleteClient(clientId);
      if (deleted) emit({ type: "client.deleted", client_id: clientId });
      return deleted;
    },
    async rotateSecret(clientId) {
      const client = await storage.getClient(clientId);
      if (!client) throw new ConfigurationError(`Cannot rotate secret: no client "${clientId}"`);
      if (client.type !== "confidential") throw new ConfigurationError(`Cannot rotate secret: client "${clientId}" is public: it has no secret to rotate`);
      if (client.metadata?.token_endpoint_auth_method === "private_key_jwt") {
        throw new ConfigurationError(`Cannot rotate secret: client "${clientId}" uses private_key_jwt: it has keys, not a secret`);
      }
      if (client.origin === "config") {
        throw new ConfigurationError(
          `Cannot rotate secret: client "${clientId}" comes from the config file, which sets it again at every start: change its client_secret there`,
        );
      }
      const secret = randomToken();
      const rotated: ClientRecord = { ...client, secret_hash: sha256(secret) };
      await storage.saveClient(rotated);
      emit({ type: "client.registered", client_id: clientId, reason: "secret_rotated" });
      return { client: rotated, client_secret: secret };
    },
  };
}
