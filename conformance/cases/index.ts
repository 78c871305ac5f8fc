/**
 * Every case of the suite, in report order.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { cases as authorize } from "./authorize.ts";
import { cases as authorizeRedirect } from "./authorize_redirect.ts";
import { cases as bearer } from "./bearer.ts";
import { cases as concurrency } from "./concurrency.ts";
import { cases as device } from "./device.ts";
import { cases as identityGrants } from "./identity_grants.ts";
import { cases as dpop } from "./dpop.ts";
import { cases as jwtAccessTokens } from "./jwt_access_tokens.ts";
import { cases as mcp } from "./mcp.ts";
import { cases as mcp2026 } from "./mcp_2026.ts";
import { cases as metadata } from "./metadata.ts";
import { cases as pages } from "./pages.ts";
import { cases as privateKeyJwt } from "./private_key_jwt.ts";
import { cases as requirements } from "./requirements.ts";
import { cases as response } from "./response.ts";
import { cases as securityCode } from "./security_code.ts";
import { cases as securityRefresh } from "./security_refresh.ts";
import { cases as token } from "./token.ts";
import { cases as tokenAuthorizationCode } from "./token_authorization_code.ts";
import { cases as tokenClientCredentials } from "./token_client_credentials.ts";
import { cases as tokenRefresh } from "./token_refresh.ts";

/** All cases, grouped by area. */
export const ALL_CASES: readonly CaseDef[] = [
  ...authorize,
  ...authorizeRedirect,
  ...token,
  ...tokenAuthorizationCode,
  ...tokenRefresh,
  ...tokenClientCredentials,
  ...response,
  ...bearer,
  ...securityCode,
  ...securityRefresh,
  ...concurrency,
  ...pages,
  ...requirements,
  ...metadata,
  ...jwtAccessTokens,
  ...dpop,
  ...mcp,
  ...mcp2026,
  ...privateKeyJwt,
  ...identityGrants,
  ...device,
];
