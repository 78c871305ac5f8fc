/**
 * Reading the form body shared by the token, revocation and introspection endpoints.
 *
 * @module
 */
import { OAuthError } from "../errors.ts";
import { type HttpRequest, isFormContentType, parseForm } from "../http.ts";
import type { ServerContext } from "../options.ts";

/** The POSTed form, or `invalid_request` for another media type (RFC 6749 §3.2) or a repeated parameter. */
export async function readPostedForm(request: HttpRequest, context: ServerContext): Promise<Map<string, string>> {
  if (!isFormContentType(request.header("content-type"))) {
    throw new OAuthError("invalid_request", { description: "Content-Type must be application/x-www-form-urlencoded" });
  }
  return parseForm(await request.text(context.maxBodyBytes), context.formLimits);
}
