/**
 * Runs cases one after another, each isolated: its own recorder, a time limit, and any exception turned into
 * that case's result so that the others still run.
 *
 * @module
 */
import { type CaseDef, Outcome } from "./case.ts";
import { type AdvanceClock, CaseContext, type DocumentHost } from "./context.ts";
import { type Discovery, missing, offerEverything } from "./discovery.ts";
import type { ApprovalDriver } from "./drivers/driver.ts";
import { describe, type FetchLike, Recorder } from "./http.ts";
import { preflight, PreflightError } from "./preflight.ts";
import type { Target } from "./target.ts";
import type { CaseResult, Exchange, Profile, Verdict } from "./types.ts";

/** Options of {@link runCases}. */
export interface RunOptions {
  fetch: FetchLike;
  driver: ApprovalDriver;
  /** The profile whose rules apply. Default `spec`. */
  profile?: Profile;
  /** Moves the server's clock, for the expiry cases (skipped without it). */
  clock?: AdvanceClock;
  /** Serves Client ID Metadata Documents where the server may fetch them (the CIMD cases skip without it). */
  documents?: DocumentHost;
  /** What the target offers (capability discovery). Default: every feature offered. */
  discovery?: Discovery;
  /** Rotates the server's signing keys (the rotation case skips without it). */
  rotateKeys?: () => Promise<void>;
  /** Serves the suite's public keys at the target's `identity.origin` (the identity cases skip without it). */
  keys?: DocumentHost;
  /** Expected failures: case id to the reason (see {@link parseExpectations}). */
  expected?: ReadonlyMap<string, string>;
  /** Milliseconds one case may take. Default 20 000. */
  timeoutMs?: number;
  /** Keep every exchange of every case in `trace`. */
  trace?: boolean;
  /** Called as each case finishes. */
  onResult?: (result: CaseResult) => void;
}

/** Turns comma-separated id patterns (`*` wildcard, case-insensitive) into matchers. */
function matchers(patterns: string | undefined): { pattern: string; re: RegExp }[] {
  if (patterns === undefined) return [];
  return patterns.split(",").map((p) => p.trim()).filter((p) => p !== "").map((p) => {
    const source = p.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*");
    return { pattern: p, re: new RegExp(`^${source}$`, "i") };
  });
}

/** Whether `id` matches a comma-separated pattern list (`*` wildcard, case-insensitive). */
export function matchesPattern(id: string, patterns: string): boolean {
  return matchers(patterns).some(({ re }) => re.test(id));
}

/** Options of {@link selectCases} beyond `--only`. */
export interface SelectOptions {
  /** Comma-separated patterns of cases to leave out. */
  skip?: string;
  /** Keep only the cases of this profile. */
  profile?: Profile;
}

/**
 * Keeps the cases whose id matches one of the comma-separated `only` patterns (`*` is a wildcard;
 * case-insensitive; none: every case), minus the `skip` patterns, within the profile. Throws when a pattern
 * matches no case at all, so that a typo does not pass silently.
 */
export function selectCases(cases: readonly CaseDef[], only: string | undefined, options: SelectOptions = {}): CaseDef[] {
  const include = matchers(only);
  const exclude = matchers(options.skip);
  for (const { pattern, re } of [...include, ...exclude]) {
    if (!cases.some((c) => re.test(c.id))) throw new Error(`No case matches "${pattern}"`);
  }
  return cases.filter((c) =>
    (options.profile === undefined || c.profiles.includes(options.profile)) &&
    (include.length === 0 || include.some(({ re }) => re.test(c.id))) &&
    !exclude.some(({ re }) => re.test(c.id))
  );
}

/**
 * The cases to run, in an order where every prerequisite (`needs`) comes before the cases that need it; the
 * prerequisites that were not selected are added as controls.
 */
