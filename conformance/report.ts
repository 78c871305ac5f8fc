/**
 * The report: results grouped by area with evidence, the body-field coverage matrix, and the JSON form.
 *
 * @module
 */
import { BODY_FIELDS } from "./cases/body_fields.ts";
import { AREAS, type CaseResult, type Column, COLUMNS, type Exchange, type Row, ROWS, type Verdict } from "./types.ts";

/** Counts of a run. */
export interface Summary {
  total: number;
  passed: number;
  failed: number;
  warned: number;
  skipped: number;
}

/** One cell of the coverage matrix. */
export interface MatrixCell {
  column: Column;
  row: Row;
  /** The cell as the spec's table has it: a fixed value, "required" or "not sent". */
  spec: string;
  /** The worst verdict of the cell's cases; null when none ran. */
  verdict: Verdict | null;
  cases: { id: string; verdict: Verdict }[];
}

/** A whole run, as `--json` writes it. */
export interface Report {
  suite: "oauth2-fetch-server conformance";
  target: { name: string; base_url: string };
  started_at: string;
  duration_ms: number;
  summary: Summary;
  results: CaseResult[];
  matrix: MatrixCell[];
}

const SEVERITY: Record<Verdict, number> = { SKIP: 0, PASS: 1, WARN: 2, FAIL: 3 };

/** Counts results by verdict. */
export function summarize(results: readonly CaseResult[]): Summary {
  const count = (v: Verdict) => results.filter((r) => r.verdict === v).length;
  return { total: results.length, passed: count("PASS"), failed: count("FAIL"), warned: count("WARN"), skipped: count("SKIP") };
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
): Report {
  return {
    suite: "oauth2-fetch-server conformance",
    target: { name: target.name, base_url: target.base_url },
    started_at: startedAt.toISOString(),
    duration_ms: Date.now() - startedAt.getTime(),
    summary: summarize(results),
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

/** The human-readable report; its last line is `N passed, N failed`. */
export function formatText(report: Report, options: TextOptions = {}): string {
  const out: string[] = [`Conformance of ${report.target.name} (${report.target.base_url})`, ""];
  for (const [area, title] of Object.entries(AREAS)) {
    const results = report.results.filter((r) => r.area === area);
    if (results.length === 0) continue;
    out.push(title);
    for (const r of results) {
      out.push(`  ${r.verdict.padEnd(4)}  ${r.id}  ${r.title}  [${r.level}; ${r.ref}]`);
      if (r.message !== undefined && (r.verdict !== "PASS" || options.verbose)) out.push(indent(r.message, "        "));
      const shown = options.verbose && r.trace ? r.trace : r.evidence;
      for (const e of shown) out.push(indent(formatExchange(e), "        "));
    }
    out.push("");
  }
  out.push("Body-field table coverage (spec §4.2)", formatMatrix(report.matrix), "");
  const s = report.summary;
  out.push(`${s.total} cases in ${report.duration_ms} ms: ${s.passed} passed, ${s.failed} failed (MUST), ${s.warned} warnings (SHOULD), ${s.skipped} skipped`);
  out.push(`${s.passed} passed, ${s.failed} failed`);
  return out.join("\n");
}

/** The report as pretty JSON. */
export function formatJson(report: Report): string {
  return JSON.stringify(report, null, 2);
}
