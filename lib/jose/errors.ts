/**
 * The one error of the JOSE core. Its `code` says what failed, from a closed list, so a caller maps it to an
 * OAuth error without reading messages; messages name the failed check and never quote the token.
 *
 * @module
 */

/** What failed. */
export type JoseErrorCode =
  /** The header's `alg` is not in the caller's allow-list for this use (`none` and HMAC never are). */
  | "ERR_JOSE_ALG_NOT_ALLOWED"
  /** An extension this core refuses (`crit`, `b64`), or a key type or curve it does not implement. */
  | "ERR_JOSE_NOT_SUPPORTED"
  /** The key does not fit the algorithm (type, curve, hash, size or use). */
  | "ERR_JOSE_KEY_MISMATCH"
  /** Not a well-formed compact JWS: segments, base64url, JSON, sizes, header members, signature shape. */
  | "ERR_JWS_INVALID"
  /** The signature does not verify with any candidate key. */
  | "ERR_JWS_SIGNATURE_VERIFICATION_FAILED"
  /** The payload is not a JSON object. */
  | "ERR_JWT_INVALID"
  /** `exp` has passed, or `iat` is older than the caller's `maxAge`. */
  | "ERR_JWT_EXPIRED"
  /** A claim or the `typ` header failed its check; `claim` names it. */
  | "ERR_JWT_CLAIM_VALIDATION_FAILED"
  /** A JWK with missing, malformed or (where a public key is expected) private members. */
  | "ERR_JWK_INVALID"
  /** A JWK Set that is not `{ "keys": [...] }` or that holds private keys. */
  | "ERR_JWKS_INVALID"
  /** No key of the set matches the header's `kid` and `alg`. */
  | "ERR_JWKS_NO_MATCHING_KEY"
  /** A remote key set could not be fetched and none is cached; `cause` holds the outbound failure. */
  | "ERR_JWKS_FETCH_FAILED";

/** Options of {@link JoseError}. */
export interface JoseErrorOptions {
  /** The claim or header parameter that failed, for `ERR_JWT_*` codes. */
  claim?: string;
  /** The error behind this one (an outbound failure, a WebCrypto error). */
  cause?: unknown;
}

/**
 * A refused JWS, JWT, JWK or JWK Set (RFC 7515, 7519, 7517). Errors in the caller's own options (an
 * algorithm outside the table, a clock tolerance out of bounds) are `TypeError`s instead: they are bugs, not
 * bad input.
 */
export class JoseError extends Error {
  /** What failed. */
  readonly code: JoseErrorCode;
  /** The claim or header parameter that failed, when one did. */
  readonly claim: string | undefined;

  /** An error with its code and a message naming the failed check. */
  constructor(code: JoseErrorCode, message: string, options: JoseErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "JoseError";
    this.code = code;
    this.claim = options.claim;
  }
}
