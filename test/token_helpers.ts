/**
 * Small helpers for the token-endpoint tests (endpoints/token.test.ts, client_auth/authenticate.test.ts). Everything goes through
 * `server.fetch`; PKCE and Basic encoding are computed here independently of lib/, so a bug there cannot hide
 * itself by being used on both sides.
 */
import { expect } from "vitest";
import type { AuthorizationServer } from "../mod.ts";
import { bearer, codeRequest, consent, postToken, TOKEN_URL } from "./helpers.ts";

/** An expected error response: status, `error` code, and whether a `WWW-Authenticate: Basic` challenge is due. */
export interface Failure {
  status: number;
  error: string;
  /** true: a Basic challenge is required (RFC 6749 §5.2); false: no challenge at all. */
  basic: boolean;
}

/** A failure expectation. */
export function failure(status: number, error: string, basic = false): Failure {
  return { status, error, basic };
}

/** What a successful token response must say. */
export interface TokenExpectation {
  client_id: string;
  scope: string;
  /** Whether a refresh_token must be present (true) or absent (false). */
  refresh: boolean;
  /** Default 3600 (the server's default access-token lifetime). */
  expires_in?: number;
}

/** The parsed body of a token response. */
export interface TokenBody {
  access_token: string;
  token_type: string;
  expires_in: number;
  refresh_token?: string;
  scope: string;
}

/** A 256-bit value as base64url: the shape of every token, code and secret this server mints. */
export const TOKEN_SHAPE: RegExp = /^[A-Za-z0-9_-]{43}$/;

/** Every token-endpoint response, success or error, must forbid caching (RFC 6749 §5.1, §5.2). */
export function expectNoStore(response: Response, label = ""): void {
  expect(
    { cacheControl: response.headers.get("cache-control"), pragma: response.headers.get("pragma") },
    `${label} caching headers`,
  ).toEqual({ cacheControl: "no-store", pragma: "no-cache" });
}

/** POSTs a form to the token endpoint (postToken from helpers.ts) and checks the no-store headers. */
export async function token(
  server: AuthorizationServer,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  const response = await postToken(server, fields, headers);
  expectNoStore(response, `POST token ${JSON.stringify(Object.keys(fields))}`);
  return response;
}

/** A token-endpoint request with a raw body and full control over headers and method. */
export function rawToken(
  server: AuthorizationServer,
  init: { method?: string; body?: string | Uint8Array<ArrayBuffer> | null; headers?: Record<string, string> },
): Promise<Response> {
  return server.fetch(new Request(TOKEN_URL, {
    method: init.method ?? "POST",
    headers: init.headers ?? {},
    body: init.body ?? null,
  }));
}

/**
 * Asserts a successful token response with exactly the members of spec §2 "Token response", and that its
 * access token really works at the resource guard. Returns the body.
 */
export async function expectTokens(
  server: AuthorizationServer,
  response: Response,
  expected: TokenExpectation,
  label = "",
): Promise<TokenBody> {
  const text = await response.text();
  expect({ status: response.status, body: text }, `${label} status`).toMatchObject({ status: 200 });
  expectNoStore(response, label);
  expect(response.headers.get("content-type"), `${label} content-type`).toMatch(/^application\/json\b/i);
  const body = JSON.parse(text) as Record<string, unknown>;
  const keys = ["access_token", "expires_in", "scope", "token_type", ...(expected.refresh ? ["refresh_token"] : [])];
  expect(Object.keys(body).sort(), `${label} members`).toEqual(keys.sort());
  expect(body.token_type, `${label} token_type`).toBe("Bearer");
  expect(Number.isInteger(body.expires_in), `${label} expires_in is an integer`).toBe(true);
  expect(body.expires_in, `${label} expires_in`).toBe(expected.expires_in ?? 3600);
  expect(body.access_token, `${label} access_token`).toMatch(TOKEN_SHAPE);
  if (expected.refresh) {
    expect(body.refresh_token, `${label} refresh_token`).toMatch(TOKEN_SHAPE);
    expect(body.refresh_token).not.toBe(body.access_token);
  }
  expect(body.scope, `${label} scope`).toBe(expected.scope);
  const info = await bearer(server, body.access_token as string);
  expect({ client_id: info.client_id, scope: info.scope }, `${label} token at the resource guard`)
    .toEqual({ client_id: expected.client_id, scope: expected.scope });
  return body as unknown as TokenBody;
}

/** Asserts an RFC 6749 §5.2 error response. Returns the body text, for checks on what it must not contain. */
export async function expectError(response: Response, expected: Failure, label = ""): Promise<string> {
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // left empty: the comparison below then shows the raw text
  }
  const challenge = response.headers.get("www-authenticate");
  expect(
    { status: response.status, error: body.error, basicChallenge: challenge !== null && /^Basic realm="[^"]*"/i.test(challenge) },
    `${label} error response (body: ${text}; WWW-Authenticate: ${challenge})`,
  ).toEqual({ status: expected.status, error: expected.error, basicChallenge: expected.basic });
  if (!expected.basic && expected.status !== 401) expect(challenge, `${label} no challenge on a ${expected.status}`).toBeNull();
  expectNoStore(response, label);
  expect(response.headers.get("content-type"), `${label} content-type`).toMatch(/^application\/json\b/i);
  for (const key of Object.keys(body)) expect(["error", "error_description", "error_uri"]).toContain(key);
  return text;
}

/** Base64url without padding, computed here rather than with lib/crypto.ts. */
export function b64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** BASE64URL(SHA256(verifier)) (RFC 7636 §4.2). */
export async function s256(verifier: string): Promise<string> {
  return b64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
}

/** Authorizes `spa` with the challenge of a chosen verifier; returns the code. */
export async function spaCodeFor(server: AuthorizationServer, verifier: string, scope = "read"): Promise<string> {
  const url = await consent(server, codeRequest("spa", { scope, code_challenge: await s256(verifier), code_challenge_method: "S256" }));
  const code = url.searchParams.get("code");
  if (code === null) throw new Error(`no code in ${url.href}`);
  return code;
}

/** application/x-www-form-urlencoded encoding of one value (space as `+`), as RFC 6749 §2.3.1 / Appendix B asks. */
export function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

/** An `Authorization: Basic` header value per RFC 6749 §2.3.1: form-urlencode id and secret, then base64. */
export function basic(clientId: string, secret: string): string {
  return `Basic ${btoa(`${formEncode(clientId)}:${formEncode(secret)}`)}`;
}
