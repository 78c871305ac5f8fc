/**
 * The features the suite knows, each with how it is detected from the server's RFC 8414 metadata. A case names
 * the features it needs (`CaseDef.features`); where one is not offered the case is NOT_OFFERED, never passed.
 * A target file may still say what the server has (`features`), overriding what the metadata says.
 *
 * @module
 */

/** The server's RFC 8414 metadata document, as parsed JSON. */
export type Metadata = Record<string, unknown>;

/** One optional feature of an authorization server. */
export interface FeatureDef {
  /** What it is, for reports. */
  title: string;
  /** The specification that defines it. */
  ref: string;
  /** How the suite detects it, in words: the metadata field and value. */
  detected_by: string;
  /** Whether the metadata advertises it. */
  detect(metadata: Metadata): boolean;
}

const has = (m: Metadata, key: string, value: string): boolean =>
  Array.isArray(m[key]) && (m[key] as unknown[]).includes(value);
const url = (m: Metadata, key: string): boolean => typeof m[key] === "string" && URL.canParse(m[key] as string);

/** The grant type URNs (RFC 7523, RFC 8693, RFC 8628). */
export const GRANT: { readonly jwt_bearer: string; readonly token_exchange: string; readonly device_code: string } = {
  jwt_bearer: "urn:ietf:params:oauth:grant-type:jwt-bearer",
  token_exchange: "urn:ietf:params:oauth:grant-type:token-exchange",
  device_code: "urn:ietf:params:oauth:grant-type:device_code",
} as const;

/** A feature id: a row of {@link FEATURES}. */
export type FeatureId =
  | "metadata"
  | "response_type_code"
  | "pkce_s256"
  | "client_credentials"
  | "registration"
  | "client_id_metadata_documents"
  | "revocation"
  | "introspection"
  | "jwt_access_tokens"
  | "private_key_jwt"
  | "jwt_bearer"
  | "token_exchange"
  | "device_code"
  | "device_authorization"
  | "dpop"
  | "iss_parameter"
  | "resource_indicators"
  | "offline_access";

/** Every feature the suite knows, by id. */
export const FEATURES: Readonly<Record<FeatureId, FeatureDef>> = {
  metadata: {
    title: "Authorization server metadata",
    ref: "RFC 8414 §3",
    detected_by: "a JSON object at the metadata URL",
    detect: () => true,
  },
  response_type_code: {
    title: "The authorization code response type announced",
    ref: "RFC 8414 §2 (response_types_supported REQUIRED)",
    detected_by: 'response_types_supported contains "code"',
    detect: (m) => has(m, "response_types_supported", "code"),
  },
  pkce_s256: {
    title: "PKCE with S256 announced",
    ref: "RFC 8414 §2; RFC 7636 §4.2",
    detected_by: 'code_challenge_methods_supported contains "S256"',
    detect: (m) => has(m, "code_challenge_methods_supported", "S256"),
  },
  client_credentials: {
    title: "The client_credentials grant",
    ref: "RFC 6749 §4.4",
    detected_by: 'grant_types_supported contains "client_credentials"',
    detect: (m) => has(m, "grant_types_supported", "client_credentials"),
  },
  registration: {
    title: "Dynamic client registration",
    ref: "RFC 7591 §3",
    detected_by: "registration_endpoint",
    detect: (m) => url(m, "registration_endpoint"),
  },
  client_id_metadata_documents: {
    title: "Client ID metadata documents",
    ref: "draft-ietf-oauth-client-id-metadata-document §5",
    detected_by: "client_id_metadata_document_supported: true",
    detect: (m) => m.client_id_metadata_document_supported === true,
  },
  revocation: {
    title: "Token revocation",
    ref: "RFC 7009 §2",
    detected_by: "revocation_endpoint",
    detect: (m) => url(m, "revocation_endpoint"),
  },
  introspection: {
    title: "Token introspection",
    ref: "RFC 7662 §2",
    detected_by: "introspection_endpoint",
    detect: (m) => url(m, "introspection_endpoint"),
  },
  jwt_access_tokens: {
    title: "JWT access tokens and a JWK Set",
    ref: "RFC 9068; RFC 8414 §2 (jwks_uri)",
    detected_by: "jwks_uri",
    detect: (m) => url(m, "jwks_uri"),
  },
  private_key_jwt: {
    title: "private_key_jwt client authentication",
    ref: "RFC 7523 §2.2; OpenID Connect Core §9",
    detected_by: 'token_endpoint_auth_methods_supported contains "private_key_jwt"',
    detect: (m) => has(m, "token_endpoint_auth_methods_supported", "private_key_jwt"),
  },
  jwt_bearer: {
    title: "The JWT bearer grant (ID-JAG, workload tokens)",
    ref: "RFC 7523 §2.1",
    detected_by: `grant_types_supported contains "${GRANT.jwt_bearer}"`,
    detect: (m) => has(m, "grant_types_supported", GRANT.jwt_bearer),
  },
  token_exchange: {
    title: "Token exchange",
    ref: "RFC 8693 §2",
    detected_by: `grant_types_supported contains "${GRANT.token_exchange}"`,
    detect: (m) => has(m, "grant_types_supported", GRANT.token_exchange),
  },
  device_code: {
    title: "The device_code grant",
    ref: "RFC 8628 §3.4",
    detected_by: `grant_types_supported contains "${GRANT.device_code}"`,
    detect: (m) => has(m, "grant_types_supported", GRANT.device_code),
  },
  device_authorization: {
    title: "The device authorization endpoint",
    ref: "RFC 8628 §3.1, §4",
    detected_by: "device_authorization_endpoint",
    detect: (m) => url(m, "device_authorization_endpoint"),
  },
  dpop: {
    title: "DPoP sender-constrained tokens",
    ref: "RFC 9449 §5.1",
    detected_by: "dpop_signing_alg_values_supported (a non-empty list)",
    detect: (m) => Array.isArray(m.dpop_signing_alg_values_supported) && m.dpop_signing_alg_values_supported.length > 0,
  },
  iss_parameter: {
    title: "iss in authorization responses",
    ref: "RFC 9207 §3",
    detected_by: "authorization_response_iss_parameter_supported: true",
    detect: (m) => m.authorization_response_iss_parameter_supported === true,
  },
  resource_indicators: {
    title: "Resource indicators",
    ref: "RFC 8707 §2",
    // RFC 8707 registers no metadata field: a client learns the resource from the resource server (RFC 9728).
    detected_by: "no metadata field (RFC 8707 defines none): the target file's mcp.resource says it",
    detect: () => false,
  },
  offline_access: {
    title: "Refresh tokens that depend on offline_access",
    ref: "OpenID Connect Core §11; MCP authorization 2026-07-28 (refresh tokens, SEP-2207)",
    detected_by: 'scopes_supported contains "offline_access"',
    detect: (m) => has(m, "scopes_supported", "offline_access"),
  },
};

/** Whether `id` names a known feature. */
export function isFeature(id: string): id is FeatureId {
  return Object.hasOwn(FEATURES, id);
}

/** What the suite found out about one feature of the target. */
export interface FeatureStatus {
  /** The feature. */
  id: FeatureId;
  /** Its title. */
  title: string;
  /** Whether its cases run. */
  offered: boolean;
  /** Whether the metadata advertises it (false without metadata). */
  advertised: boolean;
  /** Where the answer came from: the metadata, or the target file (which overrides the metadata). */
  source: "metadata" | "target";
  /** How it was detected, in words. */
  detail: string;
}
