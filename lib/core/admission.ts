/**
 * The one door for clients. Every way a client comes to exist or change (the library's `server.clients`, the
 * config file, the command line, dynamic registration, client metadata documents, secret rotation) builds a
 * {@link ClientDraft} and passes it through {@link ClientAdmission.admit}, which applies one rule set:
 * redirect URIs, grant types and their defaults, authentication, scopes, names, and the rules of the features
 * that own an origin (registration, documents).
 *
 * @module
 */
import { ConfigurationError } from "../errors.ts";
import { randomToken } from "../crypto.ts";
import { sha256 } from "../sha256.ts";
import { checkRedirectUriValue } from "../registration_rules.ts";
import { applicationTypeProblem, impliedApplicationType } from "./application_type.ts";
import { authenticationProblem, type TokenEndpointAuthMethod } from "./client_keys.ts";
import type { ClientOrigin, ClientRecord } from "../storage/types.ts";
import { reservedNames, unsafeNameCharacter } from "./names.ts";
import type { AuthMethodTraits, GrantTraits } from "./traits.ts";

/** A client as a path proposes it, before the rules. Wire names as in RFC 7591 where there is one. */
export interface ClientDraft {
  /** Default: generated. */
  client_id?: string;
  /** Confidential clients only. Default: 256 random bits, returned once. */
  client_secret?: string;
  /** Display name, shown on the consent page. */
  name: string;
  /** `public` clients have no secret and must use PKCE. */
  type: "public" | "confidential";
  redirect_uris?: readonly string[];
  scopes: readonly string[];
  default_scope?: string;
  /** Default: with redirect URIs the code flow and refresh, else client_credentials. */
  grant_types?: readonly string[];
  client_credentials_refresh_token?: boolean;
  introspection?: "own" | "all";
  /** The client's access-token format (RFC 9068), over the server's; kept in `metadata`. Operators only. */
  access_token_format?: "opaque" | "jwt";
  /**
   * How the client authenticates (RFC 7591 §2); kept in `metadata`. Default: `none` for public clients, a secret
   * method for confidential ones. `private_key_jwt` (RFC 7523 §2.2) needs `jwks` or `jwks_uri`, and no secret.
   */
  token_endpoint_auth_method?: TokenEndpointAuthMethod;
  /** The public keys of a `private_key_jwt` client (a JWK Set, RFC 7517 §5); kept in `metadata`. */
  jwks?: { keys: Record<string, unknown>[] };
  /** Where the public keys of a `private_key_jwt` client are published; kept in `metadata`. */
  jwks_uri?: string;
  /** Registration metadata echoed back and kept (client_uri, logo_uri, application_type, …). */
  metadata?: Record<string, unknown>;
}

/** The outcome of an admission: the record to store and the secret to hand out once. */
export interface AdmittedClient {
  client: ClientRecord;
  client_secret?: string;
}

/**
 * A rule a feature adds: it sees the client the core rules admitted, and refuses it by throwing
 * {@link AdmissionError}. `context.authorized` says an operator or an initial access token stands behind it.
 */
export type AdmissionRule = (client: Readonly<ClientRecord>, context: AdmissionContext) => void;

/** What a rule is told. */
export interface AdmissionContext {
  origin: ClientOrigin | undefined;
  /** True when an operator (library, config, CLI) or an initial access token stands behind the request. */
  authorized: boolean;
  grants: ReadonlyMap<string, GrantTraits>;
}

/** Who is asking: the origin of the client, and whether an operator or an initial access token stands behind it. */
export interface AdmitOptions {
  origin?: ClientOrigin | undefined;
  /** Default: true for the library, the config file and the CLI; false for registration and documents. */
  authorized?: boolean;
  /** Plain http redirect URIs on any host (a document from an origin the operator listed). */
  relaxHttp?: boolean;
}

/** The door. */
export interface ClientAdmission {
  /**
   * Applies every rule to `draft` and returns the record to store (not yet stored) and a new secret; throws
   * {@link AdmissionError} naming the field at fault.
   */
  admit(draft: ClientDraft, context: AdmitOptions): AdmittedClient;
  /** The enabled grant types, by name. */
  readonly grants: ReadonlyMap<string, GrantTraits>;
  /** The enabled client-authentication methods, by name. */
  readonly methods: ReadonlyMap<string, AuthMethodTraits>;
  /**
   * The name of a client an operator stands behind (config file, command line, library) that `name` equals or
   * confusably resembles, or undefined: the consent page warns about a document client whose name does.
   */
  resembles(name: string): string | undefined;
  /**
   * Learns the names of the operator's clients from the store, at most every few minutes (clients the command
   * line added in another process); the door learns the ones it admits itself at once.
   */
  learnNames(load: () => Promise<readonly ClientRecord[]>, now: number): Promise<void>;
}

