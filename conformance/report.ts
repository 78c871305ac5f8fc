/**
 * The report: results grouped by area with evidence, the body-field coverage matrix, and the JSON form.
 *
 * @module
 */
import { BODY_FIELDS } from "./cases/body_fields.ts";
import type { Discovery } from "./discovery.ts";
import type { FeatureStatus } from "./features.ts";
import { AREAS, type CaseResult, type Column, COLUMNS, type Exchange, type Profile, type Row, ROWS, type Verdict } from "./types.ts";

/** Counts of a run. Expected failures (`--expect`) are counted apart, not as failed, warned or blocked. */
export interface Summary {
  /** Cases run, controls included. */
  total: number;
  /** Cases that passed. */
  passed: number;
  /** MUST cases that failed and were not expected to. */
  failed: number;
  /** Cases whose control failed, not expected. */
  blocked: number;
  /** SHOULD cases that failed, not expected. */
  warned: number;
  /** Cases that could not run against this target (a missing client, endpoint or clock). */
  skipped: number;
  /** Cases that need a feature the server does not offer (capability discovery): neither passed nor failed. */
  not_offered: number;
  /** Cases that did not pass, as the expectations file says they would. */
  expected: number;
  /** Cases the expectations file lists that passed: the deviation is fixed, remove the entry. */
  unexpected_passes: string[];
}

/** One root cause: a failing case and every case blocked because of it. */
export interface RootCause {
  /** The failing case's id. */
  id: string;
  /** Its title. */
  title: string;
  /** MUST or SHOULD. */
  level: CaseResult["level"];
  /** FAIL or WARN. */
  verdict: Verdict;
  /** Whether it breaks a security rule (those come first). */
  security: boolean;
  /** Whether the server refused as it should, only with another error code or status. */
  wording: boolean;
  /** Why it failed. */
  message: string;
  /** The reason from the expectations file, when the failure is expected. */
  expected?: string;
  /** Cases blocked by this one (directly or through a chain). */
  blocks: string[];
  /** Other cases that failed the same way (the same rule broken, e.g. a 401 without WWW-Authenticate). */
  also: string[];
}

/** What a failure says without the case's own "what: " prefix: equal for one rule broken in many places. */
function sameWay(c: RootCause): string | undefined {
  const text = (c.message.split("\n")[0] ?? "").replace(/^[^:]*: /, "");
  return text.length >= 20 && text !== c.message.split("\n")[0] ? `${c.verdict}|${c.expected ?? ""}|${text}` : undefined;
}

/** One cell of the coverage matrix. */
export interface MatrixCell {
  /** The grant and client type (the table's column). */
  column: Column;
  /** The body field (the table's row). */
  row: Row;
  /** The cell as the spec's table has it: a fixed value, "required" or "not sent". */
  spec: string;
  /** The worst verdict of the cell's cases; null when none ran. */
  verdict: Verdict | null;
  /** The cases that exercise the cell, with their verdicts. */
  cases: { id: string; verdict: Verdict }[];
}

/** A whole run, as `--json` writes it. */
export interface Report {
  /** Names the suite that wrote the report. */
  suite: "oauth2-fetch-server conformance";
  /** The server tested. */
  target: { name: string; base_url: string };
  /** The rules applied. */
  profile: Profile;
  /** Where the metadata was read, and what the server offers (capability discovery); absent when not run. */
  discovery?: { metadata_url: string; metadata_found: boolean; problem?: string; features: FeatureStatus[] };
  /** When the run began, ISO 8601. */
  started_at: string;
  /** How long the run took. */
  duration_ms: number;
  /** The counts. */
  summary: Summary;
  /** Failures with the cases they block, most severe first. */
  root_causes: RootCause[];
  /** Every case's result, in run order. */
  results: CaseResult[];
  /** The spec's body-field table, cell by cell. */
  matrix: MatrixCell[];
}

const SEVERITY: Record<Verdict, number> = { NOT_OFFERED: 0, SKIP: 0, PASS: 1, BLOCKED: 2, WARN: 3, FAIL: 4 };

/** A verdict as reports print it. */
export function verdictLabel(verdict: Verdict): string {
  return verdict === "NOT_OFFERED" ? "NOT OFFERED" : verdict;
}

