/**
 * The signature algorithms (RFC 7518 §3, RFC 8037 §3.1): one table from `alg` to its key type, its WebCrypto
 * parameters and the shape of its signatures. HMAC is not in the table, so no path of the core can verify a
 * token with a public key used as an HMAC secret, and `none` is not either.
 *
 * @module
 */
import { JoseError } from "./errors.ts";

/** An `alg` this core signs and verifies. */
export type JwsAlgorithm = "ES256" | "ES384" | "EdDSA" | "Ed25519" | "RS256" | "PS256";

/** What an `alg` needs: its key type and curve, WebCrypto's names for the key and the operation. */
export interface AlgorithmEntry {
  kty: "EC" | "OKP" | "RSA";
  /** The JWK `crv` (EC and OKP keys). */
  crv?: string;
  /** WebCrypto's key algorithm: `name`, and `namedCurve` or `hash`. */
  key: { name: string; namedCurve?: string; hash?: string };
  /** WebCrypto's parameters of sign and verify. */
  operation: { name: string; hash?: string; saltLength?: number };
  /** Exact signature length in bytes; RSA signatures are as long as the modulus. */
  signatureLength?: number;
  /** ECDSA group order n (big-endian): r and s must lie in [1, n-1] (SEC 1 §4.1.4 step 1). */
  order?: Uint8Array;
}

const hex = (text: string): Uint8Array => Uint8Array.from(text.match(/../g)!, (byte) => parseInt(byte, 16));

// SEC 2 §2.4.2 and §2.5.1 (FIPS 186-4 D.1.2.3-4).
const P256_ORDER = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
const P384_ORDER = hex(
  "ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973",
);

const TABLE: Readonly<Record<JwsAlgorithm, AlgorithmEntry>> = {
  // RFC 7518 §3.4: the signature is r || s, each as long as the group order, never DER.
  ES256: {
    kty: "EC",
    crv: "P-256",
    key: { name: "ECDSA", namedCurve: "P-256" },
    operation: { name: "ECDSA", hash: "SHA-256" },
    signatureLength: 64,
    order: P256_ORDER,
  },
  ES384: {
    kty: "EC",
    crv: "P-384",
    key: { name: "ECDSA", namedCurve: "P-384" },
    operation: { name: "ECDSA", hash: "SHA-384" },
    signatureLength: 96,
    order: P384_ORDER,
  },
  // RFC 8037 §3.1: EdDSA over Ed25519 only (Ed448 is not in WebCrypto everywhere).
  EdDSA: { kty: "OKP", crv: "Ed25519", key: { name: "Ed25519" }, operation: { name: "Ed25519" }, signatureLength: 64 },
  // RFC 9864 §2.2: the fully-specified name of the same algorithm, which newer clients (oauth4webapi) sign with.
  Ed25519: { kty: "OKP", crv: "Ed25519", key: { name: "Ed25519" }, operation: { name: "Ed25519" }, signatureLength: 64 },
  // RFC 7518 §3.3 and §3.5: keys of 2048 bits or more.
  RS256: { kty: "RSA", key: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, operation: { name: "RSASSA-PKCS1-v1_5" } },
  // RFC 7518 §3.5: MGF1 with the same hash, a salt as long as the hash.
  PS256: { kty: "RSA", key: { name: "RSA-PSS", hash: "SHA-256" }, operation: { name: "RSA-PSS", saltLength: 32 } },
};

/** Smallest RSA modulus accepted, in bits (RFC 7518 §3.3). */
export const MIN_RSA_BITS = 2048;

/** Whether a header's `alg` names an algorithm of the table (RFC 7515 §4.1.1). */
export function isJwsAlgorithm(value: unknown): value is JwsAlgorithm {
  return typeof value === "string" && Object.hasOwn(TABLE, value);
}

/** The table's entry for `alg` (RFC 7518 §3.1). */
export function algorithmEntry(alg: JwsAlgorithm): AlgorithmEntry {
  return TABLE[alg];
}

/**
 * Checks a caller's allow-list for one use (RFC 8725 §3.1): a non-empty list of algorithms of the table.
 * A list naming `HS256` or `none` is the caller's bug, so it throws `TypeError`.
 */