export function planCases(selected: readonly CaseDef[], catalog: readonly CaseDef[]): { plan: CaseDef[]; controls: Set<string> } {
  const byId = new Map(catalog.map((c) => [c.id, c]));
  for (const c of selected) byId.set(c.id, c);
  const chosen = new Set(selected.map((c) => c.id));
  const plan: CaseDef[] = [];
  const placed = new Set<string>();
  const place = (def: CaseDef, path: string[]) => {
    if (placed.has(def.id)) return;
    if (path.includes(def.id)) throw new Error(`Prerequisite cycle: ${[...path, def.id].join(" -> ")}`);
    for (const id of def.needs ?? []) {
      const need = byId.get(id);
      if (need === undefined) throw new Error(`Case ${def.id} needs the unknown case ${id}`);
      place(need, [...path, def.id]);
    }
    placed.add(def.id);
    plan.push(def);
  };
  for (const def of selected) place(def, []);
  return { plan, controls: new Set(plan.filter((c) => !chosen.has(c.id)).map((c) => c.id)) };
}

/** The target's secrets, never shown whole in evidence. */
function secretsOf(target: Target): string[] {
  const c = target.clients;
  const secrets = [c.confidential, c.client_credentials, c.client_credentials_refresh, c.second]
    .map((client) => client?.client_secret)
    .filter((s): s is string => s !== undefined);
  const identity = target.identity;
  for (const role of [identity?.id_jag, identity?.workload, identity?.token_exchange]) if (role?.client_secret !== undefined) secrets.push(role.client_secret);
  if (target.approval.driver === "html_form") secrets.push(target.approval.password);
  return secrets;
}

/** Runs one case and returns its result; never throws. */
export async function runCase(def: CaseDef, target: Target, options: RunOptions): Promise<CaseResult> {
  return (await runOne(def, target, options)).result;
}

/** Runs one case; also says whether a request of it got no answer at all (refused connection, reset). */
async function runOne(def: CaseDef, target: Target, options: RunOptions): Promise<{ result: CaseResult; silent: boolean }> {
  const started = Date.now();
  const controller = new AbortController();
  const http = new Recorder(options.fetch, controller.signal, secretsOf(target));
  const ctx = new CaseContext(target, http, options.driver, options.profile ?? "spec", options.clock, options.documents, options.discovery ?? offerEverything(target), options.rotateKeys, options.keys);
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
  let wording = false;
  try {
    const note = await Promise.race([def.run(ctx), timeout]);
    if (typeof note === "string") message = note;
  } catch (error) {
    if (error instanceof Outcome) {
      verdict = error.verdict;
      message = error.message;
      evidence = error.evidence;
      wording = error.wording;
    } else {
      verdict = "FAIL";
      message = `Unexpected error: ${describe(error)}`;
      const last = http.last();
      if (last) evidence = [last];
    }
  } finally {
    clearTimeout(timer);
  }
  // A positive case is its own control: a failed step in it is its failure.
  if (verdict === "BLOCKED" && def.positive) {
    verdict = "FAIL";
    message = message?.replace(/^Control failed: /, "");
  }
  // A rate-limited server explains many odd results at once; say so where it happened.
  const throttled = http.exchanges.find((e) => e.response?.status === 429);
  if ((verdict === "FAIL" || verdict === "BLOCKED") && throttled) {
    const after = throttled.response!.headers["retry-after"];
    message = `${message ?? ""}\nThe server rate-limited the suite during this case (429${after ? `, Retry-After: ${after}` : ""}); see README "Rate limits".`;
  }
  // A SHOULD is a recommendation: breaking it warns and does not fail the run.
  if (verdict === "FAIL" && def.level === "SHOULD") verdict = "WARN";
  const result = baseResult(def, verdict, Date.now() - started);
  result.evidence = verdict === "PASS" ? [] : evidence;
  if (message !== undefined) result.message = message;
  if (wording && (verdict === "FAIL" || verdict === "WARN")) result.wording = true;
  if (verdict === "BLOCKED") result.blocked_by = "control";
  if (options.trace) result.trace = [...http.exchanges];
  const silent = !controller.signal.aborted && http.exchanges.some((e) => e.response === undefined && e.error !== undefined);
  return { result, silent };
}

