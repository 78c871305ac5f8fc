/**
 * JSON Web Tokens (RFC 7519) signed as JWS: explicit typing (RFC 8725 §3.11), an allow-list of algorithms
 * per use, and the registered claims checked for type and time with a bounded clock skew. Other claims are
 * passed through untouched.
 *
 * @module
 */
import type { JwsAlgorithm } from "./algorithms.ts";
import { parseJsonObject } from "./encoding.ts";
import { JoseError } from "./errors.ts";
import type { Jwk } from "./jwk.ts";
import { type KeyInput, signJws, type VerifiedHeader, verifyJws } from "./jws.ts";

/** A JWT Claims Set (RFC 7519 §4): the registered claims typed, any other claim kept as it came. */
export interface JwtClaims {
  /** Issuer (RFC 7519 §4.1.1). */
  iss?: string;
  /** Subject (§4.1.2). */
  sub?: string;
  /** Audience (§4.1.3): one or several. */
  aud?: string | string[];
  /** Expiration time, in seconds since the epoch (§4.1.4). */
  exp?: number;
  /** Not before, in seconds since the epoch (§4.1.5). */
  nbf?: number;
  /** Issued at, in seconds since the epoch (§4.1.6). */
  iat?: number;
  /** JWT ID (§4.1.7). */
  jti?: string;
  /** Any other claim, passed through unchecked. */
  [claim: string]: unknown;
}

/** Options of {@link signJwt}. */
export interface SignJwtOptions {
  /** The algorithm, which the key must fit. */
  alg: JwsAlgorithm;
  /** A private WebCrypto key or a private JWK. */
  key: CryptoKey | Jwk;
  /** The `kid` header, naming the key in the published set. */
  kid?: string;
  /** The `typ` header, e.g. `at+jwt` (RFC 9068 §2.1). */
  typ?: string;
}

/** Options of {@link verifyJwt}. */
export interface VerifyJwtOptions {
  /** The algorithms allowed for this use (RFC 8725 §3.1). */
  algorithms: readonly JwsAlgorithm[];
  /** The key, public JWK or key source; or `embeddedJwk: true` to take it from the header. */
  key?: KeyInput;
  /** Take the key from the header's `jwk` (DPoP proofs, RFC 9449 §4.2); see `verifyJws`. */
  embeddedJwk?: boolean;
  /**
   * The media type the `typ` header must name (RFC 8725 §3.11), compared case-insensitively with the
   * `application/` prefix optional (RFC 7515 §4.1.9). `null` only where the profile defines no type.
   */
  typ: string | null;
  /** Accepted `iss` values; when set, `iss` is required. */
  issuer?: string | readonly string[];
  /** Accepted audiences; when set, `aud` (a string or an array) must contain one. */
  audience?: string | readonly string[];
  /** Clock skew allowed, in seconds, 0 to 300. Default 0. */
  clockTolerance?: number;
  /** The current time in milliseconds. Default `Date.now()`. */
  now?: number;
  /** Oldest `iat` accepted, in seconds before now; when set, `iat` is required. */
  maxAge?: number;
  /** Claims that must be present. */
  requiredClaims?: readonly string[];
  /** Longest token accepted, in characters. Default 16 KiB. */
  maxTokenLength?: number;
}

/** A verified JWT. */
export interface VerifiedJwt {
  /** The protected header. */
  header: VerifiedHeader;
  /** The claims, checked. */
  payload: JwtClaims;
  /** The key that verified it. */
  key: CryptoKey;
}

/** Largest clock tolerance a caller may set: beyond five minutes, expiry stops meaning much. */
export const MAX_CLOCK_TOLERANCE = 300;

/**
 * Signs a JWT (RFC 7519 §7.1) with header `{ alg, typ, kid }`.
 *
 * @example
 * ```ts
 * const token = await signJwt({ iss, sub, aud, exp, iat, jti }, { alg: "ES256", key: privateJwk, kid, typ: "at+jwt" });
 * ```
 */
export function signJwt(claims: JwtClaims, options: SignJwtOptions): Promise<string> {
  if (typeof claims !== "object" || claims === null || Array.isArray(claims)) {
    throw new TypeError("Cannot sign: the claims must be an object");
  }
  const header: { alg: JwsAlgorithm; [parameter: string]: unknown } = { alg: options.alg };
  if (options.typ !== undefined) header.typ = options.typ;
  if (options.kid !== undefined) header.kid = options.kid;
  return signJws(JSON.stringify(claims), header, options.key);
}

