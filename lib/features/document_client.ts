/**
 * What a client metadata document may say, and the client record it becomes. Where MCP's pinned draft
 * (draft-ietf-oauth-client-id-metadata-document-00) and the IETF's latest (-03) differ, the choice made here is
 * listed in `client_metadata_documents.md`. Every document's client then passes the one door for clients.
 *
 * @module
 */
import type { ClientAdmission, ClientDraft } from "../core/admission.ts";
import { ConfigurationError } from "../errors.ts";
import type { ClientRecord } from "../storage/types.ts";

/** Why a document was not used: the reason is a fixed word (metrics, audit), the description is for the user. */
export class DocumentRefused extends Error {
  /** `invalid` for a document that says what it may not, else the outbound failure (`status`, `too_large`, …). */
  readonly reason: string;
  /** A sentence for the error page. */
  readonly description: string;
  /** A refusal; `reason` is one word from a closed list. */
  constructor(reason: string, description: string) {
    super(description);
    this.name = "DocumentRefused";
    this.reason = reason;
    this.description = description;
  }
}

/** What the document check needs from the server. */
export interface DocumentContext {
  scopes: ReadonlyMap<string, string>;
  defaultScope: string | undefined;
  clock: () => number;
  /** The one door for clients: a document's client passes the same rules as any other. */
  admission: ClientAdmission;
}

/** Members that carry a private key in a JWK (RFC 7518 §6.2.2, §6.3.2, §6.4.1). */
const PRIVATE_JWK_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];
const SECRET_METHODS = ["client_secret_basic", "client_secret_post", "client_secret_jwt"];
/** Display metadata kept with the record (strings only; escaped wherever they are shown). */
const ECHOED = ["client_uri", "logo_uri", "tos_uri", "policy_uri", "software_id", "software_version", "application_type"];

const invalid = (description: string) => new DocumentRefused("invalid", description);
const isString = (v: unknown): v is string => typeof v === "string" && v !== "";

/**
 * Whether a client_id is a client identifier URL: checked on the raw string, because WHATWG `URL` collapses dot
 * segments and would let `https://a.example/x/../y` pass for `https://a.example/y`. An https URL with a path
 * other than `/`, and no userinfo, fragment or dot segment. Listed origins may be http.
 */
