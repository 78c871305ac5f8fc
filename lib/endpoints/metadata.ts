/**
 * Authorization server metadata (RFC 8414).
 *
 * @module
 */
import { CLIENT_AUTH_METHOD_NAMES, SECRET_AUTH_METHOD_NAMES } from "../client_auth/registry.ts";
import { GRANT_TYPES } from "../grants/registry.ts";
import type { ResponseParts } from "../http.ts";
import type { ServerContext } from "../options.ts";

/** The metadata document for this server's options. */
export function metadataDocument(context: ServerContext): Record<string, unknown> {
  const at = (path: string | null) => (path === null ? undefined : context.issuer + path);
  const spec = (action: string) =>
    context.specAddresses ? `${context.issuer}/index.php?module=OAuth2&action=${action}` : undefined;
  const doc: Record<string, unknown> = {
    issuer: context.issuer,
    authorization_endpoint: context.authenticateUser
      ? at(context.paths.authorize) ?? spec("authorize")
      : undefined,
    token_endpoint: at(context.paths.token) ?? spec("token"),
    revocation_endpoint: at(context.paths.revoke),
    introspection_endpoint: at(context.paths.introspect),
    scopes_supported: [...context.scopes.keys()],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: GRANT_TYPES,
    token_endpoint_auth_methods_supported: CLIENT_AUTH_METHOD_NAMES,
    revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHOD_NAMES,
    // RFC 7662 §2.1: the caller must authenticate (a public client proves nothing).
    introspection_endpoint_auth_methods_supported: SECRET_AUTH_METHOD_NAMES,
    code_challenge_methods_supported: ["S256"],
    registration_endpoint: context.registration ? context.issuer + "/register" : undefined,
    client_id_metadata_document_supported: context.documents ? true : undefined,
    authorization_response_iss_parameter_supported: true,
  };
  for (const key of Object.keys(doc)) if (doc[key] === undefined) delete doc[key];
  return doc;
}

/** `GET /.well-known/oauth-authorization-server[issuer path]` (RFC 8414 §3). */
export function metadataEndpoint(context: ServerContext): ResponseParts {
  return {
    status: 200,
    headers: [["content-type", "application/json;charset=UTF-8"], ["cache-control", "max-age=300"]],
    body: JSON.stringify(metadataDocument(context)),
  };
}
