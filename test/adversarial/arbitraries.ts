/**
 * Generators for the fuzz suite: hostile strings and bytes, form bodies and query strings (well formed, raw,
 * broken), headers, methods and targets. Values are drawn both at random and from a dictionary of what a real
 * request carries (parameter names, client ids, secrets, live codes and tokens), so that mutated requests
 * reach deep into the grants instead of stopping at the first check.
 */
import fc from "fast-check";
import { ISSUER, OTHER_REDIRECT, REDIRECT, SECRETS } from "../helpers.ts";

/** Parameter names of every endpoint, plus the spec's routing pair. */
export const PARAM_NAMES: readonly string[] = [
  "grant_type", "client_id", "client_secret", "code", "redirect_uri", "code_verifier", "refresh_token", "scope",
  "state", "token", "token_type_hint", "response_type", "code_challenge", "code_challenge_method", "decision",
  "csrf", "module", "action", "username", "password",
];

/** Redirect URIs of the extra `q` client: one with a query, a loopback one, a native-app scheme. */
export const Q_URIS: readonly string[] = [
  "https://app.example.com/cb?tenant=a%20b&x=1",
  "http://127.0.0.1:8765/cb",
  "com.example.app:/oauth/cb",
];

/** What each client may do, as the fuzz oracles know it (kept here, not read from the server). */
export interface KnownClient {
  type: "public" | "confidential";
  secret?: string;
  redirect_uris: readonly string[];
  scopes: readonly string[];
  active: boolean;
}

/** The fixture's clients plus `q` and the paused `paused`. */
export const KNOWN_CLIENTS: Readonly<Record<string, KnownClient>> = {
  spa: { type: "public", redirect_uris: [REDIRECT], scopes: ["read", "write"], active: true },
  web: { type: "confidential", secret: SECRETS.web, redirect_uris: [REDIRECT, OTHER_REDIRECT], scopes: ["read", "write"], active: true },
  other: { type: "confidential", secret: SECRETS.other, redirect_uris: [REDIRECT], scopes: ["read"], active: true },
  backend: { type: "confidential", secret: SECRETS.backend, redirect_uris: [], scopes: ["export", "read"], active: true },
  "backend-refresh": {
    type: "confidential", secret: SECRETS.backendRefresh, redirect_uris: [], scopes: ["export"], active: true,
  },
  q: { type: "public", redirect_uris: Q_URIS, scopes: ["read"], active: true },
  paused: { type: "confidential", secret: "paused-secret-0123456789abcdef", redirect_uris: [REDIRECT], scopes: ["read"], active: false },
};

/** Redirect URIs that look like registered ones but are not: each is an open-redirect attempt. */
export const NEAR_MISSES: readonly string[] = [
  REDIRECT + "/", REDIRECT + "?", REDIRECT + "#", REDIRECT + "?x=1", REDIRECT + "/../evil", REDIRECT.toUpperCase(),
  "https://APP.example.com/callback", "https://app.example.com:443/callback", "https://app.example.com/%63allback",
  "https://app.example.com.evil.example/callback", "https://evil.example/?https://app.example.com/callback",
  "https://evil.example/callback", "//evil.example/callback", "https://app.example.com@evil.example/callback",
  "http://app.example.com/callback", "https://app.example.com/callback%00", "https://app.example.com/callback\n",
  " https://app.example.com/callback", "javascript:alert(1)", "data:text/html,hi",
  "https://app.example.com/cb?x=1&tenant=a%20b", "https://app.example.com/cb?tenant=a+b&x=1", "https://app.example.com/cb",
  "http://localhost:8765/cb", "com.example.app:/oauth/cb/", "com.example.app://oauth/cb",
  // Loopback (RFC 8252 §7.3): only the port may differ, so every other change is still a miss.
  "http://127.0.0.1:0/cb", "http://127.0.0.1:65536/cb", "http://127.0.0.1:8765/cb/", "http://127.0.0.1:8765/cb#x",
  "https://127.0.0.1:8765/cb", "http://127.0.0.2:8765/cb", "http://127.0.0.1.evil.example:8765/cb", "http://[::1]:8765/cb",
  "http://127.0.0.1:8765@evil.example/cb", "http://127.0.0.1:08765/cb/..",
];

