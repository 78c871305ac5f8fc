// `npm run mutation:score [-- reports/mutation/a.json b.json …] [--survivors] [--aside]`: Stryker's score and the
// behaviour-changing score, per file and in total, from one or more Stryker JSON reports (a later report wins
// per file, so runs on disjoint files merge). The behaviour-changing score leaves aside, and counts:
//  (a) `Ignored` mutants: equivalent ones we disable with `// Stryker disable next-line <Mutator>: <reason>`;
//  (b) `StringLiteral` mutants of prose only: the original literal holds a space and is an `error_description`
//      (RFC 6749 §5.2: human-readable, clients must not rely on it). Strict: only the value of a `description:`
//      property, the `.description ?? "…"` fallback, or the `description` argument of a helper whose
//      parameter is named so. A code, header value, URL, field name or scope is never prose.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

interface Position { line: number; column: number }
interface Mutant {
  id: string;
  mutatorName: string;
  replacement?: string;
  status: string;
  location: { start: Position; end: Position };
}
interface FileResult { source: string; mutants: Mutant[] }
interface Report { files: Record<string, FileResult> }

const DETECTED = new Set(["Killed", "Timeout"]);
const UNDETECTED = new Set(["Survived", "NoCoverage"]);

/** The literal's text in the source (Stryker's positions: 1-based lines and columns). */
function slice(source: string, { start, end }: Mutant["location"]): { before: string; text: string } {
  const lines = source.split("\n");
  const offset = (p: Position): number =>
    lines.slice(0, p.line - 1).reduce((n, l) => n + l.length + 1, 0) + p.column - 1;
  return { before: source.slice(0, offset(start)), text: source.slice(offset(start), offset(end)) };
}

/**
 * Helpers that take a description: `const name = (…, description: string…) =>` or `function name(…)`, with
 * the argument's index. A file's own helpers, or exported ones (`exported`) from any file of lib/.
 */
function descriptionSinks(sources: string[], exported: boolean): Map<string, number> {
  const sinks = new Map<string, number>();
  const definition = exported
    ? /export\s+(?:const\s+(\w+)\s*=\s*\(|function\s+(\w+)\s*\()([^)]*)\)/g
    : /(?:const\s+(\w+)\s*=\s*\(|function\s+(\w+)\s*\()([^)]*)\)/g;
  for (const source of sources) {
    for (const m of source.matchAll(definition)) {
      const name = m[1] ?? m[2];
      const params = (m[3] ?? "").split(/,(?![^(]*\))/).map((p) => p.trim().split(/[?:\s]/)[0]);
      const index = params.indexOf("description");
      if (name !== undefined && index >= 0) sinks.set(name, index);
    }
  }
  return sinks;
}

function isProse(mutant: Mutant, source: string, exportedSinks: Map<string, number>): boolean {
  if (mutant.mutatorName !== "StringLiteral") return false;
  const { before, text } = slice(source, mutant.location);
  if (!/^["'`]/.test(text) || !text.includes(" ")) return false;
  const tail = before.slice(-300);
  if (/\bdescription\s*:\s*$/.test(tail) || /\.description\s*\?\?\s*$/.test(tail)) return true;
  const call = /\b(\w+)\(\s*((?:"[a-z_]+"\s*,\s*)*)$/.exec(tail);
  if (call === null) return false;
  const index = (call[2] ?? "").split(",").length - 1;
  const name = call[1] ?? "";
  return (descriptionSinks([source], false).get(name) ?? exportedSinks.get(name)) === index;
}

interface Tally { total: number; detected: number; valid: number; ignored: number; prose: number; proseDetected: number; invalid: number }
const empty = (): Tally => ({ total: 0, detected: 0, valid: 0, ignored: 0, prose: 0, proseDetected: 0, invalid: 0 });

function libSources(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith(".ts")) out.push(readFileSync(path, "utf8"));
    }
  };
  try { walk(join(root, "lib")); } catch { /* not run from the project root: the reports' sources suffice */ }
  return out;
}

const args = process.argv.slice(2);
const showSurvivors = args.includes("--survivors");
const showAside = args.includes("--aside");
const paths = args.filter((a) => !a.startsWith("--"));
if (paths.length === 0) paths.push("reports/mutation/mutation.json");
const files = new Map<string, FileResult>();
for (const path of paths) {
  const report = JSON.parse(readFileSync(path, "utf8")) as Report;
  for (const [file, result] of Object.entries(report.files)) files.set(file, result);
}
const sinks = descriptionSinks([...libSources(process.cwd()), ...[...files.values()].map((f) => f.source)], true);

const pct = (n: number, d: number): string => (d === 0 ? "n/a" : `${((100 * n) / d).toFixed(1)} %`);
const rows: string[][] = [["file", "mutants", "stryker", "ignored", "prose", "behaviour", "killed/valid"]];
const all = empty();
const survivors: string[] = [];
const aside: string[] = [];
for (const [file, { source, mutants }] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
  const t = empty();
  for (const m of mutants) {
    t.total++;
    const where = `${file}:${m.location.start.line}:${m.location.start.column}`;
    if (m.status === "Ignored") {
      t.ignored++;
      aside.push(`${where} (a) Ignored ${m.mutatorName}`);
    }
    else if (!DETECTED.has(m.status) && !UNDETECTED.has(m.status)) t.invalid++;
    else {
      t.valid++;
      const detected = DETECTED.has(m.status);
      if (detected) t.detected++;
      if (isProse(m, source, sinks)) {
        t.prose++;
        aside.push(`${where} (b) ${m.status} ${slice(source, m.location).text}`);
        if (detected) t.proseDetected++;
      } else if (!detected) {
        survivors.push(`${where} ${m.status} ${m.mutatorName} -> ${m.replacement ?? "?"}`);
      }
    }
  }
  for (const k of Object.keys(all) as (keyof Tally)[]) all[k] += t[k];
  rows.push(row(file, t));
}
rows.push(row("total", all));

function row(name: string, t: Tally): string[] {
  const behaviourValid = t.valid - t.prose;
  const behaviourDetected = t.detected - t.proseDetected;
  return [name, String(t.total), pct(t.detected, t.valid), String(t.ignored), String(t.prose), pct(behaviourDetected, behaviourValid), `${behaviourDetected}/${behaviourValid}`];
}

const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
for (const r of rows) console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "));
console.log(
  `\nstryker = (killed + timeout) / (all but Ignored, CompileError, RuntimeError; NoCoverage counts as survived).` +
    `\nbehaviour = the same without ${all.ignored} Ignored (rule a) and ${all.prose} error_description StringLiteral mutants (rule b;` +
    ` ${all.proseDetected} of them killed anyway); ${all.invalid} compile/runtime errors excluded by both.`,
);
if (showAside) console.log(`\nleft aside (${aside.length}):\n${aside.join("\n")}`);
if (showSurvivors) console.log(`\nbehaviour-changing survivors (${survivors.length}):\n${survivors.join("\n")}`);
