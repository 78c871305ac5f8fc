/**
 * What a case is, and how it ends early: `fail` and `skip` throw an {@link Outcome} that the runner turns
 * into a result.
 *
 * @module
 */
import type { Reply } from "./http.ts";
import type { Area, Cell, Exchange, Level, Profile } from "./types.ts";
import type { CaseContext } from "./context.ts";
import type { FeatureId } from "./features.ts";

/** One conformance case. */
export interface CaseDef {
  /** Stable id, e.g. `SEC-CODE-REPLAY`. */
  id: string;
  /** What the case checks, in one line. */
  title: string;
  /** The report section it belongs to. */
  area: Area;
  /** The rule checked: spec section or table cell, or RFC and section. */
  ref: string;
  /** How strong the rule is: a failed MUST fails the run, a failed SHOULD warns. */
  level: Level;
  /** The profiles whose rules include this case's rule. */
  profiles: readonly Profile[];
  /**
   * The features the case needs (capability discovery): where the server offers one of them not, the case is
   * NOT_OFFERED and does not run.
   */
  features?: readonly FeatureId[];
  /** Prerequisite cases (positive controls): when one does not pass, this case is BLOCKED, not run. */
  needs?: readonly string[];
  /**
   * A positive case: it is itself a control, so a step that fails inside it (getting a code, redeeming it)
   * FAILs it instead of blocking it.
   */
  positive?: boolean;
  /** A security rule: its failure ranks first among the root causes. Default: areas security and concurrency. */
  security?: boolean;
  /** The body-field table cells (spec §4.2) this case exercises. */
  cells?: Cell[];
  /** Runs the case; returns normally to pass (optionally with a note), or calls `ctx.fail` / `ctx.skip`. */
  run(ctx: CaseContext): Promise<void | string>;
}

/** Evidence as cases give it: an exchange, a reply, or several. */
export type Evidence = Exchange | Reply | undefined | (Exchange | Reply | undefined)[];

/** Ends a case early with a verdict. */
export class Outcome extends Error {
  readonly verdict: "FAIL" | "SKIP" | "BLOCKED";
  readonly evidence: Exchange[];
  /** A refusal with the wrong error code or status only: ranked below real failures. */
  readonly wording: boolean;

  constructor(verdict: "FAIL" | "SKIP" | "BLOCKED", message: string, evidence: Exchange[] = [], wording = false) {
    super(message);
    this.name = "Outcome";
    this.verdict = verdict;
    this.evidence = evidence;
    this.wording = wording;
  }
}

/** Flattens evidence into exchanges. */
export function exchanges(evidence: Evidence): Exchange[] {
  const list = Array.isArray(evidence) ? evidence : [evidence];
  return list.flatMap((e) => e === undefined ? [] : "exchange" in e ? [e.exchange] : [e]);
}
