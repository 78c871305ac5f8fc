/**
 * A resource server's local check of JWT access tokens (RFC 9068 §4): the signature against the issuer's keys
 * (fetched from its `jwks_uri`, or, in the issuer's own process, held in memory), then `typ`, `iss`, `aud` and
 * `exp`. No call to the authorization server per request; the price is that a revoked token stays valid here
 * until it expires.
 *
 * @module
 */
import type { AccessTokenInfo } from "./bearer.ts";
import { confirmedKey } from "./features/dpop_resource.ts";
import type { JwsAlgorithm } from "./jose/algorithms.ts";
import { JoseError } from "./jose/errors.ts";
import type { KeySource } from "./jose/jws.ts";
import { type JwtClaims, verifyJwt } from "./jose/jwt.ts";
import { remoteJwks } from "./jose/remote_jwks.ts";
import { makeRoom } from "./evict.ts";

/** How {@link jwtTokenVerifier} fetches and keeps the issuer's JWK Set. Times in milliseconds. */
export interface JwksFetchOptions {
  /** The fetch to use. Default `globalThis.fetch`. */
  fetch?: (request: Request) => Promise<Response>;
  /** Deadline of one fetch. Default 5000. */
  timeout?: number;
  /** Largest set read, in bytes. Default 64 KiB. */
  maxBytes?: number;
  /** Least time between two fetches caused by an unknown `kid` or a failure. Default 30 000. */
  cooldown?: number;
  /** Least lifetime of a fetched set, whatever Cache-Control says. Default 30 000. */
  minTtl?: number;
  /** Longest lifetime of a fetched set. Default 24 h. */
  maxTtl?: number;
  /** Lifetime when Cache-Control gives none. Default 10 min. */
  defaultTtl?: number;
}

/** Options of {@link jwtTokenVerifier}. */
export interface JwtTokenVerifierOptions {
  /** The audience this resource answers to (its RFC 8707 resource identifier), compared exactly. */
  audience: string;
  /** The accepted `iss`, compared exactly. Default with `server`: its issuer. */
  issuer?: string;
  /** The issuer's JWK Set (its metadata's `jwks_uri`): fetched, cached, refetched once on an unknown `kid`. */
  jwksUri?: string | URL;
  /** The authorization server of this process: its keys are read from memory, with no fetch at all. */
  server?: { readonly issuer: string; readonly keys: { readonly keySource: KeySource } };
  /** Accepted algorithms (RFC 8725 §3.1). Default ES256, EdDSA, RS256, PS256; never `none` or HMAC. */
  algorithms?: readonly JwsAlgorithm[];
  /** Clock skew allowed on `exp`, `nbf` and `iat`, in seconds (at most 300). Default 0. */
  clockTolerance?: number;
  /** How the JWK Set is fetched (timeouts, caching bounds, a custom fetch); the URL is trusted as configured. */
  jwks?: JwksFetchOptions;
  /**
   * Verified tokens remembered (by their exact text) so that a token presented again costs no signature check:
   * each until its `exp`, at most {@link JwtTokenVerifierOptions.cacheSeconds}. Default 1000; 0 remembers none.
   */
  cacheSize?: number;
  /** Longest a verified token is remembered, in seconds. Default 60. */
  cacheSeconds?: number;
  /** The clock, in ms. Default `Date.now`. */
  now?: () => number;
}

/** What a resolver of tokens returns: the grant, or null for any token that is not valid here. */
export type JwtTokenVerifier = (token: string) => Promise<AccessTokenInfo | null>;

const DEFAULT_ALGORITHMS: readonly JwsAlgorithm[] = ["ES256", "EdDSA", "RS256", "PS256"];
// RFC 9068 §2.2: required in every JWT access token.
const REQUIRED = ["iss", "exp", "aud", "sub", "client_id", "iat", "jti"] as const;

