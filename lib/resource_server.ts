/**
 * Resource-server helpers: protect an API or an MCP server with this server's access tokens, in the same
 * process or elsewhere through introspection. Publishes RFC 9728 protected-resource metadata, answers 401 with
 * `WWW-Authenticate: Bearer resource_metadata="…", scope="…"` (RFC 9728 §5.1, RFC 6750 §3), 403
 * `insufficient_scope` naming the scopes the call needs (step-up), and checks that the token's audience
 * (RFC 8707) names this resource exactly (scheme and host case aside), so a token minted for another server is
 * refused (confused deputy).
 *
 * @module
 */
import type { AccessTokenInfo } from "./bearer.ts";
import { challengeJson, toOAuthError } from "./core/render.ts";
import { OAuthError } from "./errors.ts";
import { challenge, checkBinding, confirmedKey, presentation, quoted, resourceDpop, type ResourceDpopOptions, type Scheme } from "./features/dpop_resource.ts";
import { OFFLINE_ACCESS } from "./scope.ts";
import { canonicalResource, checkResourceUri } from "./resource_uri.ts";

export { type JwksFetchOptions, type JwtTokenVerifier, jwtTokenVerifier, type JwtTokenVerifierOptions } from "./jwt_token_verifier.ts";
export type { ResourceDpopOptions } from "./features/dpop_resource.ts";

/**
 * Looks an access token up; resolves to what it grants, or null when it is unknown, expired or revoked. Throw
 * (or reject) only when the answer cannot be known, e.g. the store or the introspection endpoint is down.
 */
export type TokenVerifier = (token: string) => Promise<AccessTokenInfo | null>;

/** Options of {@link protectedResource}. */
export interface ProtectedResourceOptions {
  /** The resource identifier (RFC 8707, RFC 9728 §2): an absolute https URL (http on loopback), no fragment. */
  resource: string;
  /** Issuers whose tokens are accepted (`authorization_servers`). */
  authorizationServers: string[];
  /** How tokens are looked up: {@link localTokenVerifier}, `jwtTokenVerifier` or {@link introspectionTokenVerifier}. */
  verify: TokenVerifier;
  /**
   * Scopes this resource uses (`scopes_supported`); also the `scope` of a 401 challenge when the call needs
   * none of its own. An MCP host asks for all of them when the challenge names none. Never `offline_access`
   * (MCP 2026-07-28: that one is the authorization server's business, not the resource's).
   */
  scopesSupported?: string[];
  /** Human-readable name (`resource_name`). */
  resourceName?: string;
  /** Called with each failure to check a token (the store or introspection endpoint down); never sent. */
  onError?: (error: unknown, context: { endpoint: string; method: string; path: string }) => void;
  /**
   * Tokens must name this resource in their audience. Default true. False also accepts tokens bound to no
   * resource at all (from clients that never send `resource`); a token bound to another resource stays refused.
   */
  requireAudience?: boolean;
  /**
   * DPoP (RFC 9449 §7): DPoP-bound tokens are taken with the DPoP scheme and a proof of their key for the request
   * (`htu`: this resource's origin and the request's path), and refused as Bearer tokens; the challenges name
   * both schemes. On by default; `{ required: true }` refuses Bearer tokens, `false` takes Bearer tokens only.
   */
  dpop?: ResourceDpopOptions | false;
  /** The clock proofs are judged by, in milliseconds. Default `Date.now`. */
  now?: () => number;
}

/** What {@link protectedResource} returns. */
export interface ProtectedResource {
  /** The RFC 9728 §2 metadata document. */
  readonly metadata: Record<string, unknown>;
  /** Where the metadata is published: `{origin}/.well-known/oauth-protected-resource{path}` (RFC 9728 §3.1). */
  readonly metadataUrl: string;
  /**
   * Answers `GET` (and CORS preflights) for the metadata, at its path-variant address and at the bare
   * `/.well-known/oauth-protected-resource`; null for any other request, so it can sit in front of a router.
   */
  metadataResponse(request: Request): Response | null;
  /**
   * Checks the request's Bearer token for `scopes` (all required). Throws `OAuthError` whose `status` and
   * `www-authenticate` header are the answer to send; {@link ProtectedResource.protect} does that for you. A
   * handler that needs more for one operation (a tool that writes) calls it again with those scopes: the 403
   * `insufficient_scope` names exactly them (RFC 6750 §3.1), and the client asks for them on top of what it has
   * (MCP 2026-07-28 step-up, SEP-2350).
   */
  verify(request: Request, scopes?: string[]): Promise<AccessTokenInfo>;
  /**
   * Wraps a handler: it runs only for a valid token with `scopes`; every refusal is rendered as RFC 6750 §3.
   * `scopes` may be a function of the request, for an endpoint whose operations need different scopes (an MCP
   * tool that writes): the 403 then names what this call needs, and the host steps up.
   */
  protect(
    scopes: RequiredScopes,
    handler: (request: Request, token: AccessTokenInfo) => Response | Promise<Response>,
  ): (request: Request) => Promise<Response>;
}

