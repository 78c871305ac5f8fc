/**
 * The profile tags cases use (see README "Profiles"), and the positive cases that others name as their
 * prerequisite (`needs`).
 *
 * @module
 */
import type { Profile } from "../types.ts";

/** A rule of RFC 6749, 6750 or 7636 that every profile keeps. */
export const ALL: readonly Profile[] = ["spec", "rfc6749", "oauth2.1", "mcp"];
/** A rule of the spec only (one scope per request, fixed S256, its refresh configuration). */
export const SPEC: readonly Profile[] = ["spec"];
/** A rule of the Security BCP (RFC 9700) and OAuth 2.1 that the spec adopts, beyond plain RFC 6749. */
export const BCP: readonly Profile[] = ["spec", "oauth2.1", "mcp"];
/** A rule of OAuth 2.1 and MCP only. */
export const MODERN: readonly Profile[] = ["oauth2.1", "mcp"];
/** A rule of the MCP authorization profile only. */
export const MCP: readonly Profile[] = ["mcp"];

/** The positive controls: each proves that the valid request of a flow works. */
export const CONTROL = {
  /** The authorization endpoint issues a code (public client, PKCE). */
  authorize: "AUTHZ-CODE-ISSUED",
  /** A public client's code is redeemed. */
  codePublic: "TOKEN-AC-PUB-SCOPE-NOT-SENT",
  /** A confidential client's code is redeemed. */
  codeConfidential: "TOKEN-AC-CONF-SCOPE-NOT-SENT",
  /** A public client's refresh token is used. */
  refreshPublic: "TOKEN-RT-PUB-SCOPE-NOT-SENT",
  /** A confidential client's refresh token is used. */
  refreshConfidential: "TOKEN-RT-CONF-SCOPE-NOT-SENT",
  /** client_credentials with client_secret_post. */
  clientCredentials: "TOKEN-CC-REDIRECT_URI-NOT-SENT",
  /** HTTP Basic client authentication. */
  basic: "TOKEN-BASIC-AUTH",
  /** A valid token at the resource. */
  bearer: "BEARER-VALID",
} as const;
