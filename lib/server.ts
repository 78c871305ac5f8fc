/**
 * `createAuthorizationServer`: the public entry point. It builds the server from the core's tables (endpoints,
 * grants, client-authentication methods) and the feature table, and wraps it in the public API.
 *
 * @module
 */
import type { AccessTokenInfo } from "./bearer.ts";
import { CLIENT_AUTH_METHODS } from "./client_auth/registry.ts";
import { clientRegistry, type ClientRegistry } from "./clients.ts";
import { assemble, optionTable, type ServerTables } from "./core/assemble.ts";
import type { OptionSpec } from "./core/option_table.ts";
import { errorJson, toOAuthError } from "./core/render.ts";
import { createRouter } from "./core/router.ts";
import { ENDPOINTS } from "./endpoints/index.ts";
import { FEATURES } from "./features/index.ts";
import { type JwtAccessTokens, type SigningKeys, signingKeys } from "./features/jwt_access_tokens.ts";
import { GRANTS } from "./grants/registry.ts";
import type { Dpop } from "./features/dpop.ts";
import type { ResourceDpop } from "./features/dpop_resource.ts";
import { audienceRule, GUARD_READS, type ProtectOptions, tokenInfo, verifyToken } from "./guard.ts";
import { pathOf, remoteAddressOf, respond, targetOf } from "./http.ts";
import type { AuthorizationServerOptions } from "./options.ts";
import type { Storage } from "./storage/types.ts";
import { bindView } from "./core/view.ts";

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
  /** Registers, reads, pauses, resumes, deletes clients and rotates their secrets. */
  readonly clients: ClientRegistry;
  /** The store in use. */
  readonly storage: Storage;
  /**
   * The signing keys of JWT access tokens (RFC 9068) and `/jwks`: list, rotate, and a key source for local
   * verification. `await server.keys.ready()` at start reports a runtime without the algorithm or a secret
   * that does not open the stored keys.
   */
  readonly keys: SigningKeys;
  /**
   * Verifies the access token of a resource request: a Bearer token (RFC 6750), or with DPoP on a DPoP-bound
   * token and the request's proof (RFC 9449 §7). Throws `OAuthError` whose `status` and `headers`
   * (`WWW-Authenticate`) are what to answer with; {@link AuthorizationServer.protect} does that for you.
   */
  verifyAccessToken(request: Request, requiredScope?: string): Promise<AccessTokenInfo>;
  /**
   * {@link AuthorizationServer.verifyAccessToken} for a bare `Authorization` header value: Bearer tokens only,
   * since a DPoP-bound token needs its request's proof.
   */
  verifyAuthorization(authorization: string | null, requiredScope?: string): Promise<AccessTokenInfo>;
  /**
   * What a live access token grants, and the DPoP key it is bound to (`jkt`), or null when it is unknown,
   * expired, revoked or its client paused. No scheme, proof, audience or scope check: for a guard that makes
   * those itself (`localTokenVerifier` with `protectedResource`). Rejects when the store cannot answer.
   */
  tokenInfo(token: string): Promise<AccessTokenInfo | null>;
  /**
   * Wraps a resource handler: it runs only for a valid token with `requiredScope` whose audience fits `options`
   * (by default: a token bound to no resource; with `audience`, also one bound to it; see {@link ProtectOptions}).
   * Refusals follow RFC 6750 §3, and store failures become a generic 5xx reported to `onError`, as at the
   * endpoints. For an API other processes reach, or MCP, prefer `protectedResource` (RFC 9728 metadata).
   */
  protect(
    requiredScope: string | undefined,
    handler: (request: Request, token: AccessTokenInfo) => Response | Promise<Response>,
    options?: ProtectOptions,
  ): (request: Request, info?: unknown) => Promise<Response>;
  /** The RFC 8414 metadata document. */
  metadata(): Record<string, unknown>;
}

/** The tables a server is built from: the core's endpoints, grants and methods, and the feature table. */
export const SERVER_TABLES: ServerTables = { endpoints: ENDPOINTS, grants: GRANTS, clientAuth: CLIENT_AUTH_METHODS, features: FEATURES };

/** Every option of `createAuthorizationServer`, with its type, docs and config key (the one option table). */
export const OPTIONS: readonly OptionSpec[] = optionTable(FEATURES);

/**
 * Creates an authorization server. Options are checked at once; a bad one throws `ConfigurationError` whose
 * `option` names it.
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
  const { core, endpoints, hooks, states } = assemble(options, SERVER_TABLES);
  const route = createRouter(core, endpoints, hooks);
  const guard = bindView(core, new Map(), GUARD_READS, []) as never;
  const dpopState = states.get("dpop") as Dpop;
  // DPoP at the server's own APIs when it issues DPoP-bound tokens; proofs are marked used in the shared store.
  const dpop: ResourceDpop | null = dpopState.enabled
    ? { required: false, algorithms: dpopState.algorithms, markOnce: (key, expiresAt, now) => core.storage.markOnce(key, expiresAt, now) }
    : null;
  const verifyAuthorization = (authorization: string | null, requiredScope?: string) =>
    verifyToken(authorization, undefined, requiredScope, guard, { dpop });

  return {
    issuer: core.issuer,
    fetch: (request, info) => route(request, remoteAddressOf(request, info)),
    clients: clientRegistry(core),
    storage: core.storage,
    keys: signingKeys(states.get("jwt_access_tokens") as JwtAccessTokens),
    verifyAuthorization,
    verifyAccessToken: (request, requiredScope) => verifyToken(request.headers.get("authorization"), request, requiredScope, guard, { dpop }),
    tokenInfo: (token) => tokenInfo(token, guard),
    protect: (requiredScope, handler, options) => {
      const audience = audienceRule(options);
      return async (request) => {
        let token: AccessTokenInfo;
        try {
          token = await verifyToken(request.headers.get("authorization"), request, requiredScope, guard, { audience, dpop });
        } catch (error) {
          const where = { endpoint: "resource", method: request.method, path: pathOf(targetOf(request.url)) };
          return respond(request, errorJson(toOAuthError(error, core.onError, where)));
        }
        return handler(request, token);
      };
    },
    metadata: () => structuredClone(core.metadata) as Record<string, unknown>,
  };
}