/** The scopes a call needs: fixed, none, or worked out from the request. */
export type RequiredScopes =
  | string[]
  | undefined
  | ((request: Request) => string[] | undefined | Promise<string[] | undefined>);

const WELL_KNOWN = "/.well-known/oauth-protected-resource";

/**
 * Creates the helpers for one protected resource.
 *
 * @example
 * ```ts
 * const mcp = protectedResource({
 *   resource: "https://mcp.example.com/mcp",
 *   authorizationServers: [server.issuer],
 *   verify: localTokenVerifier(server),
 *   scopesSupported: ["notes.read"],
 * });
 * const handler = mcp.protect(["notes.read"], (request, token) => handleMcp(request, token));
 * Deno.serve((request) => mcp.metadataResponse(request) ?? handler(request));
 * ```
 */
export function protectedResource(options: ProtectedResourceOptions): ProtectedResource {
  const url = checkResource(options.resource);
  const audience = canonicalResource(options.resource)!;
  if (options.scopesSupported?.includes(OFFLINE_ACCESS)) {
    throw new TypeError(`Cannot protect resource: "scopesSupported" must not list ${OFFLINE_ACCESS}: it asks the authorization server for a refresh token, and no resource needs it`);
  }
  const path = url.pathname === "/" ? "" : url.pathname;
  const metadataUrl = url.origin + WELL_KNOWN + path;
  const dpop = resourceDpop(options.dpop);
  const now = options.now ?? Date.now;
  const metadata: Record<string, unknown> = {
    resource: options.resource,
    authorization_servers: [...options.authorizationServers],
    bearer_methods_supported: ["header"],
  };
  if (options.scopesSupported) metadata.scopes_supported = [...options.scopesSupported];
  if (options.resourceName !== undefined) metadata.resource_name = options.resourceName;
  // RFC 9728 §2.
  if (dpop !== null) metadata.dpop_signing_alg_values_supported = [...dpop.algorithms];
  if (dpop?.required) metadata.dpop_bound_access_tokens_required = true;
  const body = JSON.stringify(metadata);
  const requireAudience = options.requireAudience ?? true;

  const header = (scheme: Scheme | undefined, error: string | undefined, description: string | undefined, scopes: string[] | undefined) => {
    const params: string[] = [];
    if (error !== undefined) params.push(`error=${quoted(error)}`);
    if (description !== undefined) params.push(`error_description=${quoted(description)}`);
    const scope = (scopes ?? options.scopesSupported)?.filter((s) => s !== OFFLINE_ACCESS);
    if (scope && scope.length > 0) params.push(`scope=${quoted(scope.join(" "))}`);
    return challenge([`resource_metadata=${quoted(metadataUrl)}`], dpop, { scheme, params });
  };
  const refuse = (error: OAuthError, scheme: Scheme, scopes?: string[]) => {
    const description = error.description ?? error.code;
    return new OAuthError(error.code, { description, status: error.status, headers: { "www-authenticate": header(scheme, error.code, description, scopes) } });
  };

  async function verify(request: Request, scopes?: string[]): Promise<AccessTokenInfo> {
    const presented = presentation(request.headers.get("authorization"), dpop);
    if (presented.kind === "absent") {
      // RFC 6750 §3.1: no error code when the request carried no token at all.
      throw new OAuthError("invalid_token", {
        description: "An access token is required",
        headers: { "www-authenticate": header(undefined, undefined, undefined, scopes) },
      });
    }
    const { scheme } = presented;
    if (presented.kind === "malformed") throw refuse(new OAuthError("invalid_request", { description: "The Authorization header is malformed" }), scheme, scopes);
    let info: AccessTokenInfo | null;
    try {
      info = await options.verify(presented.token);
    } catch (cause) {
      if (cause instanceof OAuthError && cause.status === 503) throw cause;
      throw new OAuthError("temporarily_unavailable", { description: "The token could not be checked", cause });
    }
    if (info === null) throw refuse(new OAuthError("invalid_token", { description: "The access token is invalid or has expired" }), scheme, scopes);
    try {
      await checkBinding(presented, info.jkt, request, url.origin, dpop, now());
    } catch (error) {
      throw error instanceof OAuthError ? refuse(error, scheme, scopes) : error;
    }
    // Exact comparison of canonical forms (the server binds tokens to those): no prefix, path case folding or
    // other normalisation, so a sibling resource's token never passes.
    if ((info.aud !== undefined || requireAudience) && !(info.aud ?? []).includes(audience)) {
      throw refuse(new OAuthError("invalid_token", { description: "The access token was not issued for this resource" }), scheme, scopes);
    }
    const granted = info.scope.split(" ");
    if (scopes && !scopes.every((s) => granted.includes(s))) {
      throw refuse(new OAuthError("insufficient_scope", { description: "The access token does not grant the required scope" }), scheme, scopes);
    }
    return info;
  }

  return {
    metadata,
    metadataUrl,
    metadataResponse(request) {
      const { pathname } = new URL(request.url);
      if (pathname !== WELL_KNOWN + path && pathname !== WELL_KNOWN) return null;
      // Public metadata: any origin may read it (browser-based MCP clients discover the server this way).
      const cors = { "access-control-allow-origin": "*" };
      if (request.method === "OPTIONS") {
        return new Response(null, {
          status: 204,
          headers: { ...cors, "access-control-allow-methods": "GET", "access-control-max-age": "86400" },
        });
      }
      if (request.method !== "GET" && request.method !== "HEAD") {
        return new Response(null, { status: 405, headers: { allow: "GET, HEAD, OPTIONS" } });
      }
      return new Response(request.method === "HEAD" ? null : body, {
        headers: { ...cors, "content-type": "application/json", "cache-control": "max-age=300" },
      });
    },
    verify,
    protect(scopes, handler) {
      return async (request) => {
        let token: AccessTokenInfo;
        try {
          token = await verify(request, typeof scopes === "function" ? await scopes(request) : scopes);
        } catch (error) {
          return challengeResponse(error, request, options.onError);
        }
        return handler(request, token);
      };
    },
  };
}

