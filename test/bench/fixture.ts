/**
 * What every benchmark runs against, on every runtime: one server with the clients of the scenarios, the
 * request bodies, a way to pre-issue authorization codes through the real consent flow, and the "bare" handler
 * that the results are divided by. Web APIs only, so Node (tsx), Deno and Bun load the same file.
 *
 * @module
 */
import { type AuthorizationServer, createAuthorizationServer, type Storage } from "../../mod.ts";

export const ISSUER = "http://127.0.0.1";
/** The spec's token address (spec §4.2), the one a spec client calls. */
export const TOKEN_PATH = "/index.php?module=OAuth2&action=token";
export const AUTHORIZE_PATH = "/index.php?module=OAuth2&action=authorize";
export const REDIRECT = "http://127.0.0.1:9999/callback";
export const BACKEND_SECRET = "bench-backend-secret-0123456789abcdef";
/** One PKCE pair for every code: the challenge is per authorization request, reusing it costs no realism. */
export const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
export const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/** client_credentials with client_secret_post. */
export const CLIENT_CREDENTIALS_BODY: string = new URLSearchParams({
  grant_type: "client_credentials",
  client_id: "bench-backend",
  client_secret: BACKEND_SECRET,
  scope: "read",
}).toString();

/** The authorization_code exchange of the public client, with PKCE. */
/** Registers the client_credentials client that CLIENT_CREDENTIALS_BODY authenticates as. */
export async function registerBackend(server: AuthorizationServer): Promise<void> {
  await server.clients.register({
    client_id: "bench-backend",
    client_secret: BACKEND_SECRET,
    name: "Bench backend",
    type: "confidential",
    scopes: ["read"],
    grant_types: ["client_credentials"],
  });
}

export function codeExchangeBody(code: string): string {
  return new URLSearchParams({
    grant_type: "authorization_code",
    client_id: "bench-spa",
    redirect_uri: REDIRECT,
    code,
    code_verifier: VERIFIER,
  }).toString();
}

/** A refresh rotation of the public client. */
export function refreshBody(refreshToken: string): string {
  return new URLSearchParams({ grant_type: "refresh_token", client_id: "bench-spa", refresh_token: refreshToken })
    .toString();
}

export const FORM_HEADERS: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };

/**
 * The constant answer of the bare servers: the size and headers of a real token response, no work behind it.
 */
export const BARE_BODY: string = JSON.stringify({
  access_token: "x".repeat(43),
  token_type: "Bearer",
  expires_in: 3600,
  scope: "read",
});
export const BARE_HEADERS: Record<string, string> = {
  "content-type": "application/json;charset=UTF-8",
  "cache-control": "no-store",
  pragma: "no-cache",
};

/** The bare fetch handler: reads the form body, answers constant JSON. The denominator of every ratio. */
export async function bareFetch(request: Request): Promise<Response> {
  await request.text();
  return new Response(BARE_BODY, { headers: BARE_HEADERS });
}

/**
 * The server under test: a confidential client_credentials client and a public PKCE client with refresh
 * tokens. Throttling stays on, as in production; it only counts failures and every secret here is valid.
 */
export async function createBenchServer(storage?: Storage): Promise<AuthorizationServer> {
  const server = createAuthorizationServer({
    issuer: ISSUER,
    ...(storage ? { storage } : {}),
    scopes: { read: "Read your reports" },
    // The end user is already signed in: the bench measures the token endpoint, not a login form. Each code is
    // issued to its own user (header x-bench-user), since the server keeps at most 5 outstanding codes per user
    // and client.
    authenticateUser: (request) => ({ id: request.headers.get("x-bench-user") ?? "bench-user" }),
    onError: (error) => console.error("bench server error:", error),
  });
  await registerBackend(server);
  await server.clients.register({
    client_id: "bench-spa",
    name: "Bench SPA",
    type: "public",
    redirect_uris: [REDIRECT],
    scopes: ["read"],
    grant_types: ["authorization_code", "refresh_token"],
  });
  return server;
}

const AUTHORIZE_QUERY = new URLSearchParams({
  response_type: "code",
  client_id: "bench-spa",
  redirect_uri: REDIRECT,
  scope: "read",
  state: "bench",
  code_challenge: CHALLENGE,
  code_challenge_method: "S256",
}).toString();

let benchUsers = 0;

/**
 * Issues `count` codes through the real authorization endpoint: per code, a consent page and its "Allow" POST,
 * for a user of its own. A consent approval is single-use, and the server keeps at most 5 outstanding codes
 * per user and client, so neither a page nor a user can serve more than one code of a pool.
 */
export async function issueCodes(server: AuthorizationServer, count: number): Promise<string[]> {
  const url = `${ISSUER}${AUTHORIZE_PATH}&${AUTHORIZE_QUERY}`;
  const one = async (): Promise<string> => {
    const user = { "x-bench-user": `bench-user-${++benchUsers}` };
    const page = await server.fetch(new Request(url, { headers: user }));
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1];
    if (page.status !== 200 || csrf === undefined) throw new Error(`Cannot issue codes: consent page answered ${page.status}`);
    const body = new URLSearchParams({ decision: "allow", csrf }).toString();
    const response = await server.fetch(new Request(url, { method: "POST", headers: { ...FORM_HEADERS, ...user }, body }));
    const location = response.headers.get("location");
    const code = location === null ? null : new URL(location).searchParams.get("code");
    if (code === null) throw new Error(`Cannot issue codes: consent answered ${response.status}`);
    return code;
  };
  // 32 in flight: WebCrypto work then overlaps where the runtime runs it off the main thread.
  const codes: string[] = [];
  while (codes.length < count) {
    const batch = Math.min(32, count - codes.length);
    codes.push(...await Promise.all(Array.from({ length: batch }, one)));
  }
  return codes;
}

/**
 * The control handler of a bench server, on its own port so the port under load serves the server and nothing
 * else: `GET /codes?n=N` issues N codes through the consent flow and answers them as a JSON array.
 */
export function controlFetch(server: AuthorizationServer): (request: Request) => Promise<Response> {
  return async (request) => {
    const n = Number(new URL(request.url).searchParams.get("n"));
    if (!Number.isSafeInteger(n) || n < 0) return new Response("n must be a count", { status: 400 });
    return Response.json(await issueCodes(server, n));
  };
}

/** What a bench server prints, as one line of JSON, once both of its ports listen. */
export interface ReadyLine {
  port: number;
  /** The control port, for `oauth` and `stored` servers. */
  control?: number;
  /** The Bearer-protected resource port, for `stored` servers (see stored.ts). */
  resource?: number;
  /** `stored` servers: how many records were pre-filled and how long it took. */
  prefill?: { stored: number; ms: number; size?: Record<string, number> };
}

/** The mode a bench server entry runs in: the bare baseline, the authorization server, or it pre-filled. */
export type ServeMode = "bare" | "oauth" | "bare-fetch" | "stored";

/** The mode from the command line (`--mode bare|oauth|bare-fetch|stored`). */
export function serveMode(argv: readonly string[]): ServeMode {
  const i = argv.indexOf("--mode");
  const mode = i === -1 ? undefined : argv[i + 1];
  if (mode !== "bare" && mode !== "oauth" && mode !== "bare-fetch" && mode !== "stored") {
    throw new Error(`--mode must be bare, oauth, bare-fetch or stored: "${mode}"`);
  }
  return mode;
}
