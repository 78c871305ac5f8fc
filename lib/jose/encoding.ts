/**
 * Strict base64url and JSON for JOSE segments. Lenient decoders (padding, `+` and `/`, stray bits) let one
 * token take many spellings, which defeats replay caches keyed on the token and hides smuggled bytes.
 *
 * @module
 */
import { JoseError } from "./errors.ts";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const VALUES = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) VALUES[ALPHABET.charCodeAt(i)] = i;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

/**
 * Decodes base64url without padding (RFC 7515 §2, RFC 4648 §5): refuses `=`, characters outside the
 * alphabet, a length of 4n+1, and non-zero bits left over in the last character (a second spelling of the
 * same bytes). `what` names the segment in the error.
 */
export function decodeSegment(text: string, what: string): Uint8Array {
  const n = text.length;
  const rest = n & 3;
  if (rest === 1) throw invalid(what);
  const out = new Uint8Array(((n >> 2) * 3) + (rest === 0 ? 0 : rest - 1));
  let j = 0;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const v = (value(text, i, what) << 18) | (value(text, i + 1, what) << 12) | (value(text, i + 2, what) << 6) |
      value(text, i + 3, what);
    out[j++] = v >> 16;
    out[j++] = (v >> 8) & 255;
    out[j++] = v & 255;
  }
  if (rest === 2) {
    const a = value(text, i, what);
    const b = value(text, i + 1, what);
    if (b & 15) throw invalid(what);
    out[j] = (a << 2) | (b >> 4);
  } else if (rest === 3) {
    const a = value(text, i, what);
    const b = value(text, i + 1, what);
    const c = value(text, i + 2, what);
    if (c & 3) throw invalid(what);
    out[j++] = (a << 2) | (b >> 4);
    out[j] = ((b & 15) << 4) | (c >> 2);
  }
  return out;
}

function value(text: string, i: number, what: string): number {
  const code = text.charCodeAt(i);
  const v = code < 128 ? VALUES[code]! : -1;
  if (v < 0) throw invalid(what);
  return v;
}

const invalid = (what: string): JoseError => new JoseError("ERR_JWS_INVALID", `JWS ${what} is not base64url`);

/**
 * Parses a decoded segment as a JSON object (RFC 7515 §5.2 step 3, RFC 7519 §7.2 step 10): invalid UTF-8,
 * arrays, strings and `null` are refused.
 */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch {
    return undefined;
  }
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

/** UTF-8 bytes of a string. */
export function utf8Bytes(text: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(text);
}
