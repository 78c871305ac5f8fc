/**
 * JSON Web Keys (RFC 7517) for the algorithms of the table: strict import, public export, thumbprints
 * (RFC 7638) and key generation. A key is typed by use: a verification key never carries private members, a
 * signing key always does.
 *
 * @module
 */
import { sha256 } from "../sha256.ts";
import { algorithmEntry, generateParams, type JwsAlgorithm, MIN_RSA_BITS } from "./algorithms.ts";
import { decodeSegment } from "./encoding.ts";
import { JoseError } from "./errors.ts";

/** A JSON Web Key (RFC 7517 §4) of kty EC, OKP or RSA; other members are kept as they are. */
export interface Jwk {
  /** Key type (RFC 7517 §4.1): `EC`, `OKP` or `RSA` here. */
  kty: string;
  /** Key ID (§4.5). */
  kid?: string;
  /** The algorithm the key is for (§4.4). */
  alg?: string;
  /** Public key use (§4.2): `sig` for every key here. */
  use?: string;
  /** Key operations (§4.3). */
  key_ops?: string[];
  /** Curve (RFC 7518 §6.2.1.1, RFC 8037 §2): `P-256`, `P-384`, `Ed25519`. */
  crv?: string;
  /** X coordinate, or the Ed25519 public key (RFC 7518 §6.2.1.2, RFC 8037 §2). */
  x?: string;
  /** Y coordinate (RFC 7518 §6.2.1.3). */
  y?: string;
  /** RSA modulus (RFC 7518 §6.3.1.1). */
  n?: string;
  /** RSA public exponent (§6.3.1.2). */
  e?: string;
  /** Private: the EC or Ed25519 private key, or the RSA private exponent (§6.2.2.1, §6.3.2.1). */
  d?: string;
  /** Private: RSA first prime factor (§6.3.2.2). */
  p?: string;
  /** Private: RSA second prime factor (§6.3.2.3). */
  q?: string;
  /** Private: RSA first factor CRT exponent (§6.3.2.4). */
  dp?: string;
  /** Private: RSA second factor CRT exponent (§6.3.2.5). */
  dq?: string;
  /** Private: RSA first CRT coefficient (§6.3.2.6). */
  qi?: string;
  /** Any other member, kept as it came. */
  [member: string]: unknown;
}

/** Members that hold private or secret key material (RFC 7518 §6.2.2, §6.3.2, §6.4.1; RFC 8037 §2). */
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"] as const;

/** Per kty: the public members, the private members, and the members of the thumbprint (RFC 7638 §3.2). */
const KTY: Readonly<Record<string, { public: readonly string[]; private: readonly string[]; thumbprint: readonly string[] }>> = {
  EC: { public: ["crv", "x", "y"], private: ["d"], thumbprint: ["crv", "kty", "x", "y"] },
  OKP: { public: ["crv", "x"], private: ["d"], thumbprint: ["crv", "kty", "x"] },
  RSA: { public: ["n", "e"], private: ["d", "p", "q", "dp", "dq", "qi"], thumbprint: ["e", "kty", "n"] },
};

/**
 * Per curve: octets of each coordinate or scalar (RFC 7518 §6.2.1.2, RFC 8037 §2), and for the Weierstrass
 * curves y² = x³ - 3x + b over GF(p) (SEC 2 §2.4.2, §2.5.1), whose points are checked here because not every
 * runtime's WebCrypto refuses a point off the curve.
 */
const CURVES: Readonly<Record<string, { bytes: number; p?: bigint; b?: bigint }>> = {
  "P-256": {
    bytes: 32,
    p: 2n ** 256n - 2n ** 224n + 2n ** 192n + 2n ** 96n - 1n,
    b: 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn,
  },
  "P-384": {
    bytes: 48,
    p: 2n ** 384n - 2n ** 128n - 2n ** 96n + 2n ** 32n - 1n,
    b: 0xb3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8edd3ec2aefn,
  },
  Ed25519: { bytes: 32 },
};
/** Largest RSA modulus accepted: verification cost grows with it, and nobody signs with more. */
const MAX_RSA_BITS = 8192;

const invalidJwk = (message: string): JoseError => new JoseError("ERR_JWK_INVALID", message);
const mismatch = (message: string): JoseError => new JoseError("ERR_JOSE_KEY_MISMATCH", message);

