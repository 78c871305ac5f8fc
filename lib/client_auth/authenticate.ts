/**
 * Client authentication at the token, revocation and introspection endpoints (RFC 6749 §2.3, §3.2.1): finds
 * the one method the request uses, throttles failures per address and client, and lets that method verify.
 *
 * @module
 */
import type { PresentedCredentials } from "../core/client_auth.ts";
import type { Exchange } from "../core/exchange.ts";
import type { View } from "../core/view.ts";
import { OAuthError } from "../errors.ts";
import type { ClientRecord } from "../storage/types.ts";
import { throttleIdle, throttleKey } from "../throttle.ts";

/** The authenticated client and the method it used. */
export interface AuthenticatedClient {
  client: ClientRecord;
  method: string;
}

/** The core fields client authentication reads; an endpoint that authenticates clients declares them. */
export const AUTHENTICATION_READS = ["clientAuth", "storage", "throttle", "clock", "issuer"] as const;

/** The view client authentication needs. */
export type AuthenticationView = View<(typeof AUTHENTICATION_READS)[number], readonly []>;

/** `invalid_client`, with the Basic challenge that RFC 6749 §5.2 and RFC 9110 §15.5.2 call for. */
export function clientAuthFailed(description: string, issuer: string): OAuthError {
  return new OAuthError("invalid_client", {
    description,
    headers: { "www-authenticate": `Basic realm="${issuer}", charset="UTF-8"` },
  });
}

/**
 * Authenticates the client of a request, or throws `invalid_client` (401 with a Basic challenge: RFC 6749 §5.2
 * requires it when Basic was used, and RFC 9110 requires a challenge on every 401) or `invalid_request`.
 */
export async function authenticateClient(
  exchange: Exchange,
  form: Map<string, string>,
  view: AuthenticationView,
): Promise<AuthenticatedClient> {
  let presented: PresentedCredentials | null = null;
  for (const method of view.clientAuth.values()) {
    let found: PresentedCredentials | null;
    try {
      found = method.read(exchange, form);
    } catch (error) {
      throw error instanceof OAuthError && error.code === "invalid_client" ? clientAuthFailed(error.description ?? "Client authentication failed", view.issuer) : error;
    }
    if (found === null) continue;
    if (presented === null) {
      presented = found;
    } else if (found.proof) {
      // RFC 6749 §2.3: a client MUST NOT use more than one authentication method in each request.
      throw new OAuthError("invalid_request", { description: "Use one client authentication method, not two" });
    } else if (found.client_id !== presented.client_id) {
      throw new OAuthError("invalid_request", { description: "client_id differs from the Authorization header" });
    }
  }
  if (presented === null || presented.client_id === "") {
    throw new OAuthError("invalid_request", { description: "The client_id parameter is required" });
  }

  const { throttle } = view;
  // The keys are hashed only when the throttle may hold a failure: an idle one answers 0 for every key.
  let keys: string[] | undefined;
  if (throttle && !throttleIdle(throttle)) {
    keys = throttleKeys(presented.client_id, exchange.address);
    // Sequential, as a shared store may want; an in-memory throttle answers at once, so nothing is awaited.
    const now = view.clock();
    let wait = 0;
    for (const key of keys) {
      const result = throttle.retryAfter(key, now);
      wait = Math.max(wait, typeof result === "number" ? result : await result);
    }
    if (wait > 0) {
      exchange.emit({ type: "request.throttled", client_id: presented.client_id.slice(0, 255), reason: "client_auth" });
      throw new OAuthError("slow_down", {
        description: "Too many failed client authentications; try again later",
        headers: { "retry-after": String(Math.ceil(wait / 1000)) },
      });
    }
  }
  const stored = await view.storage.getClient(presented.client_id);
  const client = stored !== null && stored.active ? stored : null;
  const method = view.clientAuth.get(presented.method)!;
  if (!(await method.verify(presented, client, exchange)) || client === null) {
    if (throttle) {
      keys ??= throttleKeys(presented.client_id, exchange.address);
      const now = view.clock();
      for (const key of keys) await throttle.fail(key, now);
    }
    throw clientAuthFailed("Client authentication failed", view.issuer);
  }
  return { client, method: presented.method };
}

/** Stands for every unknown address in a client's key: without an address, failures count per client_id alone. */
const NO_ADDRESS = "unknown";

/** Hashed, so a client_id of any length costs the throttle the same few bytes. */
function throttleKeys(clientId: string, address: string | undefined): string[] {
  return address === undefined
    ? [throttleKey("client", clientId, NO_ADDRESS)]
    : [throttleKey("addr", address), throttleKey("client", clientId, address)];
}