/** A refused client: `field` is the draft field at fault (`redirect_uris`, `grant_types`, `scope`, …). */
export class AdmissionError extends ConfigurationError {
  /** The RFC 7591 §3.2.2 error code a registration answers with. */
  readonly code: "invalid_redirect_uri" | "invalid_client_metadata";
  /** The field at fault. */
  readonly field: string;
  /** A client refused, in a sentence naming the field and the value. */
  constructor(field: string, message: string) {
    super(`Cannot register client: ${message}`, field);
    this.name = "AdmissionError";
    this.field = field;
    this.code = field === "redirect_uris" ? "invalid_redirect_uri" : "invalid_client_metadata";
  }
}

// RFC 6749 Appendix A.1: client_id = *VSCHAR (0x20-0x7E).
const CLIENT_ID = /^[\x20-\x7e]{1,255}$/;
/** Longest name a client may give itself (a consent page heading, a terminal column). */
const MAX_SELF_NAME = 200;
/** How often the operator's client names are read again from the store. */
const LEARN_INTERVAL_MS = 300_000;
/** Origins whose clients speak for themselves: no operator stands behind their metadata. */
const SELF_REGISTERED: readonly (ClientOrigin | undefined)[] = ["registration", "document"];

/** What the door is built from: the server's scopes and policy, enabled grants and methods, feature rules. */
export interface AdmissionOptions {
  scopes: ReadonlyMap<string, string>;
  grants: ReadonlyMap<string, GrantTraits>;
  methods: ReadonlyMap<string, AuthMethodTraits>;
  rules: readonly AdmissionRule[];
  clock: () => number;
}