/** Counts results by verdict; expected failures apart. */
export function summarize(results: readonly CaseResult[]): Summary {
  const open = results.filter((r) => r.expected === undefined || r.verdict === "PASS" || r.verdict === "SKIP" || r.verdict === "NOT_OFFERED");
  const count = (v: Verdict) => open.filter((r) => r.verdict === v).length;
  return {
    total: results.length,
    passed: count("PASS"),
    failed: count("FAIL"),
    blocked: count("BLOCKED"),
    warned: count("WARN"),
    skipped: count("SKIP"),
    not_offered: count("NOT_OFFERED"),
    expected: results.length - open.length,
    unexpected_passes: results.filter((r) => r.expected !== undefined && r.verdict === "PASS").map((r) => r.id),
  };
}

/**
 * The root causes: every failed or warned case, and every case blocked by its own control, each with the
 * cases blocked because of it; ordered MUST before SHOULD, security before the rest, real failures before
 * wording (a refusal with another error code), then by how many cases each blocks.
 */
export function rootCauses(results: readonly CaseResult[]): RootCause[] {
  const roots = results.filter((r) => r.verdict === "FAIL" || r.verdict === "WARN" || (r.verdict === "BLOCKED" && r.blocked_by === "control"));
  const causes = roots.map((r): RootCause => {
    const cause: RootCause = {
      id: r.id,
      title: r.title,
      level: r.level,
      verdict: r.verdict,
      security: r.security,
      wording: r.wording === true,
      message: r.message ?? "",
      blocks: results.filter((b) => b.blocked_by === r.id).map((b) => b.id),
      also: [],
    };
    if (r.expected !== undefined) cause.expected = r.expected;
    return cause;
  });
  const rank = (c: RootCause) =>
    (c.verdict === "BLOCKED" ? 8 : 0) + (c.level === "MUST" ? 0 : 4) + (c.security ? 0 : 2) + (c.wording ? 1 : 0);
  causes.sort((a, b) => rank(a) - rank(b) || b.blocks.length - a.blocks.length);
  // One rule broken in many places is one cause: the later ones are folded into the first.
  const first = new Map<string, RootCause>();
  return causes.filter((c) => {
    const key = sameWay(c);
    if (key === undefined) return true;
    const lead = first.get(key);
    if (lead === undefined) {
      first.set(key, c);
      return true;
    }
    lead.also.push(c.id, ...c.also);
    lead.blocks.push(...c.blocks);
    return false;
  });
}

/** The coverage matrix: every cell of the body-field table with the cases that exercised it. */
export function buildMatrix(results: readonly CaseResult[]): MatrixCell[] {
  const cells: MatrixCell[] = [];
  for (const row of ROWS) {
    for (const column of Object.keys(COLUMNS) as Column[]) {
      const cases = results
        .filter((r) => r.cells.some((c) => c.column === column && c.row === row))
        .map((r) => ({ id: r.id, verdict: r.verdict }));
      // A skipped case says nothing about the cell unless nothing else ran.
      const verdict = cases.reduce<Verdict | null>(
        (worst, c) => worst === null || SEVERITY[c.verdict] > SEVERITY[worst] ? c.verdict : worst,
        null,
      );
      cells.push({ column, row, spec: BODY_FIELDS[row][column], verdict, cases });
    }
  }
  return cells;
}

/** Assembles the report of a run. */
export function buildReport(
  target: { name: string; base_url: string },
  results: CaseResult[],
  startedAt: Date,
  profile: Profile = "spec",
  discovery?: Discovery,
): Report {
  const found = discovery === undefined ? {} : {
    discovery: {
      metadata_url: discovery.metadata_url,
      metadata_found: discovery.metadata !== undefined,
      ...(discovery.problem === undefined ? {} : { problem: discovery.problem }),
      features: discovery.features,
    },
  };
  return {
    suite: "oauth2-fetch-server conformance",
    target: { name: target.name, base_url: target.base_url },
    profile,
    ...found,
    started_at: startedAt.toISOString(),
    duration_ms: Date.now() - startedAt.getTime(),
    summary: summarize(results),
    root_causes: rootCauses(results),
    results,
    matrix: buildMatrix(results),
  };
}

function indent(text: string, prefix: string): string {
  return text.split("\n").map((line) => prefix + line).join("\n");
}