export function isClientIdUrl(clientId: string, allowOrigins: readonly string[] = []): boolean {
  const exempt = allowOrigins.some((origin) => clientId.startsWith(origin + "/"));
  if (!clientId.startsWith("https://") && !exempt) return false;
  const match = /^[a-z]+:\/\/([^/?#]*)(\/[^?#]*)(\?[^#]*)?$/.exec(clientId);
  if (!match) return false; // no path, or a fragment
  const [, authority, path] = match;
  if (authority!.includes("@") || authority === "" || path === "/") return false;
  // Dot segments, also percent-encoded (%2e), which some servers decode before routing.
  for (const segment of path!.split("/")) if (/^(?:\.|%2e){1,2}$/i.test(segment)) return false;
  if (/[\\\s]/.test(clientId)) return false;
  return URL.canParse(clientId);
}

/**
 * Checks a parsed document and turns it into a client record, through the one door for clients: a public client,
 * or a confidential one that proves itself with the keys the document publishes (`private_key_jwt`).
 */
export function documentClient(document: unknown, clientId: string, context: DocumentContext, exempt = false): ClientRecord {
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    throw invalid("The client's metadata document is not a JSON object");
  }
  const d = document as Record<string, unknown>;
  // The document speaks for exactly this URL, compared as strings (every draft; -01 adds "MUST NOT normalize").
  if (d.client_id !== clientId) throw invalid("The client's metadata document names another client_id");
  // MCP requires both (client registration §CIMD); -02 and -03 made them optional. MCP's rule applies: without
  // a redirect URI there is no code flow, and without a name the consent page would have nothing to say.
  if (!isString(d.client_name)) throw invalid("The client's metadata document has no client_name");
  if (!Array.isArray(d.redirect_uris) || d.redirect_uris.length === 0) {
    throw invalid("The client's metadata document has no redirect_uris");
  }
  // A document is public: anything secret in it is known to the world, so the document is refused outright.
  if ("client_secret" in d || "client_secret_expires_at" in d) throw invalid("The client's metadata document holds a secret");
  const keys = [d.jwks, ...(Array.isArray((d.jwks as { keys?: unknown })?.keys) ? (d.jwks as { keys: unknown[] }).keys : [])];
  for (const key of keys) {
    if (typeof key === "object" && key !== null && PRIVATE_JWK_MEMBERS.some((m) => m in key)) {
      throw invalid("The client's metadata document holds private key material");
    }
  }
  const method = d.token_endpoint_auth_method;
  if (typeof method === "string" && SECRET_METHODS.includes(method)) {
    throw invalid("The client's metadata document asks for a shared secret");
  }
  // The client authenticates with `none` (PKCE only), or with its own key (`private_key_jwt`, RFC 7523 §2.2: the
  // document publishes its public keys, the draft's §4.2): it must say so, or offer one among its choices (the
  // RP-Metadata-Choices array ChatGPT sends; none is preferred there, as before), or say nothing.
  const choices = Array.isArray(d.token_endpoint_auth_methods_supported) ? d.token_endpoint_auth_methods_supported : undefined;
  const chosen = method ?? (choices === undefined ? "none" : choices.includes("none") ? "none" : choices.includes("private_key_jwt") ? "private_key_jwt" : undefined);
  if (chosen !== "none" && chosen !== "private_key_jwt") {
    throw invalid("The client's metadata document offers neither the none nor the private_key_jwt authentication method");
  }
  const keyed = chosen === "private_key_jwt";
  // Grant types this server lacks are ignored, not refused (Claude lists jwt-bearer beside authorization_code);
  // absent ones take the door's default (the code flow and refresh).
  const declared = Array.isArray(d.grant_types) ? d.grant_types : undefined;
  if (declared !== undefined && !declared.includes("authorization_code")) throw invalid("The client's metadata document does not use authorization_code");
  const grantTypes = declared === undefined ? undefined : declared.includes("refresh_token") ? ["authorization_code", "refresh_token"] : ["authorization_code"];
  if (Array.isArray(d.response_types) && !d.response_types.includes("code")) {
    throw invalid("The client's metadata document does not use response_type code");
  }
  const scopes = typeof d.scope === "string" ? d.scope.split(" ").filter((s) => context.scopes.has(s)) : [...context.scopes.keys()];
  if (scopes.length === 0) throw invalid("The client's metadata document asks for no scope this server has");
  const metadata: Record<string, unknown> = {};
  for (const name of ECHOED) if (isString(d[name])) metadata[name] = d[name];
  const draft: ClientDraft = {
    client_id: clientId,
    name: d.client_name,
    type: keyed ? "confidential" : "public",
    redirect_uris: d.redirect_uris as string[],
    scopes,
    ...(grantTypes === undefined ? {} : { grant_types: grantTypes }),
    // The door checks the keys: a JWK Set of public keys, or an https URL on a public host (an origin the
    // operator listed excepted).
    ...(keyed ? { token_endpoint_auth_method: "private_key_jwt" as const } : {}),
    ...(keyed && d.jwks !== undefined ? { jwks: d.jwks as NonNullable<ClientDraft["jwks"]> } : {}),
    ...(keyed && d.jwks_uri !== undefined ? { jwks_uri: d.jwks_uri as string } : {}),
    metadata,
  };
  const defaults = context.defaultScope?.split(" ").filter((s) => scopes.includes(s)) ?? [];
  if (defaults.length > 0) draft.default_scope = defaults.join(" ");
  try {
    return context.admission.admit(draft, { origin: "document", relaxHttp: exempt }).client;
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    throw invalid(`The client's metadata document is refused: ${error.message.replace(/^Cannot register client: /, "")}`);
  }
}
