/**
 * Client authentication methods (RFC 6749 §2.3; RFC 7591 §2 `token_endpoint_auth_method`): one table from the
 * method's wire name to how its credentials are read. The metadata's `*_auth_methods_supported` and the
 * registration endpoint's accepted methods are its keys; `authenticateClient` reads credentials through it.
 *
 * @module
 */
import { type PresentedCredentials, readBasic } from "./client_secret_basic.ts";
import { readNone, readPost } from "./client_secret_post.ts";

/** A client authentication method. */
export interface ClientAuthMethod {
  /** It proves a secret, so a confidential client may use it (and introspection accepts it). */
  readonly confidential: boolean;
  /**
   * The credentials the request carries in this method's way, or null when it does not use it; throws
   * `OAuthError` (`invalid_client`) for malformed ones.
   */
  read(request: Request, form: Map<string, string>): PresentedCredentials | null;
}

/** The methods, in the order a request is read: the header first, then the form. */
export const CLIENT_AUTH_METHODS: Readonly<Record<PresentedCredentials["method"], ClientAuthMethod>> = Object.freeze({
  client_secret_basic: { confidential: true, read: (request) => readBasic(request.headers.get("authorization")) },
  client_secret_post: { confidential: true, read: (_, form) => readPost(form) },
  none: { confidential: false, read: (_, form) => readNone(form) },
});

/** Every method's wire name (`token_endpoint_auth_methods_supported`). */
export const CLIENT_AUTH_METHOD_NAMES: readonly PresentedCredentials["method"][] = Object.freeze(
  Object.keys(CLIENT_AUTH_METHODS) as PresentedCredentials["method"][],
);

/** The methods that prove a secret (`introspection_endpoint_auth_methods_supported`). */
export const SECRET_AUTH_METHOD_NAMES: readonly PresentedCredentials["method"][] = Object.freeze(
  CLIENT_AUTH_METHOD_NAMES.filter((name) => CLIENT_AUTH_METHODS[name].confidential),
);
