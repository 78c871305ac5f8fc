/**
 * Fail fast: before any case runs, one request to the token endpoint and one to the authorization endpoint
 * show whether the target is there at all and configured as the target file says. An unreachable or
 * misconfigured target then costs seconds and one message saying what to fix, not a timeout per case.
 *
 * @module
 */
import type { FetchLike } from "./http.ts";
import type { Target } from "./target.ts";

/** Thrown when the target cannot be tested; the message says what to fix. */
export class PreflightError extends Error {
  /** Says what to fix. */
  constructor(message: string) {
    super(message);
    this.name = "PreflightError";
  }
}

/** Milliseconds the pre-flight requests may take. */
const LIMIT_MS = 5_000;

async function send(fetch: FetchLike, request: Request, what: string, hint: string): Promise<Response> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new PreflightError(`The ${what} ${request.url} did not answer within ${LIMIT_MS / 1000} s. ${hint}`));
    }, LIMIT_MS);
  });
  try {
    const init: RequestInit = { signal: controller.signal, redirect: "manual" };
    return await Promise.race([fetch(new Request(request, init)), timeout]);
  } catch (error) {
    if (error instanceof PreflightError) throw error;
    const cause = error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ""}` : String(error);
    throw new PreflightError(`Cannot reach the ${what} ${request.url}: ${cause}. ${hint}`);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Checks that the target answers: the token endpoint with a JSON reply to a client_credentials request of
 * the target's client, and the authorization endpoint with anything but 404/405/5xx-less silence. Throws
 * {@link PreflightError} for what makes a run pointless (no server, wrong URL, wrong client secret). A server
 * that answers but is broken (500s) is not refused here: the cases report it.
 */
export async function preflight(target: Target, fetch: FetchLike): Promise<void> {
  const running = "Is the server running, and are base_url (or --base-url) and the target's URLs right?";
  const client = target.clients.client_credentials;
  const body = new URLSearchParams({
    grant_type: "client_credentials",
    client_id: client.client_id,
    client_secret: client.client_secret,
    scope: client.scope,
  });
  const token = await send(fetch, new Request(target.token_url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body,
  }), "token endpoint", running);
  const text = await token.text();
  if (token.status === 404 || token.status === 405) {
    throw new PreflightError(`The token endpoint ${target.token_url} answered ${token.status}: check "token_url" in the target file.`);
  }
  if (/^text\/html\b/i.test(token.headers.get("content-type") ?? "") && token.status < 500) {
    throw new PreflightError(`The token endpoint ${target.token_url} answered an HTML page (${token.status}), not JSON: check "token_url" in the target file.`);
  }
  let error: unknown;
  try {
    error = (JSON.parse(text) as { error?: unknown }).error;
  } catch {
    error = undefined;
  }
  if (error === "invalid_client") {
    throw new PreflightError(
      `The token endpoint refused the client_credentials client "${client.client_id}" (invalid_client): check ` +
        `"clients.client_credentials" (client_id, client_secret) in the target file, and that the client is registered.`,
    );
  }
  const authorize = new URL(target.authorize_url);
  const pub = target.clients.public;
  authorize.searchParams.set("response_type", "code");
  authorize.searchParams.set("client_id", pub.client_id);
  authorize.searchParams.set("redirect_uri", pub.redirect_uri);
  const page = await send(fetch, new Request(authorize, { headers: { accept: "text/html" } }), "authorization endpoint", running);
  await page.body?.cancel();
  if (page.status === 404 || page.status === 405) {
    throw new PreflightError(`The authorization endpoint ${target.authorize_url} answered ${page.status}: check "authorize_url" in the target file.`);
  }
}
