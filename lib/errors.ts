/**
 * The one error type of the server. Endpoints throw it; only the router renders it (JSON for the token,
 * revocation and introspection endpoints, a redirect or an HTML page at the authorization endpoint, a
 * `WWW-Authenticate` challenge at a resource API).
 *
 * @module
 */

/**
 * Every error code the server can send, with the HTTP status it is sent with by default.
 * RFC 6749 §4.1.2.1 and §5.2, RFC 6750 §3.1, RFC 7009 §2.2.1, RFC 8707 §2, RFC 7591 §3.2.2, OpenID Connect Core §3.1.2.6,
 * RFC 9449 §5 and §8, RFC 8628 §3.5.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  invalid_scope: 400,
  unsupported_response_type: 400,
  unsupported_token_type: 400,
  /** RFC 8707 §2: a `resource` that is malformed, unknown, or wider than the grant. */
  invalid_target: 400,
  /** RFC 7591 §3.2.2: a registration whose redirect URIs are refused. */
  invalid_redirect_uri: 400,
  /** RFC 7591 §3.2.2: a registration whose other metadata is refused. */
  invalid_client_metadata: 400,
  access_denied: 403,
  /** OpenID Connect Core §3.1.2.6: `prompt=none`, and the user would have to sign in (sent by redirect). */
  login_required: 400,
  /** OpenID Connect Core §3.1.2.6: `prompt=none`, and the user would have to consent (sent by redirect). */
  consent_required: 400,
  /** RFC 9449 §5, §7.1: a DPoP proof that fails a check of §4.3 (401 at a resource). */
  invalid_dpop_proof: 400,
  /** RFC 9449 §8: the proof must carry the nonce sent in `DPoP-Nonce` (401 at a resource). */
  use_dpop_nonce: 400,
  invalid_token: 401,
  insufficient_scope: 403,
  /** Too many failed attempts; sent with 429 and `Retry-After`. RFC 8628 §3.5: a device polling too fast (400). */
  slow_down: 429,
  /** RFC 8628 §3.5: the user has not approved or denied the device yet. */
  authorization_pending: 400,
  /** RFC 8628 §3.5: the device code has expired. */
  expired_token: 400,
  server_error: 500,
  temporarily_unavailable: 503,
} as const;

/** An OAuth error code (the `error` member of an error response). */
export type OAuthErrorCode = keyof typeof ERROR_STATUS;

/** Options of {@link OAuthError}. */
export interface OAuthErrorOptions {
  /** Human-readable `error_description`: short, generic, never a secret. */
  description?: string;
  /** HTTP status; the code's default when left out. */
  status?: number;
  /** Extra response headers, such as `WWW-Authenticate`, `Allow` or `Retry-After`. */
  headers?: Record<string, string>;
  /** The underlying failure, passed to `onError` but never sent. */
  cause?: unknown;
  /**
   * At the authorization endpoint: the verified redirect URI (and state) to send this error to
   * (RFC 6749 §4.1.2.1). Without it the error is shown as a page and the browser stays here.
   */
  redirect?: { uri: string; state?: string | undefined };
}

/**
 * An OAuth protocol error.
 *
 * @example
 * ```ts
 * throw new OAuthError("invalid_grant", { description: "The authorization code has expired" });
 * ```
 */
export class OAuthError extends Error {
  /** The wire error code. */
  readonly code: OAuthErrorCode;
  /** The HTTP status of the response. */
  readonly status: number;
  /** Extra headers of the response. */
  readonly headers: Record<string, string>;
  /** The `error_description`, if any. */
  readonly description: string | undefined;
  /** Where the authorization endpoint sends this error, if anywhere. */
  readonly redirect: { uri: string; state?: string | undefined } | undefined;

  /** An error with an RFC 6749/6750 `code`; the options set its description, status, headers and redirect. */
  constructor(code: OAuthErrorCode, options: OAuthErrorOptions = {}) {
    super(options.description ? `${code}: ${options.description}` : code, { cause: options.cause });
    this.name = "OAuthError";
    this.code = code;
    this.status = options.status ?? ERROR_STATUS[code];
    this.headers = options.headers ?? {};
    this.description = options.description;
    this.redirect = options.redirect;
  }
}

/** Thrown by {@link createAuthorizationServer} and the registration API for a bad configuration. */
export class ConfigurationError extends Error {
  /** The path of the option at fault (`registration.initialAccessToken`), when one option is. */
  readonly option: string | undefined;
  /** A configuration problem, in a sentence that names the option and the value. */
  constructor(message: string, option?: string) {
    super(message);
    this.name = "ConfigurationError";
    this.option = option;
  }
}

/** Calls an error hook; a hook that throws must not turn a clean answer into a crash or a rejection. */
export function report<A extends unknown[]>(hook: (...args: A) => void, ...args: A): void {
  try {
    hook(...args);
  } catch {
    // Nothing left to tell.
  }
}
