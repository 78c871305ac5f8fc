/**
 * The README's case table, generated from the cases so that it cannot drift: a test compares it with the
 * README, and `npx tsx conformance/cli.ts --list --markdown` prints it.
 *
 * @module
 */
import type { CaseDef } from "./case.ts";
import { FEATURES, type FeatureId } from "./features.ts";
import { AREAS, COLUMNS } from "./types.ts";

const escape = (s: string) => s.replace(/\|/g, "\\|");

/** The case table in Markdown: one section per area, one row per case. */
export function casesMarkdown(cases: readonly CaseDef[]): string {
  const out: string[] = [];
  for (const [area, title] of Object.entries(AREAS)) {
    const list = cases.filter((c) => c.area === area);
    if (list.length === 0) continue;
    out.push(`### ${title}`, "", "| Case | Level | Profiles | Checks | Reference | Control | Features | Table cells |", "|---|---|---|---|---|---|---|---|");
    for (const c of list) {
      const cells = (c.cells ?? []).map((cell) => `${cell.row} × ${cell.column}`).join(", ");
      const control = c.positive ? "positive" : (c.needs ?? []).map((id) => `\`${id}\``).join(", ");
      const profiles = c.profiles.length === 4 ? "all" : c.profiles.join(", ");
      const features = (c.features ?? []).map((f) => `\`${f}\``).join(", ");
      out.push(`| \`${c.id}\` | ${c.level} | ${profiles} | ${escape(c.title)} | ${escape(c.ref)} | ${control} | ${features} | ${cells} |`);
    }
    out.push("");
  }
  out.push(`Columns: ${Object.entries(COLUMNS).map(([id, name]) => `${id} = ${name}`).join("; ")}.`);
  return out.join("\n");
}

/** The case list as plain text, one case a line. */
export function casesText(cases: readonly CaseDef[]): string {
  return cases.map((c) => `${c.id.padEnd(40)} ${c.level.padEnd(6)} ${(c.profiles.length === 4 ? "all" : c.profiles.join(",")).padEnd(20)} ${c.title}`).join("\n");
}

/** The feature table in Markdown: each feature with how discovery detects it. */
export function featuresMarkdown(): string {
  const rows = (Object.keys(FEATURES) as FeatureId[]).map((id) => {
    const f = FEATURES[id];
    return `| \`${id}\` | ${escape(f.title)} | ${escape(f.ref)} | ${escape(f.detected_by)} |`;
  });
  return ["| Feature | What | Defined in | Detected from the metadata by |", "|---|---|---|---|", ...rows].join("\n");
}
