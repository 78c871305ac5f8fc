/**
 * The hooks an integrator writes: end-user authentication at the authorization endpoint and the error hook.
 *
 * @module
 */
import type { AuditEvent } from "../audit.ts";

/** The logged-in end user, as the authentication hook reports them. */
export interface EndUser {
  /** Stable identifier: becomes the `sub` of introspection and of the resource guard. */
  id: string;
  /** Display name for the consent page. */
  name?: string;
  /** When the user signed in, in seconds since the epoch: `auth_time` of JWT access tokens (RFC 9068 §2.2.1). */
  auth_time?: number;
}

/** What the authentication hook is told besides the request. */
export interface InteractionContext {
  /** Form fields of a POST to the authorization endpoint (a login form posts back there), else null. */
  form: URLSearchParams | null;
  /** The client the user is asked to authorize. */
  client: { client_id: string; name: string };
  /** The requested scope. */
  scope: string;
  /**
   * The request's `prompt` values (OpenID Connect Core §3.1.2.1). With `login`, a hook that keeps sessions asks
   * for the password again; with `none`, whatever `Response` it returns becomes `login_required`.
   */
  prompt?: readonly ("none" | "login" | "consent")[];
  /**
   * The client's network address, when the runtime or adapter reports it (for throttling); behind a trusted
   * proxy (`trustProxy`), the address it forwarded.
   */
  remoteAddress: string | undefined;
  /** The server's issuer: a hook builds absolute URLs from it, never from the request's `Host`. */
  issuer?: string;
  /** Reports an audit event (sign-in succeeded, failed or throttled) to the server's `onEvent`. */
  audit?: (event: Omit<AuditEvent, "time" | "address">) => void;
}

/**
 * Authenticates the end user at the authorization endpoint. Returns the user, or a `Response` to send
 * instead, such as a login page or the redirect that follows a successful login.
 */
export type AuthenticateUser = (
  request: Request,
  context: InteractionContext,
) => EndUser | Response | Promise<EndUser | Response>;

/** Where an error happened, for the `onError` option. */
export interface ErrorContext {
  /** The endpoint: `authorize`, `token`, `revoke`, `introspect`, `metadata`, `resource`, or a feature's. */
  endpoint: string;
  /** The request method, e.g. `POST`. */
  method: string;
  /** The request path, without the query (which may hold a code or state). */
  path: string;
}

/** The error hook: each unexpected failure and each error response's cause. Never sent to the client. */
export type ErrorHook = (error: unknown, context: ErrorContext) => void;
