/**
 * JWS Compact Serialization (RFC 7515 §7.1): sign, and verify strictly. The algorithm comes from the
 * caller's allow-list for the use, never from the header alone (RFC 8725 §3.1); header parameters that
 * change how the token is read (`crit`, `b64`) are refused; `jku`, `x5u` and `x5c` are never followed.
 *
 * @module
 */
import { base64url } from "../crypto.ts";
import { algorithmEntry, checkAllowList, checkSignatureShape, type JwsAlgorithm, keyFits } from "./algorithms.ts";
import { decodeSegment, parseJsonObject, utf8Bytes } from "./encoding.ts";
import { JoseError } from "./errors.ts";
import { importJwk, type Jwk } from "./jwk.ts";

/** A JWS Protected Header (RFC 7515 §4.1). */
export interface JwsHeader {
  /** Algorithm (RFC 7515 §4.1.1). */
  alg: string;
  /** Key ID (§4.1.4). */
  kid?: string;
  /** Media type of the whole JWS (§4.1.9). */
  typ?: string;
  /** A public key (§4.1.3); used only with `embeddedJwk`. */
  jwk?: Jwk;
  /** Any other parameter, kept as it came (`jku`, `x5u`, `x5c` are never followed). */
  [parameter: string]: unknown;
}

/** A protected header whose `alg` passed the allow-list. */
export interface VerifiedHeader extends JwsHeader {
  /** An algorithm of the caller's allow-list. */
  alg: JwsAlgorithm;
}

/**
 * Where verification finds its keys: given the protected header (its `alg` already allowed), the candidate
 * keys to try, in order. A key set selects by `kid` and key type; see `localJwks` and `remoteJwks`.
 */
export type KeySource = (header: VerifiedHeader) => Promise<CryptoKey | readonly CryptoKey[]>;

/** A verification key: a WebCrypto public key, a public JWK, or a source of keys. */
export type KeyInput = CryptoKey | Jwk | KeySource;

/** Options of {@link verifyJws}. */
export interface VerifyJwsOptions {
  /** The algorithms allowed for this use (RFC 8725 §3.1). Required, non-empty. */
  algorithms: readonly JwsAlgorithm[];
  /** The key, public JWK or key source. Exactly one of `key` and `embeddedJwk`. */
  key?: KeyInput;
  /**
   * Take the key from the header's `jwk` (RFC 7515 §4.1.3), as DPoP proofs carry it (RFC 9449 §4.2): it must
   * be a public key of a type that fits `alg`. The caller decides what that key proves.
   */
  embeddedJwk?: boolean;
  /** Longest token accepted, in characters. Default 16 KiB. */
  maxTokenLength?: number;
}

/** A verified JWS. */
export interface VerifiedJws {
  /** The protected header. */
  header: VerifiedHeader;
  /** The payload bytes. */
  payload: Uint8Array;
  /** The key that verified it. */
  key: CryptoKey;
}

/** Default longest token, in characters: far above any access token or assertion, far below a body limit. */
export const MAX_TOKEN_LENGTH: number = 16 * 1024;
/** Longest decoded protected header: room for an RSA-8192 `jwk`, not for a smuggled document. */
const MAX_HEADER_BYTES = 8 * 1024;

const invalid = (message: string): JoseError => new JoseError("ERR_JWS_INVALID", message);

/**
 * Signs `payload` as a JWS in compact serialization (RFC 7515 §5.1, §7.1) with a private key that fits
 * `header.alg` (a WebCrypto key or a private JWK).
 *
 * @example
 * ```ts
 * const jws = await signJws("hello", { alg: "ES256", kid }, privateJwk);
 * ```
 */
export async function signJws(
  payload: Uint8Array | string,
  header: { alg: JwsAlgorithm; [parameter: string]: unknown },
  key: CryptoKey | Jwk,
): Promise<string> {
  const { alg } = header;
  checkAllowList([alg]);
  // What the core would refuse to read, it does not write.
  if (header.crit !== undefined || header.b64 !== undefined) throw new TypeError("Cannot sign: \"crit\" and \"b64\" are not supported");
  const signingKey = isCryptoKey(key) ? key : await importJwk(key, alg, "sign");
  if (!keyFits(signingKey, alg, "sign")) throw new JoseError("ERR_JOSE_KEY_MISMATCH", `The key does not fit ${alg}`);
  const input = `${base64url(utf8Bytes(JSON.stringify(header)))}.${
    base64url(typeof payload === "string" ? utf8Bytes(payload) : payload)
  }`;
  const signature = await crypto.subtle.sign(algorithmEntry(alg).operation, signingKey, utf8Bytes(input));
  return `${input}.${base64url(new Uint8Array(signature))}`;
}