/** One exchange as request and response lines. */
export function formatExchange(e: Exchange): string {
  const lines = [`> ${e.request.method} ${e.request.url}`];
  for (const [k, v] of Object.entries(e.request.headers)) lines.push(`>   ${k}: ${v}`);
  if (e.request.body !== undefined) lines.push(indent(e.request.body, ">   "));
  if (e.response) {
    lines.push(`< ${e.response.status}`);
    for (const [k, v] of Object.entries(e.response.headers)) lines.push(`<   ${k}: ${v}`);
    if (e.response.body !== "") lines.push(indent(e.response.body, "<   "));
  } else lines.push(`< (no response: ${e.error ?? "unknown error"})`);
  return lines.join("\n");
}

/** The coverage matrix as a text table. */
export function formatMatrix(cells: readonly MatrixCell[]): string {
  const columns = Object.keys(COLUMNS) as Column[];
  const width = 13;
  const pad = (s: string, n: number) => s.length >= n ? `${s} ` : s + " ".repeat(n - s.length);
  const lines = [pad("field", 16) + columns.map((c) => pad(c, width)).join("")];
  for (const row of ROWS) {
    let line = pad(row, 16);
    for (const column of columns) {
      const cell = cells.find((c) => c.column === column && c.row === row)!;
      const tag = cell.spec === "not sent" ? "-" : "R";
      line += pad(cell.verdict === null ? `${tag} (none)` : `${tag} ${cell.verdict} ${cell.cases.length}`, width);
    }
    lines.push(line);
  }
  lines.push("");
  lines.push("R = required (or a fixed value), - = not sent; then the worst verdict and the number of cases.");
  lines.push(columns.map((c) => `${c} = ${COLUMNS[c]}`).join("; "));
  return lines.join("\n");
}

/** Options of {@link formatText}. */
export interface TextOptions {
  /** Show messages of passing cases and every exchange of every case (when traced). */
  verbose?: boolean;
}

/** The one-line tally a CI log ends with: `N passed, N failed, N blocked`. */
export function tally(summary: Summary): string {
  return `${summary.passed} passed, ${summary.failed} failed, ${summary.blocked} blocked`;
}

function causeLine(c: RootCause): string {
  const kind = [c.level, c.security ? "security" : "", c.wording ? "wording" : "", c.verdict === "BLOCKED" ? "control failed" : ""]
    .filter((k) => k !== "").join(", ");
  const blocks = c.blocks.length > 0 ? `; blocks ${c.blocks.length}: ${c.blocks.join(", ")}` : "";
  const also = c.also.length > 0 ? `; the same in ${c.also.length} more: ${c.also.join(", ")}` : "";
  const expected = c.expected !== undefined ? ` (expected: ${c.expected})` : "";
  return `  ${c.id} [${kind}] ${c.title}${expected}${blocks}${also}\n${indent(c.message.split("\n")[0] ?? "", "      ")}`;
}

/**
 * The human-readable report: the root causes first (most severe first), then every case grouped by area with
 * evidence, the body-field matrix, and the counts. Its last line is {@link tally}.
 */
export function formatText(report: Report, options: TextOptions = {}): string {
  const out: string[] = [`Conformance of ${report.target.name} (${report.target.base_url}), profile ${report.profile}`, ""];
  const open = report.root_causes.filter((c) => c.expected === undefined);
  const known = report.root_causes.filter((c) => c.expected !== undefined);
  if (open.length > 0) {
    out.push(`Root causes (${open.length}), most severe first:`);
    for (const c of open) out.push(causeLine(c));
    out.push("");
  }
  if (known.length > 0) {
    out.push(`Expected failures (${known.length}):`);
    for (const c of known) out.push(causeLine(c));
    out.push("");
  }
  if (report.discovery !== undefined) out.push(...formatFeatures(report.discovery), "");
  for (const [area, title] of Object.entries(AREAS)) {
    const results = report.results.filter((r) => r.area === area);
    if (results.length === 0) continue;
    out.push(title);
    for (const r of results) {
      const tag = r.expected !== undefined && r.verdict !== "PASS" && r.verdict !== "NOT_OFFERED" ? ` (expected: ${r.expected})` : "";
      const control = r.control ? " (control)" : "";
      out.push(`  ${verdictLabel(r.verdict).padEnd(11)}  ${r.id}${control}  ${r.title}  [${r.level}; ${r.ref}]${tag}`);
      if (r.message !== undefined && (r.verdict !== "PASS" || options.verbose)) out.push(indent(r.message, "               "));
      const shown = options.verbose && r.trace ? r.trace : r.evidence;
      for (const e of shown) out.push(indent(formatExchange(e), "               "));
    }
    out.push("");
  }
  if (report.matrix.some((c) => c.verdict !== null)) out.push("Body-field table coverage (spec §4.2)", formatMatrix(report.matrix), "");
  const s = report.summary;
  if (s.unexpected_passes.length > 0) {
    out.push(`Expected to fail but passed (remove them from the expectations file): ${s.unexpected_passes.join(", ")}`);
  }
  out.push(
    `${s.total} cases in ${report.duration_ms} ms (profile ${report.profile}): ${s.passed} passed, ${s.failed} failed (MUST), ` +
      `${s.blocked} blocked, ${s.warned} warnings (SHOULD), ${s.skipped} skipped, ${s.not_offered} not offered, ${s.expected} expected failures`,
  );
  out.push(tally(s));
  return out.join("\n");
}

