/**
 * A black-box conformance suite for OAuth 2.0 authorization servers: the spec's body-field table, the
 * authorization endpoint, the token response, Bearer usage, and the observable MUSTs of RFC 6749, 6750, 7636,
 * 9207 and 9700. It speaks HTTP through an injectable `fetch` and uses Web APIs only.
 *
 * @example
 * ```ts
 * import { formatText, parseTarget, runConformance } from "./conformance/mod.ts";
 * const report = await runConformance(parseTarget(JSON.parse(text)));
 * console.log(formatText(report));
 * ```
 *
 * @module
 */
import type { CaseDef } from "./case.ts";
import { ALL_CASES } from "./cases/index.ts";
import { driverFromModule, type ImportModule } from "./drivers/custom.ts";
import type { ApprovalDriver } from "./drivers/driver.ts";
import { htmlFormDriver } from "./drivers/html_form.ts";
import type { FetchLike } from "./http.ts";
import type { AdvanceClock, DocumentHost } from "./context.ts";
import { discover, type Discovery } from "./discovery.ts";
import { preflight } from "./preflight.ts";
import { buildReport, type Report } from "./report.ts";
import { runCases, selectCases } from "./runner.ts";
import { parseTarget, type Target } from "./target.ts";
import type { CaseResult, Profile } from "./types.ts";

export type { CaseDef, Evidence } from "./case.ts";
export type {
  AdvanceClock,
  AuthzOutcome,
  CaseContext,
  ClientAuth,
  CodeGrant,
  CodeOptions,
  CodeRole,
  DocumentHost,
  Fields,
} from "./context.ts";
export type { Tokens } from "./checks.ts";
export { CookieJar, type CookieOptions } from "./drivers/cookies.ts";
export { formData, type FormControl, type HtmlForm, type HtmlLink, isSubmit, parseForms, parseLinks } from "./drivers/forms.ts";
export { followRedirects, type FollowOptions, type Followed } from "./drivers/redirects.ts";
export { ExpectationsError, parseExpectations } from "./expect.ts";
export { parseJsonc } from "./jsonc.ts";
export { preflight, PreflightError } from "./preflight.ts";
export { discover, type Discovery, featuresOf } from "./discovery.ts";
export { FEATURES, type FeatureDef, type FeatureId, type FeatureStatus, type Metadata } from "./features.ts";
export { type Requirement, REQUIREMENTS, requirementsOf } from "./cases/requirements.ts";
export { ALL_CASES } from "./cases/index.ts";
export { BODY_FIELDS } from "./cases/body_fields.ts";
export { driverFromModule, fetchFromModule, type ImportModule } from "./drivers/custom.ts";
export { type ApprovalDriver, type ApproveOptions, ConsentRemembered, DriverError, isRedirectTo } from "./drivers/driver.ts";
export { htmlFormDriver, type HtmlFormDriverOptions } from "./drivers/html_form.ts";
export type { FetchLike, Recorder, Reply, SendOptions } from "./http.ts";
export { casesMarkdown, casesText, featuresMarkdown } from "./docs.ts";
export { escapeHtml, formatHtml, type HtmlOptions } from "./html.ts";
export { type Badge, badgeOf, badgeSvg, shieldsJson } from "./badge.ts";
export {
  buildMatrix,
  formatJson,
  formatJunit,
  formatMatrix,
  formatText,
  type MatrixCell,
  type Report,
  type RootCause,
  rootCauses,
  type Summary,
  tally,
  type TextOptions,
  verdictLabel,
} from "./report.ts";
export { matchesPattern, planCases, selectCases, type SelectOptions } from "./runner.ts";
export {
  type ApprovalConfig,
  type ClientRole,
  type CodeClient,
  type IdentityTarget,
  type McpTarget,
  parseTarget,
  type ParseTargetOptions,
  type ResourceTarget,
  type SecretClient,
  type Target,
  type TargetClients,
  TargetError,
  type TokenRole,
} from "./target.ts";
export { AREAS, COLUMNS, EVERY_PROFILE, PROFILES, ROWS } from "./types.ts";
export type { Area, CaseResult, Cell, Column, Exchange, Level, Profile, Row, Verdict } from "./types.ts";

