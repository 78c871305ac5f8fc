/**
 * The `prompt` parameter of an authorization request (OpenID Connect Core §3.1.2.1), as MCP clients send it:
 * the TypeScript SDK adds `prompt=consent` whenever it asks for `offline_access` (MCP 2026-07-28, SEP-2207).
 *
 * - `consent`: show the consent page (this server always does; it never remembers consent);
 * - `login`: ask the user to sign in again, even with a live session (the sign-in hook is told);
 * - `none`: show no page at all; answer `login_required` or `consent_required` by redirect.
 *
 * @module
 */
import { OAuthError } from "./errors.ts";

/** A prompt value this server acts on. */
export type PromptValue = "none" | "login" | "consent";

const VALUES: ReadonlySet<string> = new Set(["none", "login", "consent"]);

/**
 * The prompt values of a request, without repeats; none for an absent parameter. Throws `invalid_request` for
 * a value this server does not act on (`select_account`, or a typo), and for `none` with any other value
 * (OpenID Connect Core §3.1.2.1).
 */
export function parsePrompt(value: string | undefined): readonly PromptValue[] {
  if (value === undefined) return [];
  const values = [...new Set(value.split(" "))];
  if (!values.every((v) => VALUES.has(v))) {
    throw new OAuthError("invalid_request", { description: "The prompt parameter holds a value this server does not support" });
  }
  if (values.includes("none") && values.length > 1) {
    throw new OAuthError("invalid_request", { description: "prompt=none cannot be combined with another value" });
  }
  return values as PromptValue[];
}
