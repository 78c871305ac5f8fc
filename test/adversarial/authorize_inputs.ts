/**
 * Authorization requests for the fuzz suite, and the oracle of its redirect property: a redirect only ever goes
 * to a redirect_uri registered for the one client the request names, with only OAuth's response parameters added.
 */
import fc from "fast-check";
import { AUTHORIZE_URL, ISSUER } from "../helpers.ts";
import {
  contentType, encodePairs, encoding, headerValue, huge, KNOWN_CLIENTS, mayHaveBody, method, nasty, NEAR_MISSES, OTHER_PORTS,
  type Pairs, paramName, randomPairs,
} from "./arbitraries.ts";
import type { Seen } from "./support.ts";
export interface AuthorizeInput {
  url: string;
  method: string;
  form: string;
  contentType: string | undefined;
  user: string | undefined;
  cookie: string | undefined;
}

/** An S256 challenge (RFC 7636 Appendix B). */
export const CHALLENGE: string = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const REGISTERED_PAIRS: readonly [string, string][] = Object.entries(KNOWN_CLIENTS).flatMap(([id, c]) => c.redirect_uris.map((u): [string, string] => [id, u]));
const ALL_URIS: string[] = [...new Set(REGISTERED_PAIRS.map(([, u]) => u))];

/** Authorization requests: mostly a registered client with one of its URIs, then any mix of the parameters. */
export const authorizePairs: fc.Arbitrary<Pairs> = fc.record({
  who: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...REGISTERED_PAIRS) },
    {
      weight: 2,
      arbitrary: fc.tuple(
        fc.oneof(fc.constantFrom(...Object.keys(KNOWN_CLIENTS), "unknown", "SPA", "spa ", ""), nasty),
        fc.oneof(fc.constantFrom(...ALL_URIS, ...NEAR_MISSES, ...OTHER_PORTS), nasty),
      ),
    },
  ),
  dropWho: fc.constantFrom(0, 0, 0, 0, 1, 2),
  response_type: fc.option(fc.oneof({ weight: 4, arbitrary: fc.constant("code") }, { weight: 1, arbitrary: fc.constantFrom("token", "Code", "code id_token", "") }, { weight: 1, arbitrary: nasty })),
  scope: fc.option(fc.oneof({ weight: 4, arbitrary: fc.constantFrom("read", "write", "export", "admin", "read write") }, { weight: 1, arbitrary: nasty })),
  state: fc.option(fc.oneof(fc.constant("st-123"), nasty)),
  code_challenge: fc.option(fc.oneof({ weight: 3, arbitrary: fc.constant(CHALLENGE) }, { weight: 1, arbitrary: nasty })),
  code_challenge_method: fc.option(fc.constantFrom("S256", "S256", "plain", "s256", "")),
  extra: fc.array(fc.tuple(paramName, nasty), { maxLength: 2 }),
  repeat: fc.array(fc.tuple(fc.nat(), fc.option(nasty)), { maxLength: 2 }),
}).map((g) => {
  const pairs: Pairs = [];
  if (g.dropWho !== 1) pairs.push(["client_id", g.who[0]]);
  if (g.dropWho !== 2) pairs.push(["redirect_uri", g.who[1]]);
  for (const name of ["response_type", "scope", "state", "code_challenge", "code_challenge_method"] as const) {
    if (g[name] !== null) pairs.push([name, g[name]]);
  }
  pairs.push(...g.extra);
  for (const [at, value] of g.repeat) {
    const [name, original] = pairs[at % pairs.length]!;
    pairs.push([name, value ?? original]);
  }
  return pairs;
});

export const authorizeInput: fc.Arbitrary<AuthorizeInput> = fc.record({
  prefix: fc.constantFrom(AUTHORIZE_URL + "&", `${ISSUER}/authorize?`, `${ISSUER}/index.php?`),
  routing: fc.nat(),
  pairs: authorizePairs,
  encoding: encoding,
  method: fc.oneof({ weight: 6, arbitrary: fc.constant("GET") }, { weight: 3, arbitrary: fc.constant("POST") }, { weight: 1, arbitrary: method }),
  form: fc.oneof(
    fc.tuple(fc.constantFrom("allow", "deny", "ALLOW", "", "maybe"), fc.oneof(fc.constant(undefined), nasty, fc.constant("lq1x2y3.AAAA"))).map(([decision, csrf]) => new URLSearchParams(csrf === undefined ? [["decision", decision]] : [["decision", decision], ["csrf", csrf]]).toString()),
    fc.tuple(randomPairs(nasty), encoding).map(([p, e]) => encodePairs(p, e)),
    huge,
  ),
  contentType,
  // The fixture's hook signs in whoever x-test-user names; an empty name would be the hook's bug (a 500), not the server's.
  user: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom("alice", "none", "bob") }, { weight: 1, arbitrary: headerValue.filter((v) => v.trim() !== "") }),
  cookie: fc.option(headerValue, { nil: undefined }),
}).map((g) => {
  const pairs = g.pairs.map(([k, v]): [string, string] => [k, v]);
  if (g.prefix.endsWith("index.php?")) {
    pairs.splice(g.routing % (pairs.length + 1), 0, ["module", "OAuth2"]);
    pairs.splice((g.routing >> 3) % (pairs.length + 1), 0, ["action", "authorize"]);
  }
  return { url: g.prefix + encodePairs(pairs, g.encoding), method: g.method, form: g.form, contentType: g.contentType, user: g.user, cookie: g.cookie };
});