/** Loopback redirect URIs that differ from a registered one in the port alone: accepted (RFC 8252 §7.3). */
export const OTHER_PORTS: readonly string[] = ["http://127.0.0.1:8766/cb", "http://127.0.0.1/cb", "http://127.0.0.1:1/cb"];

/** Short strings that break parsers: control characters, broken escapes, lone surrogates, separators. */
export const NASTY: readonly string[] = [
  "", " ", "\0", "\r", "\n", "\r\n", "\t", "\x7f", "%", "%z", "%zz", "%0", "%00", "%0d%0a", "%0A", "%C0%AF", "%ED%A0%80",
  "%FF%FE", "%E2%82", "%F4%90%80%80", "%u0041", "%%41", "%2", "+", "&", "=", "&&", "==", "&=&", ";", "?", "#", "/",
  "\u2028", "\uFEFF", "\uD800", "\uDFFF", "\uDBFF\uDC00", "é", "𝕏", "<script>", '"', "\\", "'", "../", "{}", "[]",
  "null", "undefined", "__proto__", "constructor", "toString", "%E9", "\u0085", "\u00a0",
];

/** A huge value: past the parameter-length limit, the body limit, or far past both. */
export const huge: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom(4096, 4097, 16_385, 70_000), fc.constantFrom("a", "%41", "é", "\0", "&", "a=b&"))
  .map(([n, unit]) => unit.repeat(Math.ceil(n / unit.length)));

/** Any string at all, hostile ones much more likely than at random. */
export const nasty: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
  { weight: 3, arbitrary: fc.string({ maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 24 }) },
  { weight: 2, arbitrary: fc.array(fc.constantFrom(...NASTY, "a", "b", "1"), { maxLength: 8 }).map((parts) => parts.join("")) },
  { weight: 1, arbitrary: huge },
);

/** A header value fetch accepts: Latin-1 without NUL, CR or LF (WHATWG Headers refuses those). */
export const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 40 }),
  fc.constantFrom(1_000, 9_000, 70_000).map((n) => "A".repeat(n)),
);

/** Names a fuzzer would try for a parameter: real ones, near misses, and noise. */
export const paramName: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...PARAM_NAMES) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("GRANT_TYPE", "grant_type ", " grant_type", "grant_type[]", "grant%5Ftype", "client_id\0", "Client_Id"),
  },
  { weight: 2, arbitrary: nasty },
);

/**
 * A value for a parameter: from the dictionary (which can hold live codes and tokens, read when the value is
 * drawn), or hostile noise.
 */
export function paramValue(dictionary: () => readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 5, arbitrary: fc.nat().map((i) => pick(dictionary(), i)) },
    { weight: 4, arbitrary: nasty },
  );
}

/** The dictionary's i-th word (wrapping), or "" for an empty one. */
export function pick(list: readonly string[], i: number): string {
  return list.length === 0 ? "" : list[i % list.length]!;
}

/** Name-value pairs, put together as a fuzzer would send them. */
export type Pairs = [string, string][];

/** How a list of pairs becomes a body or query string. */
export type Encoding = "form" | "raw" | "percent-everything";

/** Mostly proper encoding, sometimes raw or every byte escaped. */
export const encoding: fc.Arbitrary<Encoding> = fc.constantFrom<Encoding>("form", "form", "form", "raw", "percent-everything");

/** Encodes pairs: properly, raw (so `&`, `=` and `%` inside values break the structure), or every byte escaped. */
export function encodePairs(pairs: Pairs, encoding: Encoding): string {
  if (encoding === "form") return new URLSearchParams(pairs).toString();
  if (encoding === "raw") return pairs.map(([k, v]) => `${k}=${v}`).join("&");
  const escape = (s: string) => Array.from(new TextEncoder().encode(s), (b) => "%" + b.toString(16).padStart(2, "0")).join("");
  return pairs.map(([k, v]) => `${escape(k)}=${escape(v)}`).join("&");
}

