/**
 * Mutations of valid token requests, for the fuzz suite's "nothing is issued" property: a scenario makes a
 * fresh, valid request (a code exchange, a refresh, client credentials), a mutation changes one thing, and says
 * whether the change means nothing (the request must still succeed) or something (it must fail, and must not
 * spend the code or refresh token).
 */
import fc from "fast-check";
import type { AuthorizationServer } from "../../mod.ts";
import { codeRequest, consent, ISSUER, OTHER_REDIRECT, pkce, postToken, REDIRECT, SECRETS, TOKEN_URL } from "../helpers.ts";
import { basicHeader, mayHaveBody, nasty, type Pairs } from "./arbitraries.ts";
/** A valid token request, as parts that mutations edit. */
export interface BaseRequest {
  url: string;
  method: string;
  contentType: string;
  pairs: Pairs;
  basic?: [string, string];
  /** The client is public (a secret or Basic header of any kind is then a change that must fail). */
  publicClient: boolean;
}

export function toRequest(r: BaseRequest, encode: (pairs: Pairs) => string = (p) => new URLSearchParams(p).toString()): Request {
  const headers: Record<string, string> = { "content-type": r.contentType };
  if (r.basic) headers.authorization = basicHeader(r.basic[0], r.basic[1]);
  return new Request(r.url, { method: r.method, headers, body: mayHaveBody(r.method) ? encode(r.pairs) : null });
}

export async function exchange(server: AuthorizationServer, fields: Record<string, string>): Promise<Record<string, string>> {
  const response = await postToken(server, fields);
  if (response.status !== 200) throw new Error(`set-up exchange failed: ${await response.text()}`);
  return response.json();
}

export const SCENARIOS: readonly { name: string; make(server: AuthorizationServer): Promise<BaseRequest> }[] = [
  {
    name: "public client, code + PKCE",
    async make(server) {
      const { verifier, challenge } = await pkce();
      const url = await consent(server, codeRequest("spa", { code_challenge: challenge, code_challenge_method: "S256" }));
      const pairs: Pairs = [["grant_type", "authorization_code"], ["client_id", "spa"], ["redirect_uri", REDIRECT], ["code", url.searchParams.get("code")!], ["code_verifier", verifier]];
      return { url: TOKEN_URL, method: "POST", contentType: "application/x-www-form-urlencoded", pairs, publicClient: true };
    },
  },
  {
    name: "confidential client, code, secret in the form",
    async make(server) {
      const url = await consent(server, codeRequest("web", { redirect_uri: OTHER_REDIRECT }));
      const pairs: Pairs = [["grant_type", "authorization_code"], ["client_id", "web"], ["client_secret", SECRETS.web], ["redirect_uri", OTHER_REDIRECT], ["code", url.searchParams.get("code")!]];
      return { url: TOKEN_URL, method: "POST", contentType: "application/x-www-form-urlencoded", pairs, publicClient: false };
    },
  },
  {
    name: "confidential client, code + PKCE, Basic",
    async make(server) {
      const { verifier, challenge } = await pkce();
      const url = await consent(server, codeRequest("web", { code_challenge: challenge, code_challenge_method: "S256" }));
      const pairs: Pairs = [["grant_type", "authorization_code"], ["redirect_uri", REDIRECT], ["code", url.searchParams.get("code")!], ["code_verifier", verifier]];
      return { url: TOKEN_URL, method: "POST", contentType: "application/x-www-form-urlencoded", pairs, basic: ["web", SECRETS.web], publicClient: false };
    },
  },
  {
    name: "public client, refresh",
    async make(server) {
      const { verifier, challenge } = await pkce();
      const url = await consent(server, codeRequest("spa", { scope: "write", code_challenge: challenge, code_challenge_method: "S256" }));
      const tokens = await exchange(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code: url.searchParams.get("code")!, code_verifier: verifier });
      const pairs: Pairs = [["grant_type", "refresh_token"], ["client_id", "spa"], ["refresh_token", tokens.refresh_token!]];
      return { url: `${ISSUER}/token`, method: "POST", contentType: "application/x-www-form-urlencoded", pairs, publicClient: true };
    },
  },
  {
    name: "confidential client, refresh, secret in the form",
    async make(server) {
      const url = await consent(server, codeRequest("web"));
      const tokens = await exchange(server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code: url.searchParams.get("code")! });
      const pairs: Pairs = [["grant_type", "refresh_token"], ["client_id", "web"], ["client_secret", SECRETS.web], ["refresh_token", tokens.refresh_token!]];
      return { url: TOKEN_URL, method: "POST", contentType: "application/x-www-form-urlencoded", pairs, publicClient: false };
    },
  },
  {
    name: "client_credentials, secret in the form",
    make: () => Promise.resolve({
      url: TOKEN_URL, method: "POST", contentType: "application/x-www-form-urlencoded", publicClient: false,
      pairs: [["grant_type", "client_credentials"], ["client_id", "backend"], ["client_secret", SECRETS.backend], ["scope", "export"]],
    }),
  },
  {
    name: "client_credentials with refresh, Basic",
    make: () => Promise.resolve({
      url: TOKEN_URL, method: "POST", contentType: "application/x-www-form-urlencoded", publicClient: false,
      pairs: [["grant_type", "client_credentials"], ["scope", "export"]], basic: ["backend-refresh", SECRETS.backendRefresh],
    }),
  },
];

