/**
 * SHA-256, written out (FIPS 180-4) rather than taken from `crypto.subtle.digest`.
 *
 * Why: every token request hashes two to four 43-character values (a secret, a code, a PKCE verifier, new
 * tokens), and WebCrypto's digest is asynchronous, on Node and Deno a round trip to a worker: for inputs this
 * short that costs far more than the hashing (measured in `test/bench/primitives.ts`; see `test/bench/HISTORY.md`).
 *
 * @module
 */
import { base64url } from "./crypto.ts";

const encoder = new TextEncoder();

/**
 * SHA-256 of a UTF-8 string, base64url-encoded: how codes, tokens and secrets are stored, and how PKCE
 * challenges are checked.
 *
 * Synchronous, and written out here rather than taken from `crypto.subtle.digest`: every token request hashes
 * two or more 43-character values, and on Node WebCrypto's digest is an asynchronous job sent to the thread
 * pool, which cost more than the rest of the request (test/bench/HISTORY.md). The rounds have no branch
 * and no table lookup that depends on the data: the time depends on the input's length (and on whether it is
 * ASCII, which takes a faster path to UTF-8), never on its contents otherwise.
 * `test/crypto.test.ts` checks it against `crypto.subtle.digest` on random inputs of every size class.
 */
export function sha256(value: string): string {
  const count = pack(value);
  const hash = base64url(digest(count));
  // The scratch space held the plaintext (a secret, code or token): leave none of it behind in memory, and
  // give back what a huge input made it grow to.
  if (count > 1024) words = new Int32Array(32);
  else words.fill(0, 0, count);
  schedule.fill(0);
  return hash;
}

// Scratch space, reused by every call: the padded message as big-endian words, the schedule, the output.
let words = new Int32Array(32);
const schedule = new Int32Array(64);
const output = new Uint8Array(32);
const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/**
 * Writes the UTF-8 bytes of `value`, padded (FIPS 180-4 §5.1.1: a 1 bit, zeros, the length in bits), into
 * `words` as big-endian 32-bit words; returns the number of words.
 */
function pack(value: string): number {
  const n = value.length;
  let ascii = true;
  for (let i = 0; i < n; i++) {
    if (value.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  const bytes = ascii ? undefined : encoder.encode(value);
  const length = bytes === undefined ? n : bytes.length;
  const count = (((length + 72) >>> 6) << 6) >>> 2; // whole 64-byte blocks, with room for 0x80 and the length
  if (words.length < count) words = new Int32Array(count);
  const m = words;
  m.fill(0, 0, count);
  if (bytes === undefined) for (let i = 0; i < n; i++) m[i >> 2]! |= value.charCodeAt(i) << (24 - ((i & 3) << 3));
  else for (let i = 0; i < length; i++) m[i >> 2]! |= bytes[i]! << (24 - ((i & 3) << 3));
  m[length >> 2]! |= 0x80 << (24 - ((length & 3) << 3));
  // The length in bits as a 64-bit big-endian number (lengths here stay far below 2^53 bits).
  m[count - 2] = Math.floor(length / 0x20000000);
  m[count - 1] = length << 3;
  return count;
}

/** FIPS 180-4 §6.2 SHA-256 over the first `count` words of `words`; the digest as bytes in `output`. */
function digest(count: number): Uint8Array {
  const m = words;
  const w = schedule;
  let h0 = 0x6a09e667, h1 = 0xbb67ae85 | 0, h2 = 0x3c6ef372, h3 = 0xa54ff53a | 0;
  let h4 = 0x510e527f, h5 = 0x9b05688c | 0, h6 = 0x1f83d9ab, h7 = 0x5be0cd19;
  for (let offset = 0; offset < count; offset += 16) {
    for (let t = 0; t < 16; t++) w[t] = m[offset + t]!;
    for (let t = 16; t < 64; t++) {
      const x = w[t - 15]!;
      const y = w[t - 2]!;
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[t] = (w[t - 16]! + s0 + w[t - 7]! + s1) | 0;
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;
    for (let t = 0; t < 64; t++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + s1 + ((e & f) ^ (~e & g)) + K[t]! + w[t]!) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
    h5 = (h5 + f) | 0;
    h6 = (h6 + g) | 0;
    h7 = (h7 + h) | 0;
  }
  put(0, h0);
  put(4, h1);
  put(8, h2);
  put(12, h3);
  put(16, h4);
  put(20, h5);
  put(24, h6);
  put(28, h7);
  return output;
}

function put(at: number, word: number): void {
  output[at] = word >>> 24;
  output[at + 1] = word >>> 16;
  output[at + 2] = word >>> 8;
  output[at + 3] = word;
}
