/**
 * The JOSE core: JWS compact serialization, JWT, JWK and JWK Sets on WebCrypto alone, for ES256, ES384,
 * EdDSA (Ed25519), RS256 and PS256.
 *
 * @module
 */
export { type JwsAlgorithm, supportedAlgorithms } from "./algorithms.ts";
export { JoseError, type JoseErrorCode, type JoseErrorOptions } from "./errors.ts";
export {
  exportPublicJwk,
  generateSigningKey,
  importJwk,
  isPrivateJwk,
  type Jwk,
  jwkThumbprint,
  publicJwk,
  type SigningKeyPair,
} from "./jwk.ts";
export { localJwks, MAX_SET_KEYS, parseJwks, type SetKey } from "./jwks.ts";
export {
  type JwsHeader,
  type KeyInput,
  type KeySource,
  MAX_TOKEN_LENGTH,
  signJws,
  type VerifiedHeader,
  type VerifiedJws,
  verifyJws,
  type VerifyJwsOptions,
} from "./jws.ts";
export {
  type JwtClaims,
  MAX_CLOCK_TOLERANCE,
  signJwt,
  type SignJwtOptions,
  type VerifiedJwt,
  verifyJwt,
  type VerifyJwtOptions,
} from "./jwt.ts";
export { remoteJwks, type RemoteJwks, type RemoteJwksOptions } from "./remote_jwks.ts";
