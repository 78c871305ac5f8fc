/**
 * The vocabulary of the conformance suite: case definitions, results and the evidence a result carries.
 *
 * @module
 */
import type { FeatureId } from "./features.ts";

/** How strongly a case's rule is stated: a MUST failure fails the run, a SHOULD failure only warns. */
export type Level = "MUST" | "SHOULD";

/**
 * The verdict on one case. BLOCKED: the case's positive control (the valid twin of its request, or a
 * prerequisite case) failed, so the case proves nothing either way. NOT_OFFERED: the server does not offer a
 * feature the case needs (capability discovery), so the case did not run; never counted as passed.
 */
export type Verdict = "PASS" | "FAIL" | "WARN" | "SKIP" | "BLOCKED" | "NOT_OFFERED";

/** The rule sets a run can apply (`--profile`); see README "Profiles". */
export const PROFILES = {
  spec: "the spec (oauth2-service.md): RFC 6749 with its one-scope rule, fixed addresses, PKCE for public clients",
  rfc6749: "plain RFC 6749 with RFC 6750 and RFC 7636: what any RFC-legal server must do",
  "oauth2.1": "OAuth 2.1 with the Security BCP (RFC 9700): PKCE, no implicit or password grant, rotation, loopback",
  mcp: "the MCP authorization profile: OAuth 2.1 plus resource indicators, metadata, registration and CORS",
} as const;

/** A profile name. */
export type Profile = keyof typeof PROFILES;

/** Every profile: the tag of a rule that holds everywhere. */
export const EVERY_PROFILE: readonly Profile[] = ["spec", "rfc6749", "oauth2.1", "mcp"];

/** The report's groups, in the order they are printed. */
export const AREAS = {
  authorize: "Authorization endpoint",
  token: "Token endpoint: every grant",
  token_authorization_code: "Token endpoint: authorization_code",
  token_refresh: "Token endpoint: refresh_token",
  token_client_credentials: "Token endpoint: client_credentials",
  response: "Token response",
  bearer: "Bearer token at the resource API",
  security: "Security rules (RFC 6749, 7636, 9700)",
  concurrency: "Concurrency (atomic redemption and rotation)",
  pages: "Login and consent pages",
  requirements: "What the profile requires the server to offer (capability discovery)",
  metadata: "Metadata, revocation and iss (RFC 8414, 7009, 9207)",
  jwt_access_tokens: "JWT access tokens and the JWK Set (RFC 9068, 7517)",
  dpop: "DPoP sender-constrained tokens (RFC 9449)",
  mcp: "MCP authorization (RFC 8707, 9728, 7591, CIMD, CORS)",
  identity: "Machine and agent identity (RFC 7523, 8693, ID-JAG, workload JWTs)",
  device: "Device authorization grant (RFC 8628)",
} as const;

/** One area of the report. */
export type Area = keyof typeof AREAS;

/** The columns of the spec's body-field table (§4.2). */
export const COLUMNS = {
  "AC-PUB": "authorization_code (public)",
  "AC-CONF": "authorization_code (confidential)",
  "RT-PUB": "refresh_token (public)",
  "RT-CONF": "refresh_token (confidential)",
  "CC": "client_credentials",
} as const;

/** A column id of the body-field table. */
export type Column = keyof typeof COLUMNS;

/** The rows of the spec's body-field table (§4.2), in the spec's order. */
export const ROWS = [
  "grant_type",
  "client_id",
  "client_secret",
  "redirect_uri",
  "code",
  "code_verifier",
  "refresh_token",
  "scope",
] as const;

/** A row (body field) of the body-field table. */
export type Row = (typeof ROWS)[number];

/** One cell of the body-field table. */
export interface Cell {
  /** The grant and client type. */
  column: Column;
  /** The body field. */
  row: Row;
}

/** One HTTP request and what came back, secrets masked; the evidence of a result. */
export interface Exchange {
  /** What was sent. */
  request: {
    method: string;
    url: string;
    headers: Record<string, string>;
    body?: string;
  };
  /** Absent when the request failed before a response (network error, timeout). */
  response?: {
    status: number;
    headers: Record<string, string>;
    body: string;
  };
  /** Why there is no response. */
  error?: string;
}

/** The result of one case. */
export interface CaseResult {
  /** The case's id. */
  id: string;
  /** The case's title. */
  title: string;
  /** The report section. */
  area: Area;
  /** The rule checked. */
  ref: string;
  /** MUST or SHOULD. */
  level: Level;
  /** How it ended. */
  verdict: Verdict;
  /** The profiles the case belongs to. */
  profiles: Profile[];
  /** A security rule (ranked first among the root causes). */
  security: boolean;
  /** The server refused as it should, only with another error code or status than the RFC asks. */
  wording?: boolean;
  /** For BLOCKED: the failed prerequisite case, or `control` when the case's own valid twin failed. */
  blocked_by?: string;
  /** Run only as another selected case's prerequisite (not selected itself). */
  control?: boolean;
  /** The reason given in the `--expect` file, when the case is listed there. */
  expected?: string;
  /** Why the case did not pass (or a note on a pass). */
  message?: string;
  /** The exchanges that show a non-passing result. */
  evidence: Exchange[];
  /** Every exchange of the case, when a trace was asked for. */
  trace?: Exchange[];
  /** The body-field table cells the case exercises. */
  cells: Cell[];
  /** The features the case needs (see FEATURES); empty for the core cases. */
  features: FeatureId[];
  /** How long the case took. */
  duration_ms: number;
}
