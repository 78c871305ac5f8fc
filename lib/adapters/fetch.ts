/**
 * What the Deno and Bun adapters share: the app they serve, the base URL they report, and the generic 500.
 *
 * @module
 */

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

/** Calls the error hook; a hook that throws must not replace the 500. */
export function report(onError: (error: unknown) => void, error: unknown): void {
  try {
    onError(error);
  } catch {
    // Nothing left to tell.
  }
}

/** The default error hook. */
export function logError(error: unknown): void {
  console.error("Unhandled error while serving a request:", error);
}
