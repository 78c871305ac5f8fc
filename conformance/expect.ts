/**
 * Expected failures (`--expect FILE`): the deviations a server's owners know about, each with its reason, so
 * that the run stays green until something new breaks, and says when a known deviation is fixed.
 *
 * The file is JSONC. Either flat, case id (or `*` pattern) to reason, for every profile:
 *
 * ```jsonc
 * { "AUTHZ-SCOPE-TWO": "we accept space-separated scopes (RFC 6749 §3.3)" }
 * ```
 *
 * or by profile, with `"all"` for every profile:
 *
 * ```jsonc
 * { "all": { "TOKEN-AUTH-TWO-METHODS": "..." }, "spec": { "AUTHZ-SCOPE-TWO": "..." } }
 * ```
 *
 * @module
 */
import type { CaseDef } from "./case.ts";
import { matchesPattern } from "./runner.ts";
import { type Profile, PROFILES } from "./types.ts";

/** Thrown for an expectations file that names no known case or has no reasons. */
export class ExpectationsError extends Error {
  /** Says what is wrong with the file. */
  constructor(message: string) {
    super(message);
    this.name = "ExpectationsError";
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The expected failures of one profile: case id to reason. Every entry must name at least one case of the
 * catalogue and give a non-empty reason, so a typo cannot hide a failure.
 */
export function parseExpectations(input: unknown, profile: Profile, catalog: readonly CaseDef[]): Map<string, string> {
  if (!isObj(input)) throw new ExpectationsError("An expectations file must be a JSON object");
  const sections = Object.keys(input).some((k) => k === "all" || k in PROFILES);
  const entries: [string, unknown][] = [];
  if (sections) {
    for (const [key, value] of Object.entries(input)) {
      if (key !== "all" && !(key in PROFILES)) {
        throw new ExpectationsError(`Unknown section "${key}": use "all" or a profile (${Object.keys(PROFILES).join(", ")})`);
      }
      if (!isObj(value)) throw new ExpectationsError(`Section "${key}" must be an object of case id to reason`);
      if (key === "all" || key === profile) entries.push(...Object.entries(value));
      else for (const id of Object.keys(value)) known(id, catalog);
    }
  } else entries.push(...Object.entries(input));
  const out = new Map<string, string>();
  for (const [pattern, reason] of entries) {
    if (typeof reason !== "string" || reason.trim() === "") {
      throw new ExpectationsError(`"${pattern}" needs a reason: a non-empty string saying why it is expected to fail`);
    }
    for (const def of known(pattern, catalog)) out.set(def.id, reason);
  }
  return out;
}

function known(pattern: string, catalog: readonly CaseDef[]): CaseDef[] {
  const matched = catalog.filter((c) => matchesPattern(c.id, pattern));
  if (matched.length === 0) throw new ExpectationsError(`No case matches "${pattern}"`);
  return matched;
}
