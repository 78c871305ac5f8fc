/**
 * What the building blocks of one token request cost on this runtime, one call in flight:
 *
 *   tsx test/bench/primitives.ts | deno run test/bench/primitives.ts | bun test/bench/primitives.ts
 *
 * The evidence behind the hot path's choices (README, "Performance"): WebCrypto's digest against the SHA-256
 * of `lib/crypto.ts`, the WHATWG `Request`/`Response` that the Node adapter avoids, and so on.
 *
 * @module
 */
import { randomToken } from "../../lib/crypto.ts";
import { sha256 } from "../../lib/sha256.ts";
import { parseForm } from "../../lib/http.ts";
import { BARE_BODY, BARE_HEADERS, CLIENT_CREDENTIALS_BODY, FORM_HEADERS, ISSUER, TOKEN_PATH } from "./fixture.ts";
import { runtime } from "./inprocess.ts";

const TOKEN = "PoGjFHE-T2OhUkEIIlKUQHzAQ-QKVDlrufqKWhdxiaI";
const bytes = new TextEncoder().encode(TOKEN);
const request = (): Request => new Request(ISSUER + TOKEN_PATH, { method: "POST", headers: FORM_HEADERS, body: CLIENT_CREDENTIALS_BODY });

const CASES: Record<string, () => unknown> = {
  "crypto.subtle.digest SHA-256, 43 bytes (awaited)": () => crypto.subtle.digest("SHA-256", bytes),
  "sha256() of lib/crypto.ts, 43 characters": () => sha256(TOKEN),
  "crypto.getRandomValues, 32 bytes": () => crypto.getRandomValues(new Uint8Array(32)),
  "randomToken(): 32 random bytes as base64url": () => randomToken(),
  "new Request (POST, form body)": request,
  "new Request + await request.text()": () => request().text(),
  "new Response (constant JSON)": () => new Response(BARE_BODY, { headers: BARE_HEADERS }),
  "new URLSearchParams(form), iterated": () => [...new URLSearchParams(CLIENT_CREDENTIALS_BODY)],
  "parseForm() of lib/http.ts": () => parseForm(CLIENT_CREDENTIALS_BODY),
  "JSON.stringify(token response)": () => JSON.stringify({ access_token: TOKEN, token_type: "Bearer", expires_in: 3600, scope: "read" }),
};

async function time(f: () => unknown, ms: number): Promise<number> {
  let n = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 100; i++) {
      const r = f();
      if (r instanceof Promise) await r;
    }
    n += 100;
    now = performance.now();
  }
  return ((now - start) * 1000) / n;
}

const results: Record<string, number> = {};
for (const [name, f] of Object.entries(CASES)) {
  await time(f, 300);
  results[name] = Math.round((await time(f, 1000)) * 1000) / 1000;
}
const { name, version } = runtime();
console.log(`${name} ${version}: µs per call, one in flight`);
for (const [label, us] of Object.entries(results)) console.log(`${us.toFixed(3).padStart(9)}  ${label}`);