/** Whether a case's rule is a security rule. */
export function isSecurity(def: CaseDef): boolean {
  return def.security ?? (def.area === "security" || def.area === "concurrency");
}

function baseResult(def: CaseDef, verdict: Verdict, duration: number): CaseResult {
  return {
    id: def.id,
    title: def.title,
    area: def.area,
    ref: def.ref,
    level: def.level,
    verdict,
    profiles: [...def.profiles],
    security: isSecurity(def),
    evidence: [],
    cells: def.cells ?? [],
    features: [...def.features ?? []],
    duration_ms: duration,
  };
}

/**
 * Runs cases in order (see {@link planCases}); one case's failure never stops the others. A case whose
 * prerequisite did not pass is BLOCKED without running, attributed to the first failing case of the chain.
 */
export async function runCases(
  cases: readonly CaseDef[],
  target: Target,
  options: RunOptions,
  catalog: readonly CaseDef[] = cases,
): Promise<CaseResult[]> {
  const { plan, controls } = planCases(cases, catalog);
  const discovery = options.discovery ?? offerEverything(target);
  const done = new Map<string, CaseResult>();
  for (const def of plan) {
    // A feature the server does not offer: the case does not run, and is never counted as passed.
    const absent = missing(discovery, def.features ?? []);
    const unoffered = (def.needs ?? []).map((id) => done.get(id)!).find((r) => r.verdict === "NOT_OFFERED");
    // A control that did not pass (a failed SHOULD control included) leaves nothing to conclude.
    const failed = (def.needs ?? []).map((id) => done.get(id)!).find((r) => r.verdict !== "PASS");
    let result: CaseResult;
    if (absent.length > 0) {
      result = baseResult(def, "NOT_OFFERED", 0);
      result.message = `Not offered: ${absent.map((f) => `${f.title} (${f.detail})`).join("; ")}`;
    } else if (unoffered !== undefined) {
      result = baseResult(def, "NOT_OFFERED", 0);
      result.message = `Its prerequisite ${unoffered.id} is not offered: ${unoffered.message ?? ""}`;
    } else if (failed === undefined) {
      const one = await runOne(def, target, options);
      result = one.result;
      // A request went unanswered: if the target is gone, say so once instead of timing out case after case.
      if (one.silent) {
        await preflight(target, options.fetch).catch((error: unknown) => {
          throw new PreflightError(`The target stopped answering during ${def.id}: ${error instanceof Error ? error.message : String(error)}`);
        });
      }
    }
    else if (failed.verdict === "SKIP") {
      result = baseResult(def, "SKIP", 0);
      result.message = `Its prerequisite ${failed.id} was skipped: ${failed.message ?? ""}`;
    } else {
      result = baseResult(def, "BLOCKED", 0);
      // Attribute the block to the root of the chain, so that one cause is reported once.
      const root = failed.verdict === "BLOCKED" && failed.blocked_by !== undefined && failed.blocked_by !== "control"
        ? failed.blocked_by
        : failed.id;
      result.blocked_by = root;
      result.message = `Blocked: its prerequisite ${failed.id} did not pass (${failed.verdict})`;
    }
    if (controls.has(def.id)) result.control = true;
    const reason = options.expected?.get(def.id);
    if (reason !== undefined) result.expected = reason;
    // Blocked by an expected failure is expected too: only the root cause needs an entry.
    else if (result.verdict === "BLOCKED" && result.blocked_by !== undefined && options.expected?.has(result.blocked_by)) {
      result.expected = `blocked by ${result.blocked_by}, an expected failure`;
    }
    done.set(def.id, result);
    options.onResult?.(result);
  }
  // Report in catalogue order, whatever order the prerequisites imposed.
  const order = new Map(catalog.map((c, i) => [c.id, i]));
  return plan.map((c) => done.get(c.id)!).sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
}
