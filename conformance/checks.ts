/**
 * Assertions shared by the cases: a token response, a token endpoint error (RFC 6749 §5.1, §5.2), and an
 * authorization error redirect (RFC 6749 §4.1.2.1). Each fails the case with the reply as evidence.
 *
 * @module
 */
import type { AuthzOutcome, CaseContext } from "./context.ts";
import type { Reply } from "./http.ts";

/** A successful token response, as far as every case needs it. */
export interface Tokens {
  /** The access token (RFC 6749 §5.1). */
  access_token: string;
  /** As the server sent it; `Bearer` is checked elsewhere. */
  token_type: string;
  /** The refresh token, when one was issued. */
  refresh_token?: string;
  /** The granted scope, when the server sent one. */
  scope?: string;
  /** The whole JSON body. */
  body: Record<string, unknown>;
  /** The reply it came in, as evidence. */
  reply: Reply;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A short description of a reply: its status and, for an OAuth error, the error code. */
export function summary(reply: Reply): string {
  const error = isObj(reply.json) && typeof reply.json.error === "string" ? ` error=${reply.json.error}` : "";
  return `${reply.status}${error}`;
}

/** Expects a token response (200, JSON, access_token, token_type Bearer). */
export function expectTokens(ctx: CaseContext, reply: Reply, what: string): Tokens {
  const body = isObj(reply.json) ? reply.json : {};
  const access = body.access_token;
  if (reply.status !== 200 || typeof access !== "string" || access === "") {
    return ctx.fail(`${what}: expected a token response (200 with an access_token), got ${summary(reply)}`, reply);
  }
  // RFC 6749 §5.1 and RFC 6750 §4: the token type value is case-insensitive.
  ctx.check(
    typeof body.token_type === "string" && body.token_type.toLowerCase() === "bearer",
    `${what}: token_type must be "Bearer", got ${JSON.stringify(body.token_type)}`,
    reply,
  );
  const tokens: Tokens = { access_token: access, token_type: String(body.token_type), body, reply };
  if (typeof body.refresh_token === "string") tokens.refresh_token = body.refresh_token;
  if (typeof body.scope === "string") tokens.scope = body.scope;
  return tokens;
}

/**
 * Expects a token endpoint error with one of `codes`: 400 (or, for invalid_client, 400 or 401 with
 * WWW-Authenticate), a JSON body with `error`, and no token. Returns the error code.
 */
export function expectError(ctx: CaseContext, reply: Reply, codes: readonly string[], what: string): string {
  const body = reply.json;
  const expected = codes.join(" or ");
  if (reply.status >= 200 && reply.status < 300) {
    ctx.fail(`${what}: expected ${expected}, but the request succeeded (${reply.status})`, reply);
  }
  if (!isObj(body) || typeof body.error !== "string") {
    ctx.fail(`${what}: expected a JSON error body with "error" = ${expected} (RFC 6749 §5.2), got status ${reply.status}`, reply);
  }
  // The request was refused: what remains wrong is wording (error code, status), ranked below real failures.
  const refused = reply.status >= 400 && reply.status < 500;
  if (!codes.includes(body.error)) ctx.fail(`${what}: expected error ${expected}, got ${body.error}`, reply, refused);
  const statuses = body.error === "invalid_client" ? [400, 401] : [400];
  if (!statuses.includes(reply.status)) {
    ctx.fail(`${what}: error ${body.error} must be sent with status ${statuses.join(" or ")} (RFC 6749 §5.2), got ${reply.status}`, reply, refused);
  }
  // RFC 6749 §5.2 and RFC 9110 §15.5.2: a 401 carries a challenge.
  if (reply.status === 401 && !reply.headers.has("www-authenticate")) {
    ctx.fail(`${what}: a 401 response must carry WWW-Authenticate (RFC 6749 §5.2, RFC 9110 §15.5.2)`, reply, true);
  }
  return body.error;
}

/**
 * Expects an authorization error delivered by redirect to the redirect_uri, with one of `codes` and the
 * request's state (RFC 6749 §4.1.2.1). Returns the redirect.
 */
export function expectRedirectError(
  ctx: CaseContext,
  outcome: AuthzOutcome,
  codes: readonly string[],
  state: string | undefined,
  what: string,
): URL {
  const expected = codes.join(" or ");
  if (outcome.kind !== "redirect") {
    ctx.fail(`${what}: expected a redirect to the redirect_uri with error=${expected} (RFC 6749 §4.1.2.1), but there was none: ${outcome.message}`, outcome.exchanges.slice(-2));
  }
  const url = outcome.url;
  // An unknown response_type leaves the response mode open, so a fragment is accepted too.
  const params = url.searchParams.has("error") ? url.searchParams : new URLSearchParams(url.hash.slice(1));
  const evidence = outcome.exchanges.slice(-1);
  ctx.check(!params.has("code"), `${what}: expected error=${expected}, but an authorization code was issued`, evidence);
  const error = params.get("error");
  if (error === null) return ctx.fail(`${what}: expected error=${expected} in the redirect, got ${url.href}`, evidence);
  if (!codes.includes(error)) ctx.fail(`${what}: expected error=${expected}, got error=${error}`, evidence, true);
  if (state !== undefined) {
    ctx.check(
      params.get("state") === state,
      `${what}: the error redirect must return state unchanged (RFC 6749 §4.1.2.1): sent ${JSON.stringify(state)}, got ${JSON.stringify(params.get("state"))}`,
      evidence,
    );
  }
  return url;
}

/** Whether a Cache-Control header has the no-store directive. */
export function hasNoStore(headers: Headers): boolean {
  const value = headers.get("cache-control") ?? "";
  return value.split(",").some((d) => d.trim().toLowerCase() === "no-store");
}
