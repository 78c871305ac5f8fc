/**
 * `createAuthorizationServer`: the public entry point.
 *
 * @module
 */
import { type AccessTokenInfo, verifyBearer } from "./bearer.ts";
import { clientRegistry, type ClientRegistry } from "./clients.ts";
import { hmacKey } from "./crypto.ts";
import { metadataDocument } from "./endpoints/metadata.ts";
import { bindGrants } from "./grants/registry.ts";
import { remoteAddressOf, respond, targetOf } from "./http.ts";
import { type AuthorizationServerOptions, resolveOptions, type ServerContext } from "./options.ts";
import { createRouter, resourceErrorResponse } from "./router.ts";
import type { Storage } from "./storage/types.ts";

/** A running authorization server: a fetch handler plus the APIs around it. */
export interface AuthorizationServer {
  /** The issuer identifier, normalised (no trailing slash). */
  readonly issuer: string;
  /**
   * The Web-standard handler; bound, so Deno's and Bun's `serve` take `server.fetch` as it is. The optional
   * second argument is what those runtimes pass (Deno's handler info, Bun's server); the client's
   * address is read from it for throttling.
   */
  readonly fetch: (request: Request, info?: unknown) => Promise<Response>;
  /** Registers, reads, pauses and resumes clients. */
  readonly clients: ClientRegistry;
  /** The store in use. */
  readonly storage: Storage;
  /**
   * Verifies the Bearer token of a resource request (RFC 6750). Throws `OAuthError` whose `status` and
   * `headers` (`WWW-Authenticate`) are what to answer with; {@link AuthorizationServer.protect} does that for you.
   */
  verifyAccessToken(request: Request, requiredScope?: string): Promise<AccessTokenInfo>;
  /** {@link AuthorizationServer.verifyAccessToken} for a bare `Authorization` header value. */
  verifyAuthorization(authorization: string | null, requiredScope?: string): Promise<AccessTokenInfo>;
  /**
   * Wraps a resource handler: it runs only for a valid token with `requiredScope`; refusals follow RFC 6750 §3,
   * and store failures become a generic 5xx reported to `onError`, as at the endpoints.
   */
  protect(
    requiredScope: string | undefined,
    handler: (request: Request, token: AccessTokenInfo) => Response | Promise<Response>,
  ): (request: Request, info?: unknown) => Promise<Response>;
  /** The RFC 8414 metadata document. */
  metadata(): Record<string, unknown>;
}

/**
 * Creates an authorization server. Options are checked at once; a bad one throws `ConfigurationError`.
 *
 * @example
 * ```ts
 * const server = createAuthorizationServer({
 *   issuer: "https://auth.example.com",
 *   scopes: { "reports.read": "Read your analytics reports" },
 *   authenticateUser: passwordLogin({ verify, secret }),
 * });
 * await server.clients.register({ client_id: "dashboard", name: "Dashboard", type: "confidential",
 *   scopes: ["reports.read"], grant_types: ["client_credentials"] });
 * export default { fetch: server.fetch }; // `deno serve main.ts`, or `bun main.ts`
 * ```
 */
export function createAuthorizationServer(options: AuthorizationServerOptions): AuthorizationServer {
  const resolved = resolveOptions(options);
  let key: Promise<CryptoKey> | undefined;
  const base = { ...resolved, csrfKey: () => (key ??= hmacKey(resolved.secret)) };
  const context: ServerContext = Object.freeze({ ...base, grants: bindGrants(base) });
  const route = createRouter(context);
  const verifyAuthorization = (authorization: string | null, requiredScope?: string) =>
    verifyBearer(authorization, requiredScope, context);

  return {
    issuer: context.issuer,
    fetch: (request, info) => route(request, remoteAddressOf(request, info)),
    clients: clientRegistry(context),
    storage: context.storage,
    verifyAuthorization,
    verifyAccessToken: (request, requiredScope) => verifyAuthorization(request.headers.get("authorization"), requiredScope),
    protect: (requiredScope, handler) => async (request, info) => {
      let token: AccessTokenInfo;
      try {
        token = await verifyAuthorization(request.headers.get("authorization"), requiredScope);
      } catch (error) {
        const incoming = { request, target: targetOf(request.url), remoteAddress: remoteAddressOf(request, info) };
        return respond(request, resourceErrorResponse(error, incoming, context));
      }
      return handler(request, token);
    },
    metadata: () => metadataDocument(context),
  };
}