export function checkAllowList(algorithms: readonly string[]): readonly JwsAlgorithm[] {
  if (!Array.isArray(algorithms) || algorithms.length === 0) {
    throw new TypeError("Cannot verify: \"algorithms\" must list the algorithms allowed for this use");
  }
  for (const alg of algorithms) {
    if (!isJwsAlgorithm(alg)) throw new TypeError(`Cannot verify: "${String(alg)}" is not a supported algorithm`);
  }
  return algorithms as readonly JwsAlgorithm[];
}

/**
 * Whether a WebCrypto key may be used for `alg` and `usage`: same algorithm, curve or hash, the right half of
 * the pair, the usage granted, and an RSA modulus of at least 2048 bits (RFC 7518 §3.3, RFC 8725 §3.1).
 */
export function keyFits(key: CryptoKey, alg: JwsAlgorithm, usage: "sign" | "verify"): boolean {
  const entry = TABLE[alg];
  const a = key.algorithm as { name: string; namedCurve?: string; hash?: { name: string }; modulusLength?: number };
  if (a.name !== entry.key.name || key.type !== (usage === "sign" ? "private" : "public")) return false;
  if (!key.usages.includes(usage)) return false;
  if (entry.kty === "EC") return a.namedCurve === entry.key.namedCurve;
  if (entry.kty === "RSA") return a.hash?.name === entry.key.hash && (a.modulusLength ?? 0) >= MIN_RSA_BITS;
  return true;
}

/**
 * Checks a decoded signature's shape before any key is tried: the exact length of its algorithm, and for
 * ECDSA r and s within [1, n-1]. A DER signature has the wrong length; r = s = 0 is the input that every
 * signature verified on Java 15-18 (CVE-2022-21449).
 */
export function checkSignatureShape(alg: JwsAlgorithm, signature: Uint8Array): void {
  const { signatureLength, order } = TABLE[alg];
  if (signatureLength !== undefined && signature.length !== signatureLength) {
    throw new JoseError("ERR_JWS_INVALID", `JWS signature has the wrong length for ${alg}`);
  }
  if (order) {
    const half = signatureLength! / 2;
    if (!inRange(signature.subarray(0, half), order) || !inRange(signature.subarray(half), order)) {
      throw new JoseError("ERR_JWS_INVALID", "JWS signature holds an ECDSA r or s outside [1, n-1]");
    }
  }
}

/** Whether a big-endian integer lies in [1, order - 1]. */
function inRange(value: Uint8Array, order: Uint8Array): boolean {
  let zero = true;
  for (const byte of value) if (byte !== 0) zero = false;
  if (zero) return false;
  for (let i = 0; i < value.length; i++) {
    if (value[i]! !== order[i]!) return value[i]! < order[i]!;
  }
  return false; // equal to the order
}

/** WebCrypto parameters to generate a key pair for `alg`. */
export function generateParams(alg: JwsAlgorithm): RsaHashedKeyGenParams | EcKeyGenParams | { name: string } {
  const { key } = TABLE[alg];
  if (key.hash !== undefined) {
    return { name: key.name, hash: key.hash, modulusLength: MIN_RSA_BITS, publicExponent: new Uint8Array([1, 0, 1]) };
  }
  return key.namedCurve !== undefined ? { name: key.name, namedCurve: key.namedCurve } : { name: key.name };
}

let probed: Promise<JwsAlgorithm[]> | undefined;

/**
 * The algorithms this runtime can generate keys for, sign and verify, found by trying each once (the result
 * is kept). A server checks its configured algorithm against it at start, so a runtime without Ed25519 is
 * reported then and not at the first request. RFC 7518 §3.1, RFC 8037 §3.1.
 *
 * @example
 * ```ts
 * if (!(await supportedAlgorithms()).includes("EdDSA")) throw new Error("EdDSA is not available here");
 * ```
 */
export function supportedAlgorithms(): Promise<JwsAlgorithm[]> {
  probed ??= Promise.all((Object.keys(TABLE) as JwsAlgorithm[]).map(async (alg) => {
    try {
      const pair = await crypto.subtle.generateKey(generateParams(alg), false, ["sign", "verify"]) as CryptoKeyPair;
      const data = new Uint8Array([1, 2, 3]);
      const signature = new Uint8Array(await crypto.subtle.sign(TABLE[alg].operation, pair.privateKey, data));
      checkSignatureShape(alg, signature);
      return (await crypto.subtle.verify(TABLE[alg].operation, pair.publicKey, signature, data)) ? alg : undefined;
    } catch {
      return undefined;
    }
  })).then((results) => results.filter((alg): alg is JwsAlgorithm => alg !== undefined));
  return probed;
}