/** Whether a JWK holds private or secret members (RFC 7517 §4, RFC 7518 §6). */
export function isPrivateJwk(jwk: Jwk): boolean {
  return PRIVATE_MEMBERS.some((member) => jwk[member] !== undefined);
}

/**
 * The public half of a JWK: its public members by kty, with `kid`, `alg` and `use` kept and everything else
 * (private members, `key_ops`, `ext`) dropped. RFC 7517 §4, RFC 7518 §6.
 */
export function publicJwk(jwk: Jwk): Jwk {
  const members = KTY[jwk.kty];
  if (!members) throw new JoseError("ERR_JOSE_NOT_SUPPORTED", "JWK \"kty\" is not supported");
  const out: Jwk = { kty: jwk.kty };
  for (const name of [...members.public, "kid", "alg", "use"]) if (jwk[name] !== undefined) out[name] = jwk[name];
  return out;
}

/**
 * Checks a JWK against `alg` and its use, and returns only the members WebCrypto needs. Fit first (kty,
 * crv, `alg`, `use`, `key_ops`: RFC 7517 §4.2-4.4), then form (each member base64url of the right length).
 * A verification key with private members is refused: a public key slot must not receive a private key.
 */
export function checkJwk(jwk: unknown, alg: JwsAlgorithm, usage: "sign" | "verify"): JsonWebKey {
  if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) throw invalidJwk("JWK must be a JSON object");
  const key = jwk as Jwk;
  const entry = algorithmEntry(alg);
  if (key.kty !== entry.kty || (entry.crv !== undefined && key.crv !== entry.crv)) {
    throw mismatch(`JWK type does not fit ${alg}`);
  }
  if (key.alg !== undefined && key.alg !== alg) throw mismatch(`JWK "alg" is not ${alg}`);
  if (key.use !== undefined && key.use !== "sig") throw mismatch("JWK \"use\" is not \"sig\"");
  if (key.key_ops !== undefined && (!Array.isArray(key.key_ops) || !key.key_ops.includes(usage))) {
    throw mismatch(`JWK "key_ops" does not allow ${usage}`);
  }
  const members = KTY[entry.kty]!;
  const clean: Record<string, string> = { kty: entry.kty };
  for (const name of members.public) clean[name] = member(key, name);
  if (usage === "verify") {
    if (isPrivateJwk(key)) throw invalidJwk("JWK holds private members where a public key is expected");
  } else {
    if (key.oth !== undefined) throw new JoseError("ERR_JOSE_NOT_SUPPORTED", "JWK \"oth\" (multi-prime RSA) is not supported");
    for (const name of members.private) clean[name] = member(key, name);
  }
  checkSizes(clean, entry.crv);
  return clean;
}

function member(jwk: Jwk, name: string): string {
  const value = jwk[name];
  if (typeof value !== "string" || (name !== "crv" && !/^[A-Za-z0-9_-]+$/.test(value))) {
    throw invalidJwk(`JWK "${name}" is missing or malformed`);
  }
  return value;
}

function checkSizes(clean: Record<string, string>, crv: string | undefined): void {
  const bytes = (name: string): Uint8Array => {
    try {
      return decodeSegment(clean[name]!, "key");
    } catch {
      throw invalidJwk(`JWK "${name}" is not base64url`);
    }
  };
  if (crv !== undefined) {
    const curve = CURVES[crv]!;
    for (const name of ["x", "y", "d"]) {
      if (clean[name] !== undefined && bytes(name).length !== curve.bytes) throw invalidJwk(`JWK "${name}" has the wrong length`);
    }
    if (curve.p !== undefined && !onCurve(bigint(bytes("x")), bigint(bytes("y")), curve.p, curve.b!)) {
      throw invalidJwk("JWK point is not on the curve");
    }
    return;
  }
  const n = bytes("n");
  let start = 0;
  while (start < n.length && n[start] === 0) start++;
  const bits = (n.length - start) * 8 - Math.clz32(n[start] ?? 0) + 24;
  if (bits < MIN_RSA_BITS || bits > MAX_RSA_BITS) throw mismatch(`RSA modulus must have ${MIN_RSA_BITS} to ${MAX_RSA_BITS} bits`);
  const e = bytes("e");
  if (e.length === 0 || e.length > 8) throw invalidJwk("JWK \"e\" is malformed");
  for (const name of ["d", "p", "q", "dp", "dq", "qi"]) if (clean[name] !== undefined) bytes(name);
}

function bigint(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}

