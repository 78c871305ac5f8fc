/**
 * What the adapters share: the app they serve, the base URL they report, the generic 500 and the error log.
 *
 * @module
 */
import { pathOf, targetOf } from "../http.ts";

export { report } from "../errors.ts";

/** What the Deno and Bun adapters serve: anything with a fetch handler, such as the authorization server. */
export interface FetchApp {
  /**
   * Called with the request and the runtime's second argument (Deno's handler info, Bun's server), from which
   * the authorization server reads the client's address.
   */
  fetch(request: Request, info?: unknown): Response | Promise<Response>;
}

/** `http://host:port`, with a wildcard address shown as localhost and an IPv6 one in brackets. */
export function baseUrl(hostname: string, port: number): string {
  const shown = hostname === "0.0.0.0" || hostname === "::" ? "localhost" : hostname;
  return `http://${shown.includes(":") ? `[${shown}]` : shown}:${port}`;
}

/** The answer to a handler that threw: RFC 6749's `server_error`, with no details for the client. */
export function serverError(): Response {
  return new Response('{"error":"server_error"}', {
    status: 500,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}

/** The adapters' default error hook. */
export function logError(error: unknown, request?: Request): void {
  // The path only: a query may carry a token (RFC 6750 §2.3) or a code.
  const what = request === undefined ? "a request" : `${request.method} ${pathOf(targetOf(request.url))}`;
  console.error(`Unhandled error while serving ${what}:`, error);
}