/** Pairs mutated from a template: values replaced, pairs dropped, duplicated and inserted. */
export function mutatedPairs(templates: () => readonly Pairs[], value: fc.Arbitrary<string>): fc.Arbitrary<Pairs> {
  const edit = fc.oneof(
    fc.record({ op: fc.constant("replace" as const), at: fc.nat(), value }),
    fc.record({ op: fc.constant("drop" as const), at: fc.nat() }),
    fc.record({ op: fc.constant("duplicate" as const), at: fc.nat(), value: fc.option(value, { nil: undefined }) }),
    fc.record({ op: fc.constant("insert" as const), at: fc.nat(), name: paramName, value }),
    fc.record({ op: fc.constant("empty" as const), at: fc.nat() }),
  );
  return fc.tuple(fc.nat(), fc.array(edit, { maxLength: 3 })).map(([which, edits]) => {
    const list = templates();
    const pairs: Pairs = list.length === 0 ? [] : list[which % list.length]!.map(([k, v]) => [k, v]);
    for (const e of edits) {
      const at = pairs.length === 0 ? 0 : e.at % pairs.length;
      if (e.op === "insert") pairs.splice(at, 0, [e.name, e.value]);
      else if (pairs.length === 0) continue;
      else if (e.op === "replace") pairs[at]![1] = e.value;
      else if (e.op === "drop") pairs.splice(at, 1);
      else if (e.op === "empty") pairs[at]![1] = "";
      else pairs.splice(at, 0, [pairs[at]![0], e.value ?? pairs[at]![1]]);
    }
    return pairs;
  });
}

/** Random pairs: names and values drawn independently. */
export function randomPairs(value: fc.Arbitrary<string>): fc.Arbitrary<Pairs> {
  return fc.array(fc.tuple(paramName, value), { maxLength: 8 });
}

/** Bytes that are not valid UTF-8, spliced into an encoded body. */
export const badUtf8: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.constantFrom(
    [0xff], [0xfe, 0xff], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80], [0xc3],
    [0xe2, 0x82], [0x00], [0x0d, 0x0a], [0xef, 0xbb, 0xbf],
  ).map((bytes) => new Uint8Array(bytes)),
  fc.uint8Array({ maxLength: 16 }),
);

/** A body: text, or its bytes with invalid UTF-8 spliced in. */
export function bodyOf(text: fc.Arbitrary<string>): fc.Arbitrary<string | Uint8Array<ArrayBuffer>> {
  return fc.oneof(
    { weight: 4, arbitrary: text },
    {
      weight: 1,
      arbitrary: fc.tuple(text, badUtf8, fc.nat()).map(([t, bad, at]) => {
        const bytes = new TextEncoder().encode(t);
        const cut = bytes.length === 0 ? 0 : at % (bytes.length + 1);
        const out = new Uint8Array(bytes.length + bad.length);
        out.set(bytes.subarray(0, cut));
        out.set(bad, cut);
        out.set(bytes.subarray(cut), cut + bad.length);
        return out;
      }),
    },
  );
}

/** Content types: the right one in its legal spellings, and many wrong ones; undefined for none. */
export const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      "application/x-www-form-urlencoded", "application/x-www-form-urlencoded; charset=UTF-8",
      "APPLICATION/X-WWW-FORM-URLENCODED", "application/x-www-form-urlencoded;charset=latin1",
      " application/x-www-form-urlencoded ; foo=bar",
    ),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      undefined, "", "application/json", "text/plain", "multipart/form-data; boundary=x", "application/xml",
      "application/x-www-form-urlencodedx", "application/x-www-form-urlencoded, application/json", "*/*", "form",
      "text/html; charset=utf-8", "application/octet-stream",
    ),
  },
  { weight: 1, arbitrary: headerValue },
);

