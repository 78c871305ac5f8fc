/**
 * `createAuthorizationServer`: the public entry point.
 *
 * @module
 */
import { type AccessTokenInfo, verifyBearer } from "./bearer.ts";
import { clientRegistry, type ClientRegistry } from "./clients.ts";
import { hmacKey } from "./crypto.ts";
import { metadataDocument } from "./endpoints/metadata.ts";
import { fromRequest, type HttpRequest, type HttpResponse, toResponse } from "./http.ts";
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
  /** The same handler on the core's request shape, for adapters that avoid WHATWG objects (see `lib/http.ts`). */
  readonly handle: (request: HttpRequest) => Promise<HttpResponse>;
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
  ): (request: Request) => Promise<Response>;
  /** {@link AuthorizationServer.protect} on the core's request shape, for apps served through `handle`. */
  protectHandle(
    requiredScope: string | undefined,
    handler: (request: HttpRequest, token: AccessTokenInfo) => HttpResponse | Promise<HttpResponse>,
  ): (request: HttpRequest) => Promise<HttpResponse>;
  /** The RFC 8414 metadata document. */
  metadata(): Record<string, unknown>;
}

/** The client's address from the handler info Deno passes or the server object Bun passes, read structurally. */
function remoteAddress(request: Request, info: unknown): string | undefined {
  if (typeof info !== "object" || info === null) return undefined;
  const remoteAddr = (info as { remoteAddr?: { hostname?: unknown } }).remoteAddr;
  if (typeof remoteAddr?.hostname === "string") return remoteAddr.hostname;
  const requestIP = (info as { requestIP?: unknown }).requestIP;
  if (typeof requestIP === "function") {
    const address = (requestIP.call(info, request) as { address?: unknown } | null)?.address;
    if (typeof address === "string") return address;
  }
  return undefined;
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
  const context: ServerContext = { ...resolved, csrfKey: () => (key ??= hmacKey(resolved.secret)) };
  const handle = createRouter(context);
  const verifyAuthorization = (authorization: string | null, requiredScope?: string) =>
    verifyBearer(authorization, requiredScope, context);
  const protectHandle: AuthorizationServer["protectHandle"] = (requiredScope, handler) => async (request) => {
    let token: AccessTokenInfo;
    try {
      token = await verifyAuthorization(request.header("authorization"), requiredScope);
    } catch (error) {
      return resourceErrorResponse(error, request, context);
    }
    return handler(request, token);
  };

  return {
    issuer: context.issuer,
    handle,
    fetch: async (request, info) => toResponse(await handle(fromRequest(request, remoteAddress(request, info)))),
    clients: clientRegistry(context),
    storage: context.storage,
    verifyAuthorization,
    verifyAccessToken: (request, requiredScope) => verifyAuthorization(request.headers.get("authorization"), requiredScope),
    protect(requiredScope, handler) {
      const guarded = protectHandle(requiredScope, async (request, token) => ({
        status: 0,
        headers: [],
        body: null,
        passthrough: await handler(request.toRequest(), token),
      }));
      return async (request) => toResponse(await guarded(fromRequest(request)));
    },
    protectHandle,
    metadata: () => metadataDocument(context),
  };
}