export function authorizeRequest(i: AuthorizeInput): Request {
  const headers = new Headers();
  if (i.user !== undefined) headers.set("x-test-user", i.user);
  if (i.cookie !== undefined) headers.set("cookie", i.cookie);
  if (i.contentType !== undefined) headers.set("content-type", i.contentType);
  return new Request(i.url, { method: i.method, headers, body: mayHaveBody(i.method) ? i.form : null });
}

/**
 * Whether the oracle counts `uri` as registered: the exact string (RFC 9700 §4.1.3), or an http loopback URI
 * that differs from a registered one in its port alone (RFC 8252 §7.3: a native app binds any free port).
 * Written here from the RFCs, not taken from lib/redirect_uri.ts, so the oracle stays independent.
 */
export function isRegistered(registered: readonly string[], uri: string): boolean {
  if (registered.includes(uri)) return true;
  const loopback = (u: string) => {
    const m = /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(?::(\d{1,5}))?([/?][^#]*)?$/.exec(u);
    if (m === null || (m[2] !== undefined && (Number(m[2]) < 1 || Number(m[2]) > 65535))) return undefined;
    return `${m[1]}${m[3] ?? ""}`;
  };
  const bare = loopback(uri);
  return bare !== undefined && registered.some((r) => loopback(r) === bare);
}

/** The response parameters a redirect may add to a registered URI (RFC 6749 §4.1.2, §4.1.2.1; RFC 9207). */
const ADDED = new Set(["code", "state", "error", "error_description", "iss"]);

/**
 * Problems with a redirect: it must follow a request naming one client (active, known to the oracle) and one
 * redirect_uri registered for it, and go to exactly that URI with only OAuth's response parameters added.
 */
export function redirectProblems(requestUrl: string, seen: Seen, codeAllowed: boolean): string[] {
  if (seen.status < 300 || seen.status >= 400) return [];
  const location = seen.headers.get("location");
  if (location === null) return [`a ${seen.status} without Location`];
  const query = new URL(requestUrl).searchParams;
  const ids = query.getAll("client_id");
  const uris = query.getAll("redirect_uri");
  if (ids.length !== 1 || uris.length !== 1) return [`redirect to ${location} for ${ids.length} client_id and ${uris.length} redirect_uri`];
  const client = Object.hasOwn(KNOWN_CLIENTS, ids[0]!) ? KNOWN_CLIENTS[ids[0]!] : undefined;
  if (client === undefined || !client.active) return [`redirect to ${location} for client ${JSON.stringify(ids[0])}`];
  if (!isRegistered(client.redirect_uris, uris[0]!)) return [`redirect to ${location}: ${JSON.stringify(uris[0])} is not registered`];
  const problems: string[] = [];
  const to = new URL(location);
  const registered = new URL(uris[0]!);
  const before = (u: URL) => u.href.slice(0, u.href.length - u.search.length - u.hash.length);
  const kept = (u: URL) => JSON.stringify([...u.searchParams].filter(([k]) => !ADDED.has(k)));
  if (to.hash !== "" || before(to) !== before(registered) || kept(to) !== kept(registered)) {
    problems.push(`redirect to ${location}, not to the registered ${uris[0]}`);
  }
  if (to.searchParams.get("iss") !== ISSUER) problems.push("redirect without iss");
  const state = query.getAll("state");
  if (state.length === 1 && state[0] !== "" && to.searchParams.get("state") !== state[0]) problems.push("state not returned unchanged");
  if (to.searchParams.has("code") === to.searchParams.has("error")) problems.push("a redirect must carry a code or an error");
  if (to.searchParams.has("code") && !codeAllowed) problems.push("a code without a valid consent");
  return problems;
}

