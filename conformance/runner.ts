/**
 * Runs cases one after another, each isolated: its own recorder, a time limit, and any exception turned into
 * that case's result so that the others still run.
 *
 * @module
 */
import { type CaseDef, Outcome } from "./case.ts";
import { CaseContext } from "./context.ts";
import type { ApprovalDriver } from "./drivers/driver.ts";
import { describe, type FetchLike, Recorder } from "./http.ts";
import type { Target } from "./target.ts";
import type { CaseResult, Exchange, Verdict } from "./types.ts";

/** Options of {@link runCases}. */
export interface RunOptions {
  fetch: FetchLike;
  driver: ApprovalDriver;
  /** Milliseconds one case may take. Default 20 000. */
  timeoutMs?: number;
  /** Keep every exchange of every case in `trace`. */
  trace?: boolean;
  /** Called as each case finishes. */
  onResult?: (result: CaseResult) => void;
}

/**
 * Keeps the cases whose id matches one of the comma-separated patterns (`*` is a wildcard; case-insensitive).
 * Throws when a pattern matches nothing, so that a typo does not pass silently.
 */
export function selectCases(cases: readonly CaseDef[], patterns: string | undefined): CaseDef[] {
  if (patterns === undefined || patterns.trim() === "") return [...cases];
  const list = patterns.split(",").map((p) => p.trim()).filter((p) => p !== "");
  const regexps = list.map((p) => {
    const source = p.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*");
    return { pattern: p, re: new RegExp(`^${source}$`, "i") };
  });
  for (const { pattern, re } of regexps) {
    if (!cases.some((c) => re.test(c.id))) throw new Error(`No case matches "${pattern}"`);
  }
  return cases.filter((c) => regexps.some(({ re }) => re.test(c.id)));
}

/** The target's secrets, never shown whole in evidence. */
function secretsOf(target: Target): string[] {
  const c = target.clients;
  const secrets = [c.confidential, c.client_credentials, c.client_credentials_refresh, c.second]
    .map((client) => client?.client_secret)
    .filter((s): s is string => s !== undefined);
  if (target.approval.driver === "html_form") secrets.push(target.approval.password);
  return secrets;
}

/** Runs one case and returns its result; never throws. */
export async function runCase(def: CaseDef, target: Target, options: RunOptions): Promise<CaseResult> {
  const started = Date.now();
  const controller = new AbortController();
  const http = new Recorder(options.fetch, controller.signal, secretsOf(target));
  const ctx = new CaseContext(target, http, options.driver);
  const limit = options.timeoutMs ?? 20_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Outcome("FAIL", `Timed out after ${limit} ms`, http.exchanges.slice(-1)));
    }, limit);
  });
  let verdict: Verdict = "PASS";
  let message: string | undefined;
  let evidence: Exchange[] = [];
  try {
    const note = await Promise.race([def.run(ctx), timeout]);
    if (typeof note === "string") message = note;
  } catch (error) {
    if (error instanceof Outcome) {
      verdict = error.verdict;
      message = error.message;
      evidence = error.evidence;
    } else {
      verdict = "FAIL";
      message = `Unexpected error: ${describe(error)}`;
      const last = http.last();
      if (last) evidence = [last];
    }
  } finally {
    clearTimeout(timer);
  }
  // A rate-limited server explains many odd results at once; say so where it happened.
  const throttled = http.exchanges.find((e) => e.response?.status === 429);
  if (verdict === "FAIL" && throttled) {
    const after = throttled.response!.headers["retry-after"];
    message = `${message ?? ""}\nThe server rate-limited the suite during this case (429${after ? `, Retry-After: ${after}` : ""}); see README "Rate limits".`;
  }
  // A SHOULD is a recommendation: breaking it warns and does not fail the run.
  if (verdict === "FAIL" && def.level === "SHOULD") verdict = "WARN";
  const result: CaseResult = {
    id: def.id,
    title: def.title,
    area: def.area,
    ref: def.ref,
    level: def.level,
    verdict,
    evidence: verdict === "PASS" ? [] : evidence,
    cells: def.cells ?? [],
    duration_ms: Date.now() - started,
  };
  if (message !== undefined) result.message = message;
  if (options.trace) result.trace = [...http.exchanges];
  return result;
}

/** Runs cases in order; one case's failure never stops the others. */
export async function runCases(cases: readonly CaseDef[], target: Target, options: RunOptions): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const def of cases) {
    const result = await runCase(def, target, options);
    results.push(result);
    options.onResult?.(result);
  }
  return results;
}