/**
 * Verifies a JWS in compact serialization (RFC 7515 §5.2) and returns its header and payload bytes.
 * Refused, each with its own code: a token over the size limit, other than three strict base64url segments,
 * a header that is not a JSON object; an `alg` outside the allow-list (`none`, `HS256`); `crit` or `b64`; a
 * signature of the wrong shape (DER, wrong length, ECDSA r or s = 0); a key that does not fit `alg`; and a
 * signature that no candidate key verifies.
 *
 * @example
 * ```ts
 * const { header, payload } = await verifyJws(token, { algorithms: ["ES256"], key: publicJwk });
 * ```
 */
export async function verifyJws(token: string, options: VerifyJwsOptions): Promise<VerifiedJws> {
  const allowed = checkAllowList(options.algorithms);
  if ((options.key === undefined) === (options.embeddedJwk !== true)) {
    throw new TypeError("Cannot verify: pass exactly one of \"key\" and \"embeddedJwk\"");
  }
  if (typeof token !== "string") throw invalid("JWS must be a string");
  if (token.length > (options.maxTokenLength ?? MAX_TOKEN_LENGTH)) throw invalid("JWS exceeds the size limit");
  const first = token.indexOf(".");
  const second = token.indexOf(".", first + 1);
  if (first < 0 || second < 0 || token.indexOf(".", second + 1) >= 0) throw invalid("JWS must have three segments");
  const headerBytes = decodeSegment(token.slice(0, first), "header");
  if (headerBytes.length > MAX_HEADER_BYTES) throw invalid("JWS Protected Header exceeds the size limit");
  const header = parseJsonObject(headerBytes);
  if (!header) throw invalid("JWS Protected Header must be a JSON object");
  const alg = header.alg;
  if (typeof alg !== "string") throw invalid("JWS \"alg\" header parameter is missing");
  if (!(allowed as readonly string[]).includes(alg)) {
    throw new JoseError("ERR_JOSE_ALG_NOT_ALLOWED", "JWS \"alg\" header parameter value is not allowed", { claim: "alg" });
  }
  // RFC 7515 §4.1.11: an extension listed in `crit` must be understood; none is. RFC 7797: `b64: false` would
  // change what the signature covers.
  if (header.crit !== undefined) throw new JoseError("ERR_JOSE_NOT_SUPPORTED", "JWS \"crit\" header parameter is not supported", { claim: "crit" });
  if (header.b64 !== undefined) throw new JoseError("ERR_JOSE_NOT_SUPPORTED", "JWS \"b64\" header parameter is not supported", { claim: "b64" });
  for (const name of ["kid", "typ", "cty"]) {
    if (header[name] !== undefined && typeof header[name] !== "string") throw invalid(`JWS "${name}" header parameter must be a string`);
  }
  const verified = header as VerifiedHeader;
  const signature = decodeSegment(token.slice(second + 1), "signature");
  checkSignatureShape(verified.alg, signature);
  const payload = decodeSegment(token.slice(first + 1, second), "payload");
  const keys = await candidateKeys(verified, options);
  const data = utf8Bytes(token.slice(0, second));
  const operation = algorithmEntry(verified.alg).operation;
  for (const key of keys) {
    if (!keyFits(key, verified.alg, "verify")) throw new JoseError("ERR_JOSE_KEY_MISMATCH", `The key does not fit ${verified.alg}`);
    const modulus = (key.algorithm as { modulusLength?: number }).modulusLength;
    if (modulus !== undefined && signature.length !== Math.ceil(modulus / 8)) continue;
    if (await crypto.subtle.verify(operation, key, signature as Uint8Array<ArrayBuffer>, data).catch(() => false)) {
      return { header: verified, payload, key };
    }
  }
  throw new JoseError("ERR_JWS_SIGNATURE_VERIFICATION_FAILED", "JWS signature verification failed");
}

async function candidateKeys(header: VerifiedHeader, options: VerifyJwsOptions): Promise<readonly CryptoKey[]> {
  const { key } = options;
  if (key === undefined) {
    const jwk = header.jwk as unknown;
    if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) throw invalid("JWS \"jwk\" header parameter is missing");
    // Imported as a verification key, so a jwk with private members is refused (checkJwk).
    return [await importJwk(jwk as Jwk, header.alg, "verify")];
  }
  if (isCryptoKey(key)) return [key];
  if (typeof key === "function") {
    const found = await key(header);
    const keys = isCryptoKey(found) ? [found] : found;
    if (keys.length === 0) throw new JoseError("ERR_JWKS_NO_MATCHING_KEY", "No key matches the JWS header");
    return keys;
  }
  return [await importJwk(key, header.alg, "verify")];
}

/** Whether a value is a WebCrypto key (a `CryptoKey`, or shaped like one where the class is not global). */
export function isCryptoKey(value: unknown): value is CryptoKey {
  if (typeof CryptoKey === "function") return value instanceof CryptoKey;
  return typeof value === "object" && value !== null && "algorithm" in value && "usages" in value && "type" in value;
}