/** Builds the door of one server. */
export function clientAdmission(options: AdmissionOptions): ClientAdmission {
  const { scopes, grants, methods, rules, clock } = options;
  const reserved = reservedNames();
  let learnedAt = -Infinity;
  return {
    grants,
    methods,
    resembles: (name) => reserved.resembled(name),
    async learnNames(load, now) {
      if (now - learnedAt < LEARN_INTERVAL_MS) return;
      learnedAt = now;
      let clients: readonly ClientRecord[];
      try {
        clients = await load();
      } catch {
        // Best effort: the names learned so far still hold, and the store's failure shows where it matters.
        return;
      }
      for (const client of clients) if (!SELF_REGISTERED.includes(client.origin)) reserved.add(client.name);
    },
    admit(proposed, { origin, authorized = origin !== "registration" && origin !== "document", relaxHttp = false }) {
      if (typeof proposed !== "object" || proposed === null) throw new AdmissionError("client", "the registration must be an object");
      const draft = proposed;
      const clientId = draft.client_id ?? randomToken().slice(0, 22);
      const fail = (field: string, message: string): never => {
        throw new AdmissionError(field, message);
      };
      if (typeof clientId !== "string" || !CLIENT_ID.test(clientId)) {
        fail("client_id", `"client_id" must be 1-255 visible ASCII characters or spaces: "${String(clientId)}"`);
      }
      if (typeof draft.name !== "string" || draft.name.trim() === "") fail("name", `"name" is required for client "${clientId}"`);
      const unsafe = unsafeNameCharacter(draft.name);
      if (unsafe !== null) fail("name", `the name of client "${clientId}" is refused: ${unsafe}`);
      const self = SELF_REGISTERED.includes(origin);
      if (self && draft.name.length > MAX_SELF_NAME) fail("name", `the name of client "${clientId}" is longer than ${MAX_SELF_NAME} characters`);
      // A registered client that takes an operator's client's name would get that client's consent page. A
      // document's name is the document's: it is admitted, and its consent page says whom it resembles.
      const resembled = origin === "registration" ? reserved.resembled(draft.name) : undefined;
      if (resembled !== undefined) fail("name", `the name "${draft.name}" is too close to that of a client this server knows ("${resembled}")`);
      if (draft.type !== "public" && draft.type !== "confidential") {
        fail("type", `"type" must be "public" or "confidential" for client "${clientId}"`);
      }
      const redirectUris = draft.redirect_uris ?? [];
      if (!Array.isArray(redirectUris)) fail("redirect_uris", "redirect_uris must be a list");
      for (const uri of redirectUris) {
        const problem = checkRedirectUriValue(uri, relaxHttp);
        if (problem !== null) fail("redirect_uris", `a redirect URI of client "${clientId}" is refused: it ${problem}: "${String(uri)}"`);
      }
      const grantTypes = draft.grant_types ?? (redirectUris.length > 0 ? ["authorization_code", "refresh_token"] : ["client_credentials"]);
      if (!Array.isArray(grantTypes) || grantTypes.length === 0) fail("grant_types", `"grant_types" must be a non-empty list`);
      for (const name of grantTypes) {
        const grant = grants.get(name);
        if (grant === undefined) fail("grant_types", `client "${clientId}": unknown grant type "${String(name)}"`);
        if (grant!.confidentialOnly && draft.type === "public") fail("grant_types", `client "${clientId}": a public client cannot use ${name} (RFC 6749 §4.4)`);
        if (grant!.clientFields.includes("redirect_uris") && redirectUris.length === 0) {
          fail("redirect_uris", `client "${clientId}": ${name} needs at least one redirect URI`);
        }
      }
      if (draft.client_credentials_refresh_token === true &&
        (!grantTypes.includes("refresh_token") || !grantTypes.includes("client_credentials"))) {
        fail("client_credentials_refresh_token", `client "${clientId}": client_credentials_refresh_token needs both the client_credentials and refresh_token grants`);
      }
      if (!Array.isArray(draft.scopes) || draft.scopes.length === 0) fail("scopes", `client "${clientId}" must list at least one scope`);
      for (const s of draft.scopes) if (!scopes.has(s)) fail("scopes", `client "${clientId}" names unknown scope "${s}"`);
      if (draft.default_scope !== undefined) {
        const tokens = typeof draft.default_scope === "string" ? draft.default_scope.split(" ") : [];
        if (tokens.length === 0 || !tokens.every((t) => draft.scopes.includes(t))) {
          fail("default_scope", `the default scope of client "${clientId}" must be a space-delimited list of its scopes`);
        }
      }
      const auth = {
        ...(draft.token_endpoint_auth_method === undefined ? {} : { method: draft.token_endpoint_auth_method }),
        ...(draft.jwks === undefined ? {} : { jwks: draft.jwks }),
        ...(draft.jwks_uri === undefined ? {} : { jwks_uri: draft.jwks_uri }),
      };
      const authProblem = authenticationProblem(auth, {
        clientId, type: draft.type, hasSecret: draft.client_secret !== undefined, origin, relaxHttp, methods: new Set(methods.keys()),
      });
      if (authProblem !== null) fail(...authProblem);
      let secret: string | undefined;
      if (draft.type === "confidential" && auth.method !== "private_key_jwt") {
        secret = draft.client_secret ?? randomToken();
        if (typeof secret !== "string" || secret.length < 16) fail("client_secret", `the secret of client "${clientId}" must be at least 16 characters`);
      } else if (draft.client_secret !== undefined) {
        fail("client_secret", `public client "${clientId}" must not have a secret`);
      }
      if (draft.introspection !== undefined) {
        if (draft.introspection !== "own" && draft.introspection !== "all") fail("introspection", `"introspection" must be "own" or "all" for client "${clientId}"`);
        if (draft.type !== "confidential") fail("introspection", `public client "${clientId}" cannot introspect`);
      }
      const client: ClientRecord = {
        client_id: clientId,
        name: draft.name,
        type: draft.type,
        redirect_uris: [...redirectUris],
        scopes: [...new Set(draft.scopes)],
        grant_types: [...grantTypes],
        client_credentials_refresh_token: draft.client_credentials_refresh_token === true,
        active: true,
        created_at: clock(),
      };
      if (secret !== undefined) client.secret_hash = sha256(secret);
      if (draft.default_scope !== undefined) client.default_scope = draft.default_scope;
      if (draft.introspection !== undefined) client.introspection = draft.introspection;
      if (origin !== undefined) client.origin = origin;
      const metadata = { ...draft.metadata };
      // OpenID DCR §2 / MCP 2026-07-28 (SEP-837): the redirect URIs must fit the application type; one that
      // names none gets the type its redirect URIs imply (lib/features/registration.md says why).
      if (metadata.application_type !== undefined) {
        const problem = applicationTypeProblem(metadata.application_type, redirectUris, relaxHttp);
        if (problem !== null) fail("redirect_uris", `client "${clientId}": ${problem}`);
      } else if (self) {
        metadata.application_type = impliedApplicationType(redirectUris);
      }
      if (draft.access_token_format !== undefined) metadata.access_token_format = draft.access_token_format;
      if (auth.method !== undefined) metadata.token_endpoint_auth_method = auth.method;
      if (auth.jwks !== undefined) metadata.jwks = structuredClone(auth.jwks);
      if (auth.jwks_uri !== undefined) metadata.jwks_uri = auth.jwks_uri;
      if (Object.keys(metadata).length > 0) client.metadata = metadata;
      for (const rule of rules) rule(client, { origin, authorized, grants });
      if (!self) reserved.add(client.name);
      return secret === undefined ? { client } : { client, client_secret: secret };
    },
  };
}
