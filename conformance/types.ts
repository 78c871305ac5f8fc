/**
 * The vocabulary of the conformance suite: case definitions, results and the evidence a result carries.
 *
 * @module
 */

/** How strongly a case's rule is stated: a MUST failure fails the run, a SHOULD failure only warns. */
export type Level = "MUST" | "SHOULD";

/** The verdict on one case. */
export type Verdict = "PASS" | "FAIL" | "WARN" | "SKIP";

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
  column: Column;
  row: Row;
}

/** One HTTP request and what came back, secrets masked; the evidence of a result. */
export interface Exchange {
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
  id: string;
  title: string;
  area: Area;
  ref: string;
  level: Level;
  verdict: Verdict;
  /** Why the case did not pass (or a note on a pass). */
  message?: string;
  /** The exchanges that show a non-passing result. */
  evidence: Exchange[];
  /** Every exchange of the case, when a trace was asked for. */
  trace?: Exchange[];
  /** The body-field table cells the case exercises. */
  cells: Cell[];
  duration_ms: number;
}