/**
 * Verifies a JWT (RFC 7519 §7.2) and checks its claims: the signature as {@link verifyJws} does, then `typ`
 * (RFC 8725 §3.11), the types of the registered claims (RFC 7519 §4.1), `exp`, `nbf` and `iat` against the
 * clock with the tolerance, `maxAge`, `iss`, `aud` (RFC 7519 §4.1.3) and the required claims.
 *
 * @example
 * ```ts
 * const { payload } = await verifyJwt(token, {
 *   algorithms: ["ES256"], key: remoteJwks(jwksUri), typ: "at+jwt", issuer, audience: "https://api.example",
 * });
 * ```
 */
export async function verifyJwt(token: string, options: VerifyJwtOptions): Promise<VerifiedJwt> {
  const tolerance = options.clockTolerance ?? 0;
  if (!(tolerance >= 0 && tolerance <= MAX_CLOCK_TOLERANCE)) {
    throw new TypeError(`Cannot verify: "clockTolerance" must be 0 to ${MAX_CLOCK_TOLERANCE} seconds`);
  }
  if (options.typ === undefined) throw new TypeError("Cannot verify: \"typ\" must name the expected type, or be null");
  const jws = await verifyJws(token, options);
  const typ = jws.header.typ;
  if (options.typ !== null && (typ === undefined || mediaType(typ) !== mediaType(options.typ))) {
    throw failed("typ", "JWT \"typ\" header parameter check failed");
  }
  const payload = parseJsonObject(jws.payload) as JwtClaims | undefined;
  if (!payload) throw new JoseError("ERR_JWT_INVALID", "JWT Claims Set must be a JSON object");
  checkClaims(payload, options, tolerance);
  return { header: jws.header, payload, key: jws.key };
}

/** RFC 7515 §4.1.9: `typ` is a media type, its `application/` prefix may be left out. */
function mediaType(value: string): string {
  const type = value.toLowerCase();
  return type.startsWith("application/") && type.indexOf("/", 12) < 0 ? type.slice(12) : type;
}

const failed = (claim: string, message: string): JoseError =>
  new JoseError("ERR_JWT_CLAIM_VALIDATION_FAILED", message, { claim });

const STRING_CLAIMS = ["iss", "sub", "jti"] as const;
const TIME_CLAIMS = ["exp", "nbf", "iat"] as const;

function checkClaims(payload: JwtClaims, options: VerifyJwtOptions, tolerance: number): void {
  for (const name of STRING_CLAIMS) {
    if (payload[name] !== undefined && typeof payload[name] !== "string") throw failed(name, `JWT "${name}" claim must be a string`);
  }
  for (const name of TIME_CLAIMS) {
    const value = payload[name];
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value))) {
      throw failed(name, `JWT "${name}" claim must be a number`);
    }
  }
  const aud = payload.aud;
  if (aud !== undefined && typeof aud !== "string" && !(Array.isArray(aud) && aud.every((a) => typeof a === "string"))) {
    throw failed("aud", "JWT \"aud\" claim must be a string or an array of strings");
  }
  for (const name of options.requiredClaims ?? []) {
    if (payload[name] === undefined) throw failed(name, `JWT "${name}" claim is missing`);
  }
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  if (payload.exp !== undefined && payload.exp <= now - tolerance) {
    throw new JoseError("ERR_JWT_EXPIRED", "JWT \"exp\" claim timestamp check failed", { claim: "exp" });
  }
  if (payload.nbf !== undefined && payload.nbf > now + tolerance) throw failed("nbf", "JWT \"nbf\" claim timestamp check failed");
  if (payload.iat !== undefined && payload.iat > now + tolerance) {
    throw failed("iat", "JWT \"iat\" claim timestamp check failed (it is in the future)");
  }
  if (options.maxAge !== undefined) {
    if (payload.iat === undefined) throw failed("iat", "JWT \"iat\" claim is missing");
    if (now - payload.iat > options.maxAge + tolerance) {
      throw new JoseError("ERR_JWT_EXPIRED", "JWT \"iat\" claim timestamp check failed (too far in the past)", { claim: "iat" });
    }
  }
  if (options.issuer !== undefined) {
    const issuers: readonly string[] = typeof options.issuer === "string" ? [options.issuer] : options.issuer;
    if (payload.iss === undefined || !issuers.includes(payload.iss)) throw failed("iss", "JWT \"iss\" claim check failed");
  }
  if (options.audience !== undefined) {
    const audiences: readonly string[] = typeof options.audience === "string" ? [options.audience] : options.audience;
    const present = typeof aud === "string" ? [aud] : aud ?? [];
    if (!present.some((a) => audiences.includes(a))) throw failed("aud", "JWT \"aud\" claim check failed");
  }
}