/** The RFC 6750 §3 answer for a refusal; anything unexpected becomes a generic 500 without details. */
function challengeResponse(error: unknown, request: Request, onError: ProtectedResourceOptions["onError"]): Response {
  const where = { endpoint: "resource", method: request.method, path: new URL(request.url).pathname };
  const parts = challengeJson(toOAuthError(error, onError ?? (() => {}), where));
  return new Response(request.method === "HEAD" ? null : parts.body, parts);
}

function checkResource(resource: string): URL {
  const url = checkResourceUri(resource);
  if (url === null || canonicalResource(resource) === null) {
    throw new TypeError(`Cannot protect resource: "resource" must be an absolute https URL without fragment: "${resource}"`);
  }
  return url;
}

/** Options of {@link introspectionTokenVerifier}. */
export interface IntrospectionVerifierOptions {
  /** The authorization server's RFC 7662 endpoint. */
  endpoint: string;
  /** A confidential client allowed to introspect every token (reference config: `"introspection": "all"`). */
  clientId: string;
  /** That client's secret; sent with client_secret_basic. */
  clientSecret: string;
  /** Default `globalThis.fetch`. */
  fetch?: (request: Request) => Promise<Response>;
  /** Milliseconds before the call is abandoned. Default 5000. */
  timeout?: number;
}

/**
 * A {@link TokenVerifier} for a resource server in another process: asks the authorization server's
 * introspection endpoint (RFC 7662) with client_secret_basic. An inactive answer is null; an unreachable server
 * or an error status throws (the guard then answers 503).
 */
export function introspectionTokenVerifier(options: IntrospectionVerifierOptions): TokenVerifier {
  const doFetch = options.fetch ?? ((request: Request) => fetch(request));
  // RFC 6749 §2.3.1: form-encode the id and secret before base64.
  const form = (value: string) => encodeURIComponent(value).replace(/%20/g, "+");
  const basic = btoa(`${form(options.clientId)}:${form(options.clientSecret)}`);
  return async (token) => {
    const response = await doFetch(new Request(options.endpoint, {
      method: "POST",
      headers: { authorization: `Basic ${basic}`, "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams({ token, token_type_hint: "access_token" }).toString(),
      signal: AbortSignal.timeout(options.timeout ?? 5000),
    }));
    if (response.status !== 200) throw new Error(`Introspection failed with status ${response.status}`);
    const body = await response.json() as Record<string, unknown>;
    // Only access tokens: a refresh token has no token_type (RFC 7662 §2.2), and must never open a resource.
    const type = typeof body.token_type === "string" ? body.token_type.toLowerCase() : undefined;
    if (body.active !== true || (type !== "bearer" && type !== "dpop")) return null;
    if (typeof body.client_id !== "string" || typeof body.scope !== "string" || typeof body.exp !== "number") return null;
    // RFC 9449 §6.2: a DPoP token names its key; a confirmation this guard cannot check opens nothing.
    const jkt = confirmedKey(body.cnf);
    if (jkt === null || (type === "dpop") !== (jkt !== undefined)) return null;
    const info: AccessTokenInfo = { client_id: body.client_id, scope: body.scope, exp: body.exp };
    if (jkt !== undefined) info.jkt = jkt;
    if (typeof body.sub === "string") info.user_id = body.sub;
    if (typeof body.aud === "string") info.aud = [body.aud];
    else if (Array.isArray(body.aud)) info.aud = body.aud.filter((a): a is string => typeof a === "string");
    return info;
  };
}

/** What {@link localTokenVerifier} needs: the server's `tokenInfo`. */
export interface LocalVerifierSource {
  /** What a live access token grants (with its DPoP key), or null; rejects when the store cannot answer. */
  tokenInfo(token: string): Promise<AccessTokenInfo | null>;
}

/** A {@link TokenVerifier} for a resource served by the authorization server's own process (and store). */
export function localTokenVerifier(server: LocalVerifierSource): TokenVerifier {
  return (token) => server.tokenInfo(token);
}