/**
 * A `TokenVerifier` for {@link protectedResource} (and the example MCP server) that verifies RFC 9068 tokens
 * locally. Resolves null for a token that is malformed, forged, expired, of another type (`typ` must be
 * `at+jwt`), issuer or audience; rejects only when the keys cannot be had (the resource then answers 503).
 *
 * @example
 * ```ts
 * const verify = jwtTokenVerifier({
 *   issuer: "https://auth.example.com",
 *   jwksUri: "https://auth.example.com/jwks",
 *   audience: "https://mcp.example.com/mcp",
 * });
 * const mcp = protectedResource({ resource: "https://mcp.example.com/mcp", authorizationServers: [issuer], verify });
 * ```
 */
export function jwtTokenVerifier(options: JwtTokenVerifierOptions): JwtTokenVerifier {
  const issuer = options.issuer ?? options.server?.issuer;
  if (issuer === undefined) throw new TypeError('Cannot verify tokens: "issuer" (or "server") is required');
  if (typeof options.audience !== "string" || options.audience === "") throw new TypeError('Cannot verify tokens: "audience" is required');
  const now = options.now ?? Date.now;
  let key: KeySource;
  if (options.server !== undefined) key = options.server.keys.keySource;
  else if (options.jwksUri !== undefined) key = remoteJwks(options.jwksUri, { trusted: true, ...options.jwks, now });
  else throw new TypeError('Cannot verify tokens: give "jwksUri" or "server"');
  const verifyOptions = {
    algorithms: options.algorithms ?? DEFAULT_ALGORITHMS,
    key,
    typ: "at+jwt",
    issuer,
    audience: options.audience,
    clockTolerance: options.clockTolerance ?? 0,
    requiredClaims: REQUIRED,
  };
  const cacheSize = options.cacheSize ?? 1000;
  const cacheMs = (options.cacheSeconds ?? 60) * 1000;
  const tolerance = verifyOptions.clockTolerance * 1000;
  const cache = new Map<string, { info: AccessTokenInfo; until: number }>();

  return async (token) => {
    const at = now();
    const hit = cache.get(token);
    if (hit !== undefined) {
      if (at < hit.until && at < hit.info.exp * 1000 + tolerance) return hit.info;
      cache.delete(token);
    }
    let payload: JwtClaims;
    try {
      ({ payload } = await verifyJwt(token, { ...verifyOptions, now: at }));
    } catch (error) {
      // A key set that cannot be had says nothing about the token: the resource answers 503, not 401.
      if (error instanceof JoseError && error.code !== "ERR_JWKS_FETCH_FAILED") return null;
      throw error;
    }
    const info = tokenInfo(payload);
    if (info === null) return null;
    if (cacheSize > 0) {
      makeRoom(cache, cacheSize);
      cache.set(token, { info, until: at + cacheMs });
    }
    return info;
  };
}

/** The grant a verified token carries; null when its claims have the wrong types. */
function tokenInfo(claims: JwtClaims): AccessTokenInfo | null {
  const { client_id: clientId, scope, sub, exp, aud } = claims;
  if (typeof clientId !== "string" || typeof sub !== "string" || typeof exp !== "number") return null;
  if (scope !== undefined && typeof scope !== "string") return null;
  // RFC 9449 §6.1: cnf.jkt binds the token to a DPoP key; a confirmation method this guard cannot check opens nothing.
  const jkt = confirmedKey(claims.cnf);
  if (jkt === null) return null;
  const info: AccessTokenInfo = { client_id: clientId, scope: scope ?? "", exp };
  if (jkt !== undefined) info.jkt = jkt;
  // RFC 9068 §2.2: sub names the client itself for client_credentials, else the user (the server keeps client
  // ids and user ids apart, as §5 asks).
  if (sub !== clientId) info.user_id = sub;
  info.aud = Object.freeze(typeof aud === "string" ? [aud] : [...(aud as string[])]) as string[];
  // Shared by every request that presents the token again: no handler may change what the next one sees.
  return Object.freeze(info) as AccessTokenInfo;
}
