/**
 * The DPoP proof JWT (RFC 9449 §4): its checks (§4.3), as the token endpoint and resource servers make them.
 * One header, one compact JWS typed `dpop+jwt`, an asymmetric `alg` of the allow-list, a public `jwk` in the
 * header that verifies the signature, `htm` and `htu` naming this request, a recent `iat`, a `jti`, and `ath`
 * where an access token comes with it. Single use (the `jti`) and nonces are the callers': they know the store
 * and the secret.
 *
 * @module
 */
import { OAuthError } from "../errors.ts";
import type { JwsAlgorithm } from "../jose/algorithms.ts";
import { JoseError } from "../jose/errors.ts";
import { checkJwk, importJwk, type Jwk, jwkThumbprint } from "../jose/jwk.ts";
import type { VerifiedHeader } from "../jose/jws.ts";
import { type JwtClaims, verifyJwt } from "../jose/jwt.ts";
import { sha256 } from "../sha256.ts";
import { makeRoom } from "../evict.ts";

/**
 * The algorithms a proof may be signed with (RFC 9449 §4.2: asymmetric; never `none` or HMAC). Ed25519 under both
 * its names: `EdDSA`, and `Ed25519` (RFC 9864), which oauth4webapi signs with.
 */
export const DPOP_ALGORITHMS: readonly JwsAlgorithm[] = ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"];

/** Seconds a proof is accepted after its `iat`, and so how long its `jti` is remembered (§4.3 check 11). */
export const PROOF_MAX_AGE = 300;
/** Seconds a proof's `iat` may lie ahead of the server's clock: client clocks run a little fast. */
export const PROOF_CLOCK_SKEW = 60;
/** Longest proof accepted: room for an RSA-8192 key in the header, not for a smuggled document. */
const MAX_PROOF_LENGTH = 8192;
/** Longest `jti` remembered: §11.1 asks for 96 random bits; a UUID is 36 characters. */
const MAX_JTI_LENGTH = 256;

/** What a proof must match. */
export interface ProofTarget {
  /** The request's method (`htm`, compared exactly). */
  readonly method: string;
  /** The request's URI without query and fragment (`htu`), as {@link normalizedHtu} gives it. */
  readonly url: string;
  /** The access token presented with the proof, whose SHA-256 `ath` must carry (§4.3 check 12). */
  readonly accessToken?: string | undefined;
  /** The algorithms accepted. */
  readonly algorithms: readonly JwsAlgorithm[];
  /** The server's time, in milliseconds. */
  readonly now: number;
}

/** A proof that passed every check of §4.3 but single use and the nonce. */
export interface VerifiedProof {
  /** The JWK SHA-256 thumbprint of its key (RFC 7638; the `jkt` a token is bound to, §6.1). */
  readonly jkt: string;
  /** Its `jti`. */
  readonly jti: string;
  /** Its `iat`, in seconds. */
  readonly iat: number;
  /** Its `nonce`, when it has one. */
  readonly nonce: string | undefined;
}

const refuse = (description: string): OAuthError => new OAuthError("invalid_dpop_proof", { description });

/**
 * The `htu` of a URI (RFC 9449 §4.3 check 9 and its note): scheme, host and port normalised as the URL parser
 * does (RFC 3986 §6.2.2-6.2.3: case, default port, dot segments), query and fragment dropped. Null for anything
 * but an absolute http(s) URI.
 */
export function normalizedHtu(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return null;
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.username !== "" || url.password !== "") return null;
  return url.origin + url.pathname;
}

/**
 * The single `DPoP` header of a request (§4.3 check 1), null when there is none. Two headers arrive joined by a
 * comma, which no compact JWS holds.
 */
export function proofHeader(headers: Headers): string | null {
  const value = headers.get("dpop");
  if (value === null) return null;
  if (/[\s,]/.test(value.trim())) throw refuse("More than one DPoP proof was sent");
  return value.trim();
}

/**
 * Verifies a proof against its request (RFC 9449 §4.3 checks 2 to 9, 11 and 12): throws `invalid_dpop_proof`
 * with a description of the failed check, never the proof itself.
 */
export async function verifyProof(proof: string, target: ProofTarget): Promise<VerifiedProof> {
  let verified: { header: VerifiedHeader; payload: JwtClaims };
  try {
    verified = await verifyJwt(proof, {
      algorithms: target.algorithms,
      key: embeddedKey,
      typ: "dpop+jwt",
      now: target.now,
      clockTolerance: PROOF_CLOCK_SKEW,
      requiredClaims: ["jti", "htm", "htu", "iat"],
      maxTokenLength: MAX_PROOF_LENGTH,
    });
  } catch (error) {
    if (error instanceof OAuthError) throw error;
    throw refuse(error instanceof JoseError ? `The DPoP proof is invalid: ${error.message}` : "The DPoP proof is invalid");
  }
  const { header, payload } = verified;
  const { jti, htm, htu, iat, ath, nonce } = payload;
  if (typeof jti !== "string" || jti === "" || jti.length > MAX_JTI_LENGTH) throw refuse("The DPoP proof's jti is malformed");
  if (htm !== target.method) throw refuse("The DPoP proof's htm does not match the request's method");
  if (typeof htu !== "string" || normalizedHtu(htu) !== target.url) throw refuse("The DPoP proof's htu does not match the request's URI");
  // §4.3 check 11; verifyJwt has refused an iat more than the skew ahead.
  if (iat! < Math.floor(target.now / 1000) - PROOF_MAX_AGE) throw refuse("The DPoP proof is too old");
  if (nonce !== undefined && typeof nonce !== "string") throw refuse("The DPoP proof's nonce is malformed");
  if (target.accessToken !== undefined && ath !== sha256(target.accessToken)) {
    throw refuse("The DPoP proof's ath does not match the access token");
  }
  return { jkt: jwkThumbprint(header.jwk as Jwk), jti, iat: iat!, nonce: nonce as string | undefined };
}

/** The key under which a proof's `jti` is marked used: per key, so no one can spend another key's `jti`s. */
export function replayKey(proof: VerifiedProof): string {
  return `dpop:${sha256(`${proof.jkt}:${proof.jti}`)}`;
}

/** Until when a proof's `jti` must be remembered: the last moment the proof itself would be accepted. */
export function replayExpiry(proof: VerifiedProof): number {
  return (proof.iat + PROOF_MAX_AGE + 1) * 1000;
}

/** Imported public keys by algorithm and thumbprint: importing costs more than verifying on some runtimes. */
const imported = new Map<string, Promise<CryptoKey>>();
const MAX_IMPORTED = 1000;

/**
 * The key source of a proof: the header's `jwk` (§4.3 checks 6 and 7), checked on every proof (a public key
 * that fits `alg`, no private members), imported once per thumbprint.
 */
function embeddedKey(header: VerifiedHeader): Promise<CryptoKey> {
  const jwk = header.jwk as unknown;
  if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) throw refuse("The DPoP proof has no jwk header");
  // Throws for a private key, a key of another type or curve, a point off the curve.
  checkJwk(jwk, header.alg, "verify");
  const slot = `${header.alg} ${jwkThumbprint(jwk as Jwk)}`;
  let key = imported.get(slot);
  if (key === undefined) {
    makeRoom(imported, MAX_IMPORTED);
    key = importJwk(jwk as Jwk, header.alg, "verify");
    key.catch(() => imported.delete(slot));
    imported.set(slot, key);
  }
  return key;
}
