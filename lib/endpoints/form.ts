/**
 * Reading the form body shared by the token, revocation and introspection endpoints.
 *
 * @module
 */
import { OAuthError } from "../errors.ts";
import { isFormContentType, parseForm, readText, type Incoming } from "../http.ts";
import type { ServerContext } from "../options.ts";

/** The POSTed form, or `invalid_request` for another media type (RFC 6749 §3.2) or a repeated parameter. */
export async function readPostedForm({ request }: Incoming, context: ServerContext): Promise<Map<string, string>> {
  if (!isFormContentType(request.headers.get("content-type"))) {
    throw new OAuthError("invalid_request", { description: "Content-Type must be application/x-www-form-urlencoded" });
  }
  return parseForm(await readText(request, context.maxBodyBytes, context.bodyTimeout), context.formLimits);
}
