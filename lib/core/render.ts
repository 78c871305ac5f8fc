/**
 * The one place that turns errors into responses: a redirect back to the client (RFC 6749 §4.1.2.1, with `iss`
 * per RFC 9207), an HTML page where a browser must not be sent on, RFC 6749 §5.2 JSON at the other endpoints,
 * and an RFC 6750 §3 challenge at a protected resource. Anything that is not an `OAuthError` is reported to
 * `onError` and becomes a generic `server_error`: never a message or stack trace.
 *
 * @module
 */
import { errorPage } from "../consent/pages.ts";
import { OAuthError, report } from "../errors.ts";
import { jsonResponse, pathOf, redirectResponse, type ResponseParts } from "../http.ts";
import type { ErrorHook } from "./hooks.ts";

/** Where an error is rendered: the endpoint's name, and whether a browser is looking at it. */
export interface RenderTarget {
  readonly name: string;
  readonly page: boolean;
}

/** The request the error answers. */
export interface RenderRequest {
  readonly request: Request;
  readonly target: string;
}

/**
 * The `OAuthError` to answer with: the error itself, or for anything else a generic `server_error`. Reports the
 * failure (or the error's cause, or any 5xx) to `onError`.
 */
export function toOAuthError(error: unknown, onError: ErrorHook, where: { endpoint: string; method: string; path: string }): OAuthError {
  if (error instanceof OAuthError) {
    if (error.cause !== undefined || error.status >= 500) report(onError, error, where);
    return error;
  }
  report(onError, error, where);
  // Never the exception's message or stack: they may hold internals or secrets.
  return new OAuthError("server_error", { description: "The server could not complete the request" });
}

/** Renders any error thrown by an endpoint: a redirect, an HTML page or RFC 6749 §5.2 JSON. */
export function renderError(
  error: unknown,
  endpoint: RenderTarget,
  incoming: RenderRequest,
  core: { readonly onError: ErrorHook; readonly issuer: string },
): ResponseParts {
  const where = { endpoint: endpoint.name, method: incoming.request.method, path: pathOf(incoming.target) };
  const oauth = toOAuthError(error, core.onError, where);
  if (oauth.redirect) {
    const location = authorizationRedirect(oauth.redirect.uri, {
      error: oauth.code,
      error_description: oauth.description,
      state: oauth.redirect.state,
    }, core.issuer);
    return redirectResponse(location, incoming.request.method === "POST" ? 303 : 302);
  }
  if (endpoint.page) {
    const page = errorPage(oauth.status, PAGE_TITLES[oauth.code] ?? "Request refused", oauth.description ?? oauth.code);
    for (const name in oauth.headers) page.headers.push([name, oauth.headers[name]!]);
    return page;
  }
  return errorJson(oauth);
}

/** RFC 6749 §5.2 JSON for an `OAuthError`, with its status and headers. */
export function errorJson(error: OAuthError): ResponseParts {
  const body: Record<string, string> = { error: error.code };
  if (error.description !== undefined) body.error_description = error.description;
  return jsonResponse(error.status, body, error.headers);
}

/**
 * A protected resource's refusal (RFC 6750 §3): the error's status and `WWW-Authenticate` challenge, JSON, not
 * cacheable, and readable by browser-based clients, which must see the challenge to find the metadata.
 */
export function challengeJson(error: OAuthError): ResponseParts {
  const parts = errorJson(error);
  parts.headers.push(
    ["access-control-allow-origin", "*"],
    ["access-control-expose-headers", "WWW-Authenticate"],
  );
  return parts;
}

/** Builds the client redirect for a success or an error (RFC 6749 §4.1.2; `iss` from RFC 9207 §2). */
export function authorizationRedirect(
  redirectUri: string,
  params: Record<string, string | undefined>,
  issuer: string,
): string {
  const url = new URL(redirectUri);
  for (const name in params) {
    const value = params[name];
    if (value !== undefined) url.searchParams.set(name, value);
  }
  url.searchParams.set("iss", issuer);
  return url.href;
}

const PAGE_TITLES: Partial<Record<string, string>> = {
  invalid_request: "This sign-in link is not valid",
  access_denied: "Request refused",
  server_error: "Something went wrong",
  temporarily_unavailable: "Please try again shortly",
};
