/**
 * Client authentication methods (RFC 6749 §2.3; RFC 7591 §2 `token_endpoint_auth_method`): one table from the
 * method's wire name to the module that reads and verifies its credentials. The metadata's
 * `*_auth_methods_supported` list its keys (and the methods of enabled features); `authenticate.ts` runs them.
 * Adding a method is one module and one line here.
 *
 * @module
 */
import type { ClientAuthMethod } from "../core/client_auth.ts";
import { clientSecretBasic } from "./client_secret_basic.ts";
import { clientSecretPost } from "./client_secret_post.ts";
import { none } from "./none.ts";
import { privateKeyJwt } from "./private_key_jwt.ts";

/**
 * The methods, in the order a request is read: the header first, then the form; a client assertion before
 * `none`, whose bare `client_id` may sit beside it.
 */
export const CLIENT_AUTH_METHODS: Readonly<Record<string, ClientAuthMethod>> = Object.freeze({
  client_secret_basic: clientSecretBasic,
  client_secret_post: clientSecretPost,
  private_key_jwt: privateKeyJwt,
  none,
});
