/**
 * Signed assertions presented at the token endpoint (RFC 7521 §5.2, RFC 7523 §3): a `private_key_jwt` client
 * assertion, an identity assertion (ID-JAG), a workload's platform JWT. They share one verification (an
 * allow-list of asymmetric algorithms, the accepted `typ`s, issuer, audience, and a bounded lifetime) and one
 * single-use rule for their `jti`: a mark in the store until the assertion can no longer be accepted, so every
 * instance on that store sees it (`Storage.markOnce`, atomic in every store).
 *
 * @module
 */
import type { JwsAlgorithm } from "./jose/algorithms.ts";
import { decodeSegment, parseJsonObject } from "./jose/encoding.ts";
import { JoseError } from "./jose/errors.ts";
import type { KeyInput } from "./jose/jws.ts";
import { type JwtClaims, verifyJwt } from "./jose/jwt.ts";
import { sha256 } from "./sha256.ts";
import type { Storage } from "./storage/types.ts";

/** The algorithms an assertion may be signed with: asymmetric only, so no public key ever serves as an HMAC secret. */
export const ASSERTION_ALGORITHMS: readonly JwsAlgorithm[] = ["ES256", "ES384", "EdDSA", "RS256", "PS256"];
/** Clock skew allowed between the signer and this server, in seconds. */
export const ASSERTION_SKEW: number = 30;
/** Longest assertion read, in characters: far above a real one (1-2 KB), far below what a parser should chew on. */
export const MAX_ASSERTION_LENGTH: number = 8 * 1024;
/** The store keys of spent `jti`s begin with this. */
export const JTI_PREFIX: string = "jti:";

/** Why an assertion was refused, as one fixed word (audit events, metrics). */
export type AssertionFailure =
  | "malformed"
  | "algorithm"
  | "typ"
  | "signature"
  | "unknown_key"
  | "key_set"
  | "issuer"
  | "audience"
  | "expired"
  | "not_yet_valid"
  | "lifetime"
  | "claims"
  | "replay"
  /** The signer is not a trusted issuer (jwt-bearer, token exchange). */
  | "unknown_issuer"
  /** The issuer is not trusted for this client, or the assertion names another client. */
  | "client_mismatch"
  /** No user of this server is linked to the assertion's subject. */
  | "unknown_user";

/** A refused assertion; the caller turns it into `invalid_client` or `invalid_grant`. */
export class AssertionRefused extends Error {
  /** What failed. */
  readonly reason: AssertionFailure;
  /** A refusal with its reason and a short message that never quotes the assertion. */
  constructor(reason: AssertionFailure, message: string) {
    super(message);
    this.name = "AssertionRefused";
    this.reason = reason;
  }
}

/** What an assertion must satisfy. */
export interface AssertionRules {
  /** The signer's keys. */
  key: KeyInput;
  /** The accepted `typ` values (case-insensitive, the `application/` prefix optional); `null` accepts none at all. */
  typ: readonly (string | null)[];
  /** The required `iss`. */
  issuer: string;
  /** Accepted audiences: `aud` must name one. */
  audiences: readonly string[];
  /** `aud` may name no other audience beside an accepted one (an assertion for several parties is refused). */
  singleAudience: boolean;
  /** Longest lifetime accepted, `exp` minus `iat` (or minus now, without `iat`), in seconds. */
  maxLifetime: number;
  /** Claims that must be present. */
  required: readonly string[];
  /** The server's time, in ms. */
  now: number;
}

/** The `typ` as a media type: lower case, without `application/` (RFC 7515 §4.1.9). */
function mediaType(value: string): string {
  const type = value.toLowerCase();
  return type.startsWith("application/") ? type.slice(12) : type;
}

/** The claims of an assertion read without verifying it, to find its signer; undefined when it is not a JWT. */
export function unverifiedClaims(token: string): JwtClaims | undefined {
  if (token.length > MAX_ASSERTION_LENGTH) return undefined;
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  try {
    return parseJsonObject(decodeSegment(parts[1]!, "payload")) as JwtClaims | undefined;
  } catch {
    return undefined;
  }
}

