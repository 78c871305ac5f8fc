/**
 * The core's endpoints, in routing order: one line each. Features add their own (`lib/features/`).
 *
 * @module
 */
import type { Endpoint } from "../core/endpoint.ts";
import { authorizeEndpoint } from "./authorize.ts";
import { introspectEndpoint } from "./introspect.ts";
import { metadataEndpoint } from "./metadata.ts";
import { revokeEndpoint } from "./revoke.ts";
import { tokenEndpoint } from "./token.ts";

/** The core's endpoints. */
export const ENDPOINTS: readonly Endpoint[] = Object.freeze([
  authorizeEndpoint,
  tokenEndpoint,
  revokeEndpoint,
  introspectEndpoint,
  metadataEndpoint,
]);