/** Whether (x, y) satisfies y² = x³ - 3x + b mod p, with both coordinates below p. */
function onCurve(x: bigint, y: bigint, p: bigint, b: bigint): boolean {
  if (x >= p || y >= p) return false;
  return (y * y - (x * x * x - 3n * x + b)) % p === 0n;
}

const cache = new WeakMap<object, Map<string, Promise<CryptoKey>>>();

/**
 * Imports a JWK as a WebCrypto key for `alg`: public for `verify`, private (not extractable) for `sign`.
 * Each JWK object is imported once per algorithm and use, so verifying with the same key set again costs no
 * import; do not change a JWK object after passing it here. RFC 7517 §4, RFC 7518 §6.
 */
export function importJwk(jwk: Jwk, alg: JwsAlgorithm, usage: "sign" | "verify"): Promise<CryptoKey> {
  if (typeof jwk !== "object" || jwk === null) return Promise.reject(invalidJwk("JWK must be a JSON object"));
  let byUse = cache.get(jwk);
  if (!byUse) cache.set(jwk, byUse = new Map());
  const slot = `${alg} ${usage}`;
  let key = byUse.get(slot);
  if (!key) {
    let clean: JsonWebKey;
    try {
      clean = checkJwk(jwk, alg, usage);
    } catch (error) {
      return Promise.reject(error);
    }
    key = crypto.subtle.importKey("jwk", clean, algorithmEntry(alg).key, usage === "verify", [usage]).catch(
      (cause: unknown) => {
        throw new JoseError("ERR_JWK_INVALID", "JWK could not be imported", { cause });
      },
    );
    byUse.set(slot, key);
  }
  return key;
}

/**
 * The public JWK of a WebCrypto key (RFC 7517 §4): kty and the public members only. WebCrypto's own `alg`
 * is dropped (it says `Ed25519` where JOSE says `EdDSA`), as are `key_ops` and `ext`.
 */
export async function exportPublicJwk(key: CryptoKey): Promise<Jwk> {
  if (key.type !== "public") throw new TypeError("Cannot export: the key is not a public key");
  const { alg: _alg, ...jwk } = publicJwk(await crypto.subtle.exportKey("jwk", key) as Jwk);
  return jwk;
}

/**
 * The JWK SHA-256 thumbprint (RFC 7638 §3): the required members in lexicographic order, without
 * whitespace, hashed and base64url-encoded. It is also DPoP's `jkt` (RFC 9449 §6.1) and the `kid` of keys
 * made by {@link generateSigningKey}.
 */
export function jwkThumbprint(jwk: Jwk): string {
  const members = KTY[jwk.kty];
  if (!members) throw new JoseError("ERR_JOSE_NOT_SUPPORTED", "JWK \"kty\" is not supported");
  const canonical: Record<string, string> = {};
  for (const name of members.thumbprint) {
    const value = jwk[name];
    if (typeof value !== "string") throw invalidJwk(`JWK "${name}" is missing or malformed`);
    canonical[name] = value;
  }
  return sha256(JSON.stringify(canonical));
}

/** A signing key pair as JWKs, both with `kid` (the thumbprint), `alg` and `use: "sig"`. */
export interface SigningKeyPair {
  /** The private key, to sign with; keep it secret. */
  privateJwk: Jwk;
  /** The public key, to publish in a JWK Set. */
  publicJwk: Jwk;
}

/**
 * Generates a key pair for `alg` (RSA keys of 2048 bits) and returns it as JWKs whose `kid` is the RFC 7638
 * thumbprint, so a `kid` names exactly one key. RFC 7517 §4.5, RFC 7638 §1.
 */
export async function generateSigningKey(alg: JwsAlgorithm): Promise<SigningKeyPair> {
  const pair = await crypto.subtle.generateKey(generateParams(alg), true, ["sign", "verify"]) as CryptoKeyPair;
  const exported = await crypto.subtle.exportKey("jwk", pair.privateKey) as Jwk;
  const members = KTY[algorithmEntry(alg).kty]!;
  const kid = jwkThumbprint(exported);
  const publicJwk: Jwk = { kty: exported.kty };
  for (const name of members.public) publicJwk[name] = exported[name];
  Object.assign(publicJwk, { kid, alg, use: "sig" });
  const privateJwk: Jwk = { ...publicJwk };
  for (const name of members.private) privateJwk[name] = exported[name];
  return { privateJwk, publicJwk };
}
