/**
 * Client authentication at the token, revocation and introspection endpoints (RFC 6749 §2.3, §3.2.1).
 *
 * @module
 */
import { sha256, timingSafeEqual } from "../crypto.ts";
import { OAuthError } from "../errors.ts";
import type { HttpRequest } from "../http.ts";
import type { ServerContext } from "../options.ts";
import type { ClientRecord } from "../storage/types.ts";
import { type PresentedCredentials, readBasic } from "./client_secret_basic.ts";
import { readForm } from "./client_secret_post.ts";

/** The authenticated client and how it authenticated. */
export interface AuthenticatedClient {
  client: ClientRecord;
  method: PresentedCredentials["method"];
}

/**
 * Authenticates the client of a request, or throws `invalid_client` (401 with a Basic challenge: RFC 6749 §5.2
 * requires it when Basic was used, and RFC 9110 requires a challenge on every 401) or `invalid_request`.
 */
export async function authenticateClient(
  request: HttpRequest,
  form: Map<string, string>,
  context: ServerContext,
): Promise<AuthenticatedClient> {
  const challenge = { "www-authenticate": `Basic realm="${context.issuer}", charset="UTF-8"` };
  const denied = (description: string) => new OAuthError("invalid_client", { description, headers: challenge });

  let presented: PresentedCredentials | null;
  try {
    presented = readBasic(request.header("authorization"));
  } catch (error) {
    throw (error as OAuthError).code === "invalid_client" ? denied("The Authorization header is malformed") : error;
  }
  if (presented) {
    // RFC 6749 §2.3: a client MUST NOT use more than one authentication method in each request.
    if (form.has("client_secret")) {
      throw new OAuthError("invalid_request", { description: "Use one client authentication method, not two" });
    }
    const bodyId = form.get("client_id");
    if (bodyId !== undefined && bodyId !== presented.client_id) {
      throw new OAuthError("invalid_request", { description: "client_id differs from the Authorization header" });
    }
  } else {
    presented = readForm(form);
    if (!presented) throw new OAuthError("invalid_request", { description: "The client_id parameter is required" });
  }

  const client = await context.storage.getClient(presented.client_id);
  if (!client || !client.active) {
    // Hash anyway, so an unknown client_id costs the same time as a wrong secret.
    if (presented.client_secret !== undefined) await sha256(presented.client_secret);
    throw denied("Client authentication failed");
  }
  if (client.type === "public") {
    if (presented.method !== "none") throw denied("Client authentication failed");
    return { client, method: "none" };
  }
  if (presented.client_secret === undefined || client.secret_hash === undefined) {
    throw denied("Client authentication failed");
  }
  if (!timingSafeEqual(await sha256(presented.client_secret), client.secret_hash)) {
    throw denied("Client authentication failed");
  }
  return { client, method: presented.method };
}
