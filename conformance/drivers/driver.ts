/**
 * The approval driver interface: how the suite gets an end user to log in and press Allow or Deny.
 *
 * @module
 */
import type { FetchLike } from "../http.ts";

/** What {@link ApprovalDriver.approve} is told besides the URL. */
export interface ApproveOptions {
  /** Press Deny instead of Allow. */
  deny: boolean;
  /**
   * The fetch to use: it records evidence and, in in-process mode, reaches the server without a socket.
   * Requests should be sent with `redirect: "manual"` and redirects followed by hand.
   */
  fetch: FetchLike;
}

/**
 * Drives the end user's side of an authorization request: logs in, approves or denies, and returns the final
 * redirect to the client's redirect_uri (the URL carrying `code` or `error`). Throws when the server does not
 * get there (an error page, an unexpected form), which some cases expect.
 */
export interface ApprovalDriver {
  /** Runs the user's side of `authorizeUrl` and resolves to the redirect back to the client. */
  approve(authorizeUrl: URL, options: ApproveOptions): Promise<URL>;
}

/** Thrown by drivers when the flow does not reach the redirect_uri. */
export class DriverError extends Error {
  /** Says where the flow stopped. */
  constructor(message: string) {
    super(message);
    this.name = "DriverError";
  }
}

/**
 * Thrown by a driver asked to deny when the server skipped the consent page because the user approved this
 * client before (remembered consent): the user had no Deny button to press. Cases that need one skip.
 */
export class ConsentRemembered extends DriverError {
  /** The default message says what happened. */
  constructor(message = "The server remembered the user's consent and issued a code without asking: there was no Deny to press") {
    super(message);
    this.name = "ConsentRemembered";
  }
}

/**
 * Whether `location` is a redirect to `redirectUri`: same scheme, authority and path, and every query
 * parameter of `redirectUri` kept (the server adds its own).
 */
export function isRedirectTo(location: URL, redirectUri: string): boolean {
  let expected: URL;
  try {
    expected = new URL(redirectUri);
  } catch {
    return false;
  }
  const strip = (u: URL) => `${u.protocol}//${u.host}${u.pathname}`;
  if (strip(location) !== strip(expected)) return false;
  for (const [name, value] of expected.searchParams) {
    if (!location.searchParams.getAll(name).includes(value)) return false;
  }
  return true;
}

/** The text of a page's `<title>` or first heading, for error messages. */
export function pageSummary(html: string): string {
  const m = /<title[^>]*>([\s\S]*?)<\/title>|<h1[^>]*>([\s\S]*?)<\/h1>/i.exec(html);
  const text = (m?.[1] ?? m?.[2] ?? html.slice(0, 120)).replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim();
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