/** Methods: the real ones in every case, unknown tokens, and names of Object.prototype members. */
export const method: fc.Arbitrary<string> = fc.oneof(
  { weight: 24, arbitrary: fc.constant("POST") },
  { weight: 3, arbitrary: fc.constantFrom("GET", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS", "post", "Post", "get", "put") },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "FOO", "M-SEARCH", "PROPFIND", "LINK", "X", "constructor", "__proto__", "hasOwnProperty", "toString", "valueOf",
      "isPrototypeOf", "propertyIsEnumerable", "toLocaleString", "__defineGetter__", "__lookupSetter__",
    ),
  },
  {
    weight: 1,
    // Any RFC 9110 token but those fetch refuses (CONNECT, TRACE, TRACK) or warns about (patch in lower case).
    arbitrary: fc.stringMatching(/^[A-Za-z!#$%&'*+.^_`|~-]{1,12}$/).filter((m) => {
      const upper = m.toUpperCase();
      return !["CONNECT", "TRACE", "TRACK"].includes(upper) && (upper !== "PATCH" || m === upper);
    }),
  },
);

/** Methods for which a WHATWG Request may carry a body. */
export function mayHaveBody(name: string): boolean {
  const upper = name.toUpperCase();
  return upper !== "GET" && upper !== "HEAD";
}

/** Basic credentials per RFC 6749 §2.3.1 (form-urlencoded, then base64), computed here. */
export function basicHeader(id: string, secret: string): string {
  const enc = (s: string) => new URLSearchParams({ v: s }).toString().slice(2);
  const bytes = new TextEncoder().encode(`${enc(id)}:${enc(secret)}`);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return `Basic ${btoa(binary)}`;
}

/** Authorization headers a token endpoint sees: none, right, wrong, broken, other schemes, huge. */
export const authorization: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  {
    weight: 3,
    arbitrary: fc.tuple(fc.constantFrom(...Object.keys(KNOWN_CLIENTS), "nobody"), fc.boolean()).map(([id, right]) =>
      basicHeader(id, right ? KNOWN_CLIENTS[id]?.secret ?? "" : "wrong-secret-0123456789")
    ),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom("Basic ", "basic ", "BASIC  ", "Basic", "Bearer ", "Digest "), headerValue).map(
      ([scheme, rest]) => scheme + rest,
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "Basic " + btoa("web"), "Basic " + btoa(":secret"), "Basic " + btoa("web:%zz"), "Basic " + btoa("%E9:x"), "Basic ====",
      "Basic " + btoa("web:" + SECRETS.web) + "=", "Basic " + "A".repeat(70_000),
    ),
  },
);

/** Addresses the throttle keys on; undefined as from a runtime that reports none. */
export const remoteAddress: fc.Arbitrary<string | undefined> = fc.constantFrom(
  undefined, "203.0.113.1", "203.0.113.2", "198.51.100.7", "2001:db8::1", "::1", "unknown",
);

/** Where token-endpoint-like requests go: both token addresses, revocation, introspection, and near misses. */
export const tokenTarget: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(`${ISSUER}/index.php?module=OAuth2&action=token`, `${ISSUER}/token`) },
  { weight: 2, arbitrary: fc.constantFrom(`${ISSUER}/revoke`, `${ISSUER}/introspect`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      `${ISSUER}/index.php?action=token&module=OAuth2`, `${ISSUER}/index.php?module=OAuth2&action=token&action=token`,
      `${ISSUER}/index.php?module=oauth2&action=token`, `${ISSUER}/index.php?module=OAuth2&action=TOKEN`,
      `${ISSUER}/token/`, `${ISSUER}/TOKEN`, `${ISSUER}/token?grant_type=client_credentials`, `${ISSUER}//token`,
      `${ISSUER}/index.php?module=OAuth2&action=__proto__`, `${ISSUER}/index.php?module=OAuth2&action=constructor`,
      `${ISSUER}/.well-known/oauth-authorization-server`,
    ),
  },
  { weight: 1, arbitrary: fc.tuple(randomPairs(nasty), fc.constantFrom<Encoding>("form", "raw")).map(([pairs, enc]) => `${ISSUER}/index.php?module=OAuth2&action=token&${encodePairs(pairs, enc)}`) },
);
