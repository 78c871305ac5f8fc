/**
 * The stored-token rows (`npm run bench -- --stored 0,100000,1000000`): a bench server whose memory store is
 * pre-filled with N tokens before it listens, and the handlers those rows load. Web APIs only, so the bench
 * servers of Node, Deno and Bun share it.
 *
 * Pre-filling goes straight through the store (`server.storage.saveTokens`, which for the default store is the
 * in-memory store itself), so 1M records take seconds rather than the minutes a million token requests would.
 * Each record is what the token endpoint would have stored: a SHA-256 hash of a known plaintext, so the load
 * generator can present live tokens picked at random across the whole store. Of every 10 records:
 *
 * - 1 expired a minute before the server started: the backlog the incremental sweep works through;
 * - 1 expires 5 to 120 s after the server started (spread evenly), so expiry slots (30 s) end and are swept
 *   while the rows run;
 * - 1 is an authorization-code grant of the public client: an access token, a refresh token and a listed grant
 *   (users shared 1000 ways, as many grants per user as a busy deployment has);
 * - 7 are live client_credentials access tokens of the confidential client (an hour), which the Bearer and
 *   introspection rows present.
 *
 * @module
 */
import type { AuthorizationServer } from "../../mod.ts";
import { sha256 } from "../../lib/sha256.ts";
import type { IssuedTokens } from "../../lib/storage/types.ts";
import { CLIENT_CREDENTIALS_BODY, codeExchangeBody, FORM_HEADERS, ISSUER, issueCodes, TOKEN_PATH } from "./fixture.ts";

/** The plaintext of pre-filled token `i` of a kind: base64url, 43 characters, as the server mints them. */
export function storedToken(kind: "a" | "r", i: number): string {
  return `${kind}${i.toString(36).padStart(42, "0")}`;
}

/** Which of every 10 records is a live client_credentials access token of `bench-backend` (see the module). */
const LIVE_FIRST = 3;
const LIVE_PER_TEN = 7;

/** A live pre-filled access token for a random number `r` in [0, 1), or undefined when N holds none. */
export function liveStoredIndex(r: number, stored: number): number | undefined {
  const tens = Math.floor(stored / 10);
  if (tens === 0) return undefined;
  const k = Math.floor(r * tens * LIVE_PER_TEN);
  return Math.floor(k / LIVE_PER_TEN) * 10 + LIVE_FIRST + (k % LIVE_PER_TEN);
}

/** What pre-filling took (the full collection after it not included), for the ready line. */
export interface PrefillReport {
  stored: number;
  ms: number;
  /** Records by kind once filled (the store's `size()`). */
  size?: Record<string, number>;
}

/** Pre-fills the server's store with `n` records (see the module). */
export async function prefill(server: AuthorizationServer, n: number): Promise<PrefillReport> {
  const started = performance.now();
  const now = Date.now();
  const hour = 3_600_000;
  for (let i = 0; i < n; i++) {
    const slot = i % 10;
    const hash = sha256(storedToken("a", i));
    let tokens: IssuedTokens;
    if (slot === 2) {
      const grant_id = `stored-grant-${i}`;
      const user_id = `stored-user-${i % 1000}`;
      tokens = {
        access: { hash, client_id: "bench-spa", user_id, scope: "read", expires_at: now + hour, grant_id },
        refresh: { hash: sha256(storedToken("r", i)), grant_id, client_id: "bench-spa", user_id, scope: "read", expires_at: now + 30 * 24 * hour },
      };
    } else {
      const expires_at = slot === 0 ? now - 60_000 : slot === 1 ? now + 5_000 + ((i * 7919) % 115_000) : now + hour;
      tokens = { access: { hash, client_id: "bench-backend", scope: "read", expires_at } };
    }
    await server.storage.saveTokens(tokens, now);
  }
  const size = (server.storage as { size?: () => Record<string, number> }).size?.();
  const ms = Math.round(performance.now() - started);
  // A full collection now, before listening, so that the first row does not pay for marking the filled heap
  // (on Bun that first cycle took 0.7 s): the rows measure the steady state of a full store.
  const g = globalThis as { gc?: () => void; Bun?: { gc(full: boolean): void } };
  if (g.Bun) g.Bun.gc(true);
  else g.gc?.();
  return { stored: n, ms, ...(size ? { size } : {}) };
}

const JSON_HEADERS = { "content-type": "application/json" };

/**
 * The resource port: a Bearer-protected API answering a small JSON body, with `verifyAccessToken` as the
 * README shows it (401 for a refused token).
 */
export function resourceFetch(server: AuthorizationServer): (request: Request) => Promise<Response> {
  return async (request) => {
    try {
      const info = await server.verifyAccessToken(request, "read");
      return new Response(`{"client_id":${JSON.stringify(info.client_id)}}`, { headers: JSON_HEADERS });
    } catch {
      return new Response(null, { status: 401 });
    }
  };
}

const post = (body: string): Request =>
  new Request(ISSUER + TOKEN_PATH, { method: "POST", headers: FORM_HEADERS, body });

/**
 * The control port of a stored server: `GET /codes?n=N` (codes through the consent flow), `GET /refresh?n=N`
 * (refresh tokens of fresh grants, each from a redeemed code) and `GET /access?n=N` (client_credentials access
 * tokens), each answered as a JSON array.
 */
export function storedControlFetch(server: AuthorizationServer): (request: Request) => Promise<Response> {
  return async (request) => {
    const url = new URL(request.url);
    const n = Number(url.searchParams.get("n"));
    if (!Number.isSafeInteger(n) || n < 0 || n > 1_000_000) return new Response("n must be a count", { status: 400 });
    if (url.pathname === "/codes") return Response.json(await issueCodes(server, n));
    if (url.pathname === "/refresh") {
      const tokens: string[] = [];
      for (const code of await issueCodes(server, n)) {
        const response = await server.fetch(post(codeExchangeBody(code)));
        tokens.push(((await response.json()) as { refresh_token: string }).refresh_token);
      }
      return Response.json(tokens);
    }
    if (url.pathname === "/access") {
      const tokens: string[] = [];
      for (let i = 0; i < n; i++) {
        const response = await server.fetch(post(CLIENT_CREDENTIALS_BODY));
        tokens.push(((await response.json()) as { access_token: string }).access_token);
      }
      return Response.json(tokens);
    }
    return new Response("not found", { status: 404 });
  };
}

/** `--stored N` from the command line: how many records to pre-fill. */
export function storedCount(argv: readonly string[]): number {
  const i = argv.indexOf("--stored");
  const n = i === -1 ? 0 : Number(argv[i + 1]);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`--stored must be a count: "${argv[i + 1]}"`);
  return n;
}
