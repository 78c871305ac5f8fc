/**
 * JWK Sets (RFC 7517 §5) as key sources for verification: parsed once, keys selected by `kid` and by the
 * type the header's `alg` needs, imported once and kept.
 *
 * @module
 */
import { isJwsAlgorithm, type JwsAlgorithm } from "./algorithms.ts";
import { JoseError } from "./errors.ts";
import { checkJwk, importJwk, isPrivateJwk, type Jwk } from "./jwk.ts";
import type { KeySource, VerifiedHeader } from "./jws.ts";

/** A key of a parsed set, with the algorithms it may verify. */
export interface SetKey {
  /** The key as the set holds it. */
  jwk: Jwk;
  /** The algorithms of the table it may verify. */
  algorithms: readonly JwsAlgorithm[];
}

/** Most keys a set may hold: a `kid`-less token is tried against each matching key, so the count is a cost. */
export const MAX_SET_KEYS = 100;
const ALL: readonly JwsAlgorithm[] = ["ES256", "ES384", "EdDSA", "RS256", "PS256"];

const invalidSet = (message: string): JoseError => new JoseError("ERR_JWKS_INVALID", message);

/**
 * Parses a JWK Set for verification (RFC 7517 §5): keys of an unknown `kty`, `crv` or `alg`, keys for other
 * uses and malformed keys are skipped (§5: "ignore JWKs ... that it does not understand"); a set holding
 * private or secret members is refused whole, since its publisher has leaked them.
 */
export function parseJwks(value: unknown): readonly SetKey[] {
  const keys = typeof value === "object" && value !== null ? (value as { keys?: unknown }).keys : undefined;
  if (!Array.isArray(keys)) throw invalidSet("JWK Set must be an object with a \"keys\" array");
  if (keys.length > MAX_SET_KEYS) throw invalidSet(`JWK Set holds more than ${MAX_SET_KEYS} keys`);
  const usable: SetKey[] = [];
  for (const key of keys) {
    if (typeof key !== "object" || key === null || Array.isArray(key)) continue;
    if (isPrivateJwk(key as Jwk)) throw invalidSet("JWK Set holds private key members");
    const jwk = key as Jwk;
    if (jwk.alg !== undefined && !isJwsAlgorithm(jwk.alg)) continue;
    const algorithms = ALL.filter((alg) => {
      try {
        checkJwk(jwk, alg, "verify");
        return true;
      } catch {
        return false;
      }
    });
    if (algorithms.length > 0) usable.push({ jwk, algorithms });
  }
  return usable;
}

/**
 * The keys of a set that may verify a token with this header: the same `kid` when the header names one,
 * and a type that fits its `alg` (RFC 7515 §4.1.4, RFC 7517 §4.5).
 */
export function selectKeys(keys: readonly SetKey[], header: VerifiedHeader): Jwk[] {
  const matching: Jwk[] = [];
  for (const key of keys) {
    if (header.kid !== undefined && key.jwk.kid !== header.kid) continue;
    if (key.algorithms.includes(header.alg)) matching.push(key.jwk);
  }
  return matching;
}

/** Imports the selected keys (once per key and algorithm); none selected is `ERR_JWKS_NO_MATCHING_KEY`. */
export function importSelected(keys: readonly SetKey[], header: VerifiedHeader): Promise<CryptoKey[]> {
  const matching = selectKeys(keys, header);
  if (matching.length === 0) {
    return Promise.reject(new JoseError("ERR_JWKS_NO_MATCHING_KEY", "No key of the JWK Set matches the JWS header"));
  }
  return Promise.all(matching.map((jwk) => importJwk(jwk, header.alg, "verify")));
}

/**
 * A key source over a JWK Set held in memory (a client's `jwks`, a trusted issuer's configured keys), parsed
 * once. RFC 7517 §5.
 *
 * @example
 * ```ts
 * await verifyJwt(assertion, { algorithms: ["ES256"], key: localJwks(client.jwks), typ: null, audience: issuer });
 * ```
 */
export function localJwks(set: unknown): KeySource {
  const keys = parseJwks(set);
  return (header) => importSelected(keys, header);
}
