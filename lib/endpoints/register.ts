/**
 * The registration endpoint (RFC 7591 §3): `POST {issuer}/register` with JSON metadata; 201 with the client.
 *
 * @module
 */
import { audit, clientAddressOf } from "../audit.ts";
import { OAuthError } from "../errors.ts";
import { jsonResponse, readText, type ResponseParts, type Incoming } from "../http.ts";
import type { ServerContext } from "../options.ts";
import { buildRegisteredClient, checkInitialAccessToken, removeUnusedClients } from "../registration.ts";

const REAP_INTERVAL_MS = 3600_000;
const lastReap = new WeakMap<object, number>();

/** Registers a client; only reached when registration is enabled. */
export async function registerEndpoint(incoming: Incoming, context: ServerContext): Promise<ResponseParts> {
  const { request } = incoming;
  const registration = context.registration!;
  checkInitialAccessToken(request.headers.get("authorization"), registration.initialAccessToken);
  const now = context.clock();
  // Behind a trusted proxy, the address it forwarded (trustProxy); else the peer.
  // Stryker disable next-line StringLiteral: any constant names the one shared key of peers with no address (equivalent)
  const unknown = "unknown";
  const key = `register:${clientAddressOf(incoming, context) ?? unknown}`;
  const wait = await registration.throttle.retryAfter(key, now);
  if (wait > 0) {
    throw new OAuthError("slow_down", {
      description: "Too many registrations from this address; try again later",
      headers: { "retry-after": String(Math.ceil(wait / 1000)) },
    });
  }
  const contentType = request.headers.get("content-type");
  // Stryker disable next-line StringLiteral: without a Content-Type any fallback that is not JSON's media type is refused alike (equivalent)
  if (!/^application\/json\s*(?:;|$)/i.test(contentType ?? "")) {
    throw new OAuthError("invalid_client_metadata", { description: "The body must be application/json" });
  }
  let body: unknown;
  try {
    body = JSON.parse(await readText(request, context.maxBodyBytes, context.bodyTimeout));
  } catch (error) {
    if (error instanceof OAuthError) throw error;
    throw new OAuthError("invalid_client_metadata", { description: "The body is not valid JSON" });
  }
  const { client, response } = buildRegisteredClient(body, context);
  await registration.throttle.fail(key, now);
  await context.storage.saveClient(client);
  audit(context, incoming, { type: "client.registered", client_id: client.client_id, reason: "registration" });
  await reapUnused(context, now);
  // RFC 7591 §3.2.1: the answer holds the secret; it must not be cached.
  return jsonResponse(201, response);
}

/** At most once an hour, on a registration: removes registered clients unused for the configured time. */
async function reapUnused(context: ServerContext, now: number): Promise<void> {
  const maxIdle = context.registration!.removeUnusedAfterMs;
  if (maxIdle === undefined || now - (lastReap.get(context.registration!) ?? -Infinity) < REAP_INTERVAL_MS) return;
  lastReap.set(context.registration!, now);
  try {
    await removeUnusedClients(context.storage, now, maxIdle, context.refreshTokenTtl);
  } catch (error) {
    // The registration itself succeeded; a failed clean-up is retried at the next interval.
    context.onError(error, { endpoint: "register", method: "POST", path: "/register" });
  }
}