/** Options of {@link runConformance}. */
export interface ConformanceOptions {
  /** How requests reach the server. Default: the global `fetch` (real HTTP). */
  fetch?: FetchLike;
  /** How the end user approves. Default: from the target's `approval`. */
  driver?: ApprovalDriver;
  /** The rules to apply. Default `spec`. */
  profile?: Profile;
  /** Comma-separated id patterns (`*` wildcard); default every case of the profile. */
  only?: string;
  /** Comma-separated id patterns of cases to leave out. */
  skip?: string;
  /** Expected failures, case id to reason (see {@link parseExpectations}). */
  expected?: ReadonlyMap<string, string>;
  /** Moves the server's clock forward, for the expiry cases (skipped without it). */
  clock?: AdvanceClock;
  /** Serves Client ID Metadata Documents at the target's `client_metadata_documents.origin` (the CIMD cases skip without it). */
  documents?: DocumentHost;
  /** Rotates the server's signing keys, for the key rotation case (skipped without it); in-process runs pass one. */
  rotateKeys?: () => Promise<void>;
  /**
   * Serves the suite's public keys (as a client, an identity provider, a workload platform) at the target's
   * `identity.origin`; the identity cases skip without it. It may be the `documents` host, on the same origin.
   */
  keys?: DocumentHost;
  /** Check first that the target answers at all, and abort with one message if not. Default true. */
  preflight?: boolean;
  /**
   * Read the target's metadata first and run a feature's cases only where it is offered (capability
   * discovery). Default true; false offers every feature (for made-up cases), or pass a ready `Discovery`.
   */
  discover?: boolean | Discovery;
  /** The cases to choose from. Default {@link ALL_CASES}. */
  cases?: readonly CaseDef[];
  /** Milliseconds per case. Default 20 000. */
  timeoutMs?: number;
  /** Keep every exchange of every case. */
  trace?: boolean;
  /** Called as each case finishes. */
  onResult?: (result: CaseResult) => void;
  /** Loads the custom driver module a target file names, e.g. `(s) => import(s)`; the command line passes its own. */
  importModule?: ImportModule;
}

/** The driver a target's `approval` describes; a custom driver module is loaded with `importModule`. */
export async function driverFor(target: Target, importModule?: ImportModule): Promise<ApprovalDriver> {
  const a = target.approval;
  if (a.driver === "html_form") return htmlFormDriver({ username: a.username, password: a.password });
  if (importModule === undefined) {
    throw new TypeError(
      `Cannot load driver "${a.module}": pass options.driver, or options.importModule such as (s) => import(s)`,
    );
  }
  return driverFromModule(await importModule(a.module), a.module);
}

/**
 * Runs the suite against a target (a parsed {@link Target} or the raw JSON object, which is checked).
 * Never throws for a failing server: failures are results. Throws only for a bad target or options.
 */
export async function runConformance(target: Target | unknown, options: ConformanceOptions = {}): Promise<Report> {
  const started = new Date();
  const checked = parseTarget(target);
  const profile = options.profile ?? "spec";
  const catalog = options.cases ?? ALL_CASES;
  const cases = selectCases(catalog, options.only, { profile, ...(options.skip === undefined ? {} : { skip: options.skip }) });
  const fetch: FetchLike = options.fetch ?? ((request) => globalThis.fetch(request));
  if (options.preflight !== false) await preflight(checked, fetch);
  const discovery = options.discover === false ? undefined : typeof options.discover === "object" ? options.discover : await discover(checked, fetch);
  const driver = options.driver ?? await driverFor(checked, options.importModule);
  const run: Parameters<typeof runCases>[2] = { fetch, driver, profile };
  if (discovery !== undefined) run.discovery = discovery;
  if (options.timeoutMs !== undefined) run.timeoutMs = options.timeoutMs;
  if (options.trace !== undefined) run.trace = options.trace;
  if (options.onResult !== undefined) run.onResult = options.onResult;
  if (options.expected !== undefined) run.expected = options.expected;
  const clock = options.clock ?? httpClock(checked, fetch);
  if (clock !== undefined) run.clock = clock;
  if (options.documents !== undefined) run.documents = options.documents;
  if (options.rotateKeys !== undefined) run.rotateKeys = options.rotateKeys;
  if (options.keys !== undefined) run.keys = options.keys;
  const results = await runCases(cases, checked, run, catalog.filter((c) => c.profiles.includes(profile)));
  return buildReport(checked, results, started, profile, discovery);
}

/** The target's clock endpoint as an {@link AdvanceClock}: POST `{"advance_ms": N}` as JSON. */
function httpClock(target: Target, fetch: FetchLike): AdvanceClock | undefined {
  const url = target.clock_url;
  if (url === undefined) return undefined;
  return async (ms) => {
    const response = await fetch(new Request(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ advance_ms: ms }),
    }));
    await response.body?.cancel();
    if (!response.ok) throw new Error(`The clock endpoint ${url} answered ${response.status}`);
  };
}