/** One change to a valid request. `at` picks the field (modulo the number of fields). */
export type Mutation =
  | { kind: "drop" | "empty" | "repeat" | "truncate" | "upper"; at: number }
  | { kind: "repeat-other"; at: number; value: string }
  | { kind: "flip"; at: number; pos: number; char: string }
  | { kind: "append"; at: number; suffix: string }
  | { kind: "client"; id: string }
  | { kind: "content-type"; value: string; neutral: boolean }
  | { kind: "method"; value: string }
  | { kind: "in-query" }
  | { kind: "add-secret" | "add-basic" | "add-verifier" }
  | { kind: "unknown"; name: string; value: string }
  | { kind: "reorder"; seed: number }
  | { kind: "percent"; at: number }
  | { kind: "basic-instead" }
  | { kind: "clean-path" };

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constantFrom("drop" as const, "empty" as const, "repeat" as const, "truncate" as const, "upper" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("repeat-other" as const), at: fc.nat(), value: fc.oneof(fc.constantFrom("read", "spa", "x"), nasty) }),
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), pos: fc.nat(), char: fc.constantFrom("A", "z", "0", "-", "_", "~", ".", " ", "%", "é") }),
  fc.record({ kind: fc.constant("append" as const), at: fc.nat(), suffix: fc.constantFrom("x", " ", "=", "\0", "\n", "\t", "%", "é") }),
  fc.record({ kind: fc.constant("client" as const), id: fc.constantFrom("spa", "web", "other", "backend", "backend-refresh", "q", "nobody", "") }),
  fc.oneof(
    fc.record({ kind: fc.constant("content-type" as const), value: fc.constantFrom("application/x-www-form-urlencoded;charset=UTF-8", "Application/X-WWW-Form-Urlencoded", "application/x-www-form-urlencoded ; charset=utf-8"), neutral: fc.constant(true) }),
    fc.record({ kind: fc.constant("content-type" as const), value: fc.constantFrom("application/json", "text/plain", "multipart/form-data; boundary=b", "application/x-www-form-urlencodedx", ""), neutral: fc.constant(false) }),
  ),
  fc.record({ kind: fc.constant("method" as const), value: fc.constantFrom("GET", "PUT", "DELETE", "HEAD", "OPTIONS", "FOO") }),
  fc.constantFrom<Mutation>({ kind: "in-query" }, { kind: "add-secret" }, { kind: "add-basic" }, { kind: "add-verifier" }, { kind: "basic-instead" }, { kind: "clean-path" }),
  fc.record({ kind: fc.constant("unknown" as const), name: fc.constantFrom("foo", "resource", "nonce", "x-y", "audience"), value: fc.string({ minLength: 1, maxLength: 12 }) }),
  fc.record({ kind: fc.constant("reorder" as const), seed: fc.nat() }),
  fc.record({ kind: fc.constant("percent" as const), at: fc.nat() }),
);