/** The discovery block of the text report: what the server offers, and what it does not. */
function formatFeatures(d: NonNullable<Report["discovery"]>): string[] {
  const lines = [`Features (capability discovery, ${d.metadata_found ? `metadata at ${d.metadata_url}` : `no metadata: ${d.problem ?? d.metadata_url}`}):`];
  for (const f of d.features) lines.push(`  ${(f.offered ? "offered" : "not offered").padEnd(11)}  ${f.id.padEnd(28)} ${f.detail}`);
  return lines;
}

/** The report as pretty JSON. */
export function formatJson(report: Report): string {
  return JSON.stringify(report, null, 2);
}

// XML 1.0 (§2.2) allows no control character but tab, LF and CR, and a case's message may carry any.
// deno-lint-ignore no-control-regex
const XML_FORBIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g;
const xml = (s: string) =>
  s.replace(XML_FORBIDDEN, "").replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/**
 * The report as JUnit XML for CI systems: one testsuite per area, one testcase per case. FAIL is a
 * `<failure>`; BLOCKED, SKIP and expected failures are `<skipped>` with the reason; WARN passes with its
 * message in `<system-out>`.
 */
export function formatJunit(report: Report): string {
  const out = [`<?xml version="1.0" encoding="UTF-8"?>`];
  const s = report.summary;
  out.push(`<testsuites name="${xml(`conformance ${report.target.name} (${report.profile})`)}" tests="${s.total}" failures="${s.failed}" skipped="${s.blocked + s.skipped + s.not_offered + s.expected}" time="${report.duration_ms / 1000}">`);
  for (const [area, title] of Object.entries(AREAS)) {
    const results = report.results.filter((r) => r.area === area);
    if (results.length === 0) continue;
    const failures = results.filter((r) => r.verdict === "FAIL" && r.expected === undefined).length;
    const skipped = results.filter((r) => r.verdict === "SKIP" || r.verdict === "BLOCKED" || r.verdict === "NOT_OFFERED" || (r.expected !== undefined && r.verdict !== "PASS")).length;
    const time = results.reduce((t, r) => t + r.duration_ms, 0) / 1000;
    out.push(`  <testsuite name="${xml(title)}" tests="${results.length}" failures="${failures}" skipped="${skipped}" time="${time}">`);
    for (const r of results) {
      const head = `    <testcase classname="conformance.${area}" name="${xml(`${r.id}: ${r.title}`)}" time="${r.duration_ms / 1000}"`;
      const message = xml(r.message ?? "");
      const evidence = xml(r.evidence.map(formatExchange).join("\n\n"));
      if (r.expected !== undefined && r.verdict !== "PASS" && r.verdict !== "SKIP" && r.verdict !== "NOT_OFFERED") {
        out.push(`${head}><skipped message="${xml(`expected ${r.verdict}: ${r.expected}`)}"/></testcase>`);
      } else if (r.verdict === "FAIL") {
        out.push(`${head}><failure message="${message}" type="${r.level}">${evidence}</failure></testcase>`);
      } else if (r.verdict === "BLOCKED" || r.verdict === "SKIP" || r.verdict === "NOT_OFFERED") {
        out.push(`${head}><skipped message="${xml(`${verdictLabel(r.verdict)}: ${r.message ?? ""}`)}"/></testcase>`);
      } else if (r.verdict === "WARN") {
        out.push(`${head}><system-out>${xml(`WARN (SHOULD): ${r.message ?? ""}`)}\n${evidence}</system-out></testcase>`);
      } else out.push(`${head}/>`);
    }
    out.push("  </testsuite>");
  }
  out.push("</testsuites>");
  return out.join("\n");
}
