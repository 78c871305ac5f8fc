/**
 * Client authentication at the token, revocation and introspection endpoints (RFC 6749 §2.3, §3.2.1).
 *
 * @module
 */
import { audit, clientAddressOf } from "../audit.ts";
import { timingSafeEqual } from "../crypto.ts";
import { sha256 } from "../sha256.ts";
import { OAuthError } from "../errors.ts";
import type { Incoming } from "../http.ts";
import type { ServerContext } from "../options.ts";
import type { ClientRecord } from "../storage/types.ts";
import type { PresentedCredentials } from "./client_secret_basic.ts";
import { CLIENT_AUTH_METHOD_NAMES, CLIENT_AUTH_METHODS } from "./registry.ts";
import { throttleIdle, throttleKey } from "../throttle.ts";

/** The authenticated client and how it authenticated. */
export interface AuthenticatedClient {
  client: ClientRecord;
  method: PresentedCredentials["method"];
}

/** `invalid_client`, with the Basic challenge that RFC 6749 §5.2 and RFC 9110 §15.5.2 call for. */
export function clientAuthFailed(description: string, context: ServerContext): OAuthError {
  return new OAuthError("invalid_client", {
    description,
    headers: { "www-authenticate": `Basic realm="${context.issuer}", charset="UTF-8"` },
  });
}

/**
 * Authenticates the client of a request, or throws `invalid_client` (401 with a Basic challenge: RFC 6749 §5.2
 * requires it when Basic was used, and RFC 9110 requires a challenge on every 401) or `invalid_request`.
 */
export async function authenticateClient(
  incoming: Incoming,
  form: Map<string, string>,
  context: ServerContext,
): Promise<AuthenticatedClient> {
  let presented: PresentedCredentials | null = null;
  for (const name of CLIENT_AUTH_METHOD_NAMES) {
    let found: PresentedCredentials | null;
    try {
      found = CLIENT_AUTH_METHODS[name].read(incoming.request, form);
    } catch (error) {
      // Stryker disable next-line ConditionalExpression: every reader throws only invalid_client (ClientAuthMethod.read); the test keeps any other error as it is
      throw (error as OAuthError).code === "invalid_client"
        ? clientAuthFailed("The Authorization header is malformed", context)
        : error;
    }
    if (found === null) continue;
    if (presented === null) {
      presented = found;
    } else if (found.client_secret !== undefined) {
      // RFC 6749 §2.3: a client MUST NOT use more than one authentication method in each request.
      throw new OAuthError("invalid_request", { description: "Use one client authentication method, not two" });
    } else if (found.client_id !== presented.client_id) {
      throw new OAuthError("invalid_request", { description: "client_id differs from the Authorization header" });
    }
  }
  if (presented === null || presented.client_id === "") {
    throw new OAuthError("invalid_request", { description: "The client_id parameter is required" });
  }

  const { throttle } = context;
  // The keys are hashed only when the throttle may hold a failure: an idle one answers 0 for every key.
  let keys: string[] | undefined;
  if (throttle && !throttleIdle(throttle)) {
    const address = clientAddressOf(incoming, context);
    keys = throttleKeys(presented.client_id, address);
    // Sequential, as a shared store may want; an in-memory throttle answers at once, so nothing is awaited.
    const now = context.clock();
    let wait = 0;
    for (const key of keys) {
      const result = throttle.retryAfter(key, now);
      // Stryker disable next-line ConditionalExpression,StringLiteral: awaiting a number yields the number; the test only saves a microtask
      wait = Math.max(wait, typeof result === "number" ? result : await result);
    }
    if (wait > 0) {
      audit(context, incoming, { type: "request.throttled", client_id: presented.client_id.slice(0, 255), reason: "client_auth" }, address);
      throw new OAuthError("slow_down", {
        description: "Too many failed client authentications; try again later",
        headers: { "retry-after": String(Math.ceil(wait / 1000)) },
      });
    }
  }
  const client = await context.storage.getClient(presented.client_id);
  if (!verify(client, presented) || !client) {
    if (throttle) {
      keys ??= throttleKeys(presented.client_id, clientAddressOf(incoming, context));
      const now = context.clock();
      for (const key of keys) await throttle.fail(key, now);
    }
    throw clientAuthFailed("Client authentication failed", context);
  }
  // A public client authenticates only with the method "none" (see verify).
  return { client, method: presented.method };
}

/** Whether the presented credentials authenticate the client. */
function verify(client: ClientRecord | null, presented: PresentedCredentials): boolean {
  if (!client || !client.active) {
    // Hash anyway, so an unknown client_id costs the same time as a wrong secret.
    if (presented.client_secret !== undefined) sha256(presented.client_secret);
    return false;
  }
  if (client.type === "public") return presented.method === "none";
  if (presented.client_secret === undefined || client.secret_hash === undefined) return false;
  return timingSafeEqual(sha256(presented.client_secret), client.secret_hash);
}

/** Stands for every unknown address in a client's key: without an address, failures count per client_id alone. */
// Stryker disable next-line StringLiteral: any constant does; a throttle never reads a key's text
const NO_ADDRESS = "unknown";

/** Hashed, so a client_id of any length costs the throttle the same few bytes (finding 5 of issue 15). */
function throttleKeys(clientId: string, address: string | undefined): string[] {
  return address === undefined
    ? [throttleKey("client", clientId, NO_ADDRESS)]
    : [throttleKey("addr", address), throttleKey("client", clientId, address)];
}