/** Applies a mutation; `neutral` says whether the request must still succeed (true) or must fail (false). */
export function applyMutation(base: BaseRequest, m: Mutation): { request: Request; neutral: boolean; label: string } {
  const r: BaseRequest = { ...base, pairs: base.pairs.map(([k, v]) => [k, v]) };
  const at = "at" in m ? m.at % r.pairs.length : 0;
  const field = r.pairs[at]!;
  const label = `${m.kind}${"at" in m ? ` ${field[0]}` : ""} ${JSON.stringify(m)}`;
  let neutral = false;
  let encode: ((pairs: Pairs) => string) | undefined;
  switch (m.kind) {
    case "drop":
      r.pairs.splice(at, 1);
      break;
    case "empty":
      field[1] = "";
      break;
    case "repeat":
      r.pairs.push([field[0], field[1]]);
      break;
    case "repeat-other":
      r.pairs.push([field[0], m.value === field[1] ? m.value + "x" : m.value]);
      break;
    case "truncate":
      field[1] = field[1].slice(0, -1);
      break;
    case "upper": {
      const upper = field[1].toUpperCase();
      field[1] = upper === field[1] ? field[1].toLowerCase() : upper;
      if (field[1] === base.pairs[at]![1]) field[1] += "X";
      break;
    }
    case "flip": {
      const pos = m.pos % field[1].length;
      const char = field[1][pos] === m.char ? (m.char === "A" ? "B" : "A") : m.char;
      field[1] = field[1].slice(0, pos) + char + field[1].slice(pos + 1);
      break;
    }
    case "append":
      field[1] += m.suffix;
      break;
    case "client": {
      const current = r.basic?.[0] ?? r.pairs.find(([k]) => k === "client_id")?.[1];
      const id = m.id === current ? "nobody" : m.id;
      if (r.basic) r.basic = [id, r.basic[1]];
      else r.pairs = r.pairs.map(([k, v]) => [k, k === "client_id" ? id : v]);
      break;
    }
    case "content-type":
      r.contentType = m.value;
      neutral = m.neutral;
      break;
    case "method":
      r.method = m.value;
      break;
    case "in-query":
      r.url = `${r.url}${r.url.includes("?") ? "&" : "?"}${new URLSearchParams(r.pairs).toString()}`;
      r.pairs = [];
      break;
    case "add-secret":
      r.pairs.push(["client_secret", r.basic?.[1] ?? "some-secret-0123456789"]);
      break;
    case "add-basic": {
      const id = r.pairs.find(([k]) => k === "client_id")?.[1] ?? "web";
      const secret = r.pairs.find(([k]) => k === "client_secret")?.[1] ?? "";
      if (r.basic) r.pairs.push(["client_id", r.basic[0] + "2"]);
      else r.basic = [id, secret];
      break;
    }
    case "add-verifier": {
      const existing = r.pairs.find(([k]) => k === "code_verifier");
      // A code issued without a challenge refuses any verifier (RFC 9700 §2.1.1); another grant has no use for
      // one, and this server ignores unknown fields there, so the change is neutral unless a code is involved.
      if (existing) existing[1] = existing[1].slice(1) + "a";
      else r.pairs.push(["code_verifier", "a".repeat(43)]);
      neutral = !r.pairs.some(([k]) => k === "code");
      break;
    }
    case "unknown":
      r.pairs.splice(m.value.length % (r.pairs.length + 1), 0, [m.name, m.value]);
      neutral = true;
      break;
    case "reorder":
      r.pairs.sort((a, b) => hash(a[0] + m.seed) - hash(b[0] + m.seed));
      neutral = true;
      break;
    case "percent": {
      const escape = (s: string) => Array.from(new TextEncoder().encode(s), (b) => "%" + b.toString(16).toUpperCase().padStart(2, "0")).join("");
      encode = (pairs) => pairs.map(([k, v], i) => `${k}=${i === at ? escape(v) : encodeURIComponent(v)}`).join("&");
      neutral = true;
      break;
    }
    case "basic-instead": {
      const id = r.pairs.find(([k]) => k === "client_id");
      const secret = r.pairs.find(([k]) => k === "client_secret");
      if (id && secret) {
        r.basic = [id[1], secret[1]];
        r.pairs = r.pairs.filter(([k]) => k !== "client_id" && k !== "client_secret");
      }
      neutral = !base.publicClient;
      if (base.publicClient) r.basic = [id![1], ""];
      break;
    }
    case "clean-path":
      r.url = `${ISSUER}/token`;
      neutral = true;
      break;
  }
  return { request: toRequest(r, encode), neutral, label };
}

function hash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return h;
}