const REASONS: Partial<Record<JoseError["code"], AssertionFailure>> = {
  ERR_JOSE_ALG_NOT_ALLOWED: "algorithm",
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: "signature",
  ERR_JOSE_KEY_MISMATCH: "signature",
  ERR_JWKS_NO_MATCHING_KEY: "unknown_key",
  ERR_JWKS_FETCH_FAILED: "key_set",
  ERR_JWKS_INVALID: "key_set",
  ERR_JWK_INVALID: "key_set",
  ERR_JWT_EXPIRED: "expired",
};

/** The reason of a refused JOSE check. */
function reasonOf(error: JoseError): AssertionFailure {
  const known = REASONS[error.code];
  if (known !== undefined) return known;
  if (error.code !== "ERR_JWT_CLAIM_VALIDATION_FAILED") return "malformed";
  if (error.claim === "iss") return "issuer";
  if (error.claim === "aud") return "audience";
  return error.claim === "nbf" || error.claim === "iat" ? "not_yet_valid" : "claims";
}

/**
 * Verifies an assertion (RFC 7523 §3): signature with an algorithm of {@link ASSERTION_ALGORITHMS} and a key of
 * `rules.key`, `typ`, `iss`, `aud`, `exp` (required), `nbf` and `iat` with {@link ASSERTION_SKEW}, the lifetime,
 * and the required claims. Throws {@link AssertionRefused}; any other error (a store down) passes through.
 */
export async function verifyAssertion(token: string, rules: AssertionRules): Promise<JwtClaims> {
  let verified;
  try {
    verified = await verifyJwt(token, {
      algorithms: ASSERTION_ALGORITHMS,
      key: rules.key,
      typ: null,
      issuer: rules.issuer,
      audience: rules.audiences,
      clockTolerance: ASSERTION_SKEW,
      now: rules.now,
      requiredClaims: ["exp", ...rules.required],
      maxTokenLength: MAX_ASSERTION_LENGTH,
    });
  } catch (error) {
    if (error instanceof JoseError) throw new AssertionRefused(reasonOf(error), error.message);
    throw error;
  }
  const { header, payload } = verified;
  // RFC 8725 §3.11: a JWT of another kind (an access token, a DPoP proof, an ID-JAG where a client assertion is
  // expected) must not pass for this one just because the same key signed it.
  const typ = header.typ === undefined ? null : mediaType(header.typ);
  if (!rules.typ.some((t) => t === typ || (t !== null && typ !== null && mediaType(t) === typ))) {
    throw new AssertionRefused("typ", "The assertion's typ is not accepted here");
  }
  if (rules.singleAudience && Array.isArray(payload.aud) && payload.aud.length !== 1) {
    throw new AssertionRefused("audience", "The assertion names more than one audience");
  }
  const now = Math.floor(rules.now / 1000);
  const exp = payload.exp!;
  const start = payload.iat ?? now;
  if (exp - start > rules.maxLifetime || exp - now > rules.maxLifetime + ASSERTION_SKEW) {
    throw new AssertionRefused("lifetime", "The assertion lives longer than this server accepts");
  }
  if (payload.jti !== undefined && (payload.jti === "" || payload.jti.length > 1024)) throw new AssertionRefused("claims", "The assertion's jti is malformed");
  return payload;
}

/**
 * Spends an assertion's `jti`, once for every instance on `storage` (RFC 7523 §3 item 7): marked, under
 * `jti:<use>:<hash of the signer and the jti>`, until the assertion's `exp` plus the skew it is accepted with.
 * Resolves false for a replay.
 */
export function spendJti(storage: Pick<Storage, "markOnce">, use: string, signer: string, claims: JwtClaims, now: number): Promise<boolean> {
  const key = `${JTI_PREFIX}${use}:${sha256(`${signer}\u0000${claims.jti!}`)}`;
  return storage.markOnce(key, (claims.exp! + ASSERTION_SKEW) * 1000, now);
}
