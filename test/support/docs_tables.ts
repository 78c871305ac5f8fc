/**
 * The tables of the docs that are generated from the one option table, so that a new option or feature needs no
 * hand edit: the README's config key table, the per-user and per-client keys of `lib/reference/README.md`, and
 * the option table of `lib/README.md`. Each sits between `<!-- NAME:begin -->` and `<!-- NAME:end -->`.
 * `npm run docs:keys` writes them (`docs_keys.ts`); `test/features/table.test.ts` fails when one is stale.
 */
import { configKeys, configPathOf } from "../../lib/core/option_config.ts";
import { configKey, type OptionSpec } from "../../lib/core/option_table.ts";
import { FEATURES } from "../../lib/features/index.ts";
import { CONFIG_FIELDS } from "../../lib/reference/config_fields.ts";
import { OPTIONS } from "../../lib/server.ts";

/** One generated table: the file it lives in, its marker name, and its content. */
export interface GeneratedTable {
  readonly file: string;
  readonly name: string;
  render(): string;
}

const cell = (text: string): string => text.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");
const table = (head: readonly string[], rows: readonly (readonly string[])[]): string =>
  [`| ${head.join(" | ")} |`, `|${head.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`)].join("\n");

/** The README's config key table: every config key, depth first, as `configKeys` lists them. */
export function configKeyTable(): string {
  return table(["key", "meaning"], configKeys(CONFIG_FIELDS).map((r) => [`\`${r.key}\``, r.doc]));
}

/** The keys of each item of the config file's lists of objects (`users[]`, `clients[]`, `trusted_issuers[]`). */
export function configItemKeyTable(): string {
  const rows: string[][] = [];
  for (const spec of CONFIG_FIELDS) {
    const type = spec.type;
    const key = configKey(spec);
    if (type.kind !== "list" || type.items.kind !== "object" || key === null) continue;
    const { fields, required: requiredKeys = [] } = type.items;
    const required = new Set(fields.filter((f) => requiredKeys.includes(f.key)).map((f) => configKey(f)));
    for (const row of configKeys(fields, `${key}[].`)) {
      const own = row.key.slice(key.length + 3);
      rows.push([`\`${row.key}\``, required.has(own) ? `Required. ${row.doc}` : row.doc]);
    }
  }
  return table(["key", "meaning"], rows);
}

/** The library's option table: every option, its config key, the feature that adds it, and its doc. */
export function optionTable(): string {
  const featureOf = new Map<string, string>();
  for (const feature of FEATURES) for (const option of feature.options) featureOf.set(option.key, feature.name);
  const rows: string[][] = [];
  const walk = (specs: readonly OptionSpec[], prefix: string, top: string | undefined) => {
    for (const spec of specs) {
      const path = prefix + spec.key;
      const owner = featureOf.get(top ?? spec.key);
      const key = configPathOf(OPTIONS, path);
      rows.push([
        `\`${path}\``,
        key === undefined ? "library only" : `\`${key}\``,
        owner === undefined ? "core" : `[${owner}](features/${owner}.md)`,
        spec.doc,
      ]);
      if (spec.type.kind === "object") walk(spec.type.fields, `${path}.`, top ?? spec.key);
    }
  };
  walk(OPTIONS, "", undefined);
  return table(["option", "config key", "from", "meaning"], rows);
}

/** Every generated table of the docs. */
export const GENERATED: readonly GeneratedTable[] = [
  { file: "README.md", name: "config-keys", render: configKeyTable },
  { file: "lib/reference/README.md", name: "config-item-keys", render: configItemKeyTable },
  { file: "lib/README.md", name: "options", render: optionTable },
];

const markers = (name: string) => [`<!-- ${name}:begin -->\n`, `\n<!-- ${name}:end -->`] as const;

/** The text between a table's markers, or undefined when the markers are missing. */
export function blockOf(markdown: string, name: string): string | undefined {
  const [begin, end] = markers(name);
  const start = markdown.indexOf(begin);
  const stop = markdown.indexOf(end, start + begin.length - 1);
  if (start < 0 || stop < 0) return undefined;
  return markdown.slice(start + begin.length, stop);
}

/** The markdown with a table's block replaced; throws when the markers are missing. */
export function withBlock(markdown: string, name: string, content: string): string {
  const [begin, end] = markers(name);
  const start = markdown.indexOf(begin);
  const stop = markdown.indexOf(end, start + begin.length - 1);
  if (start < 0 || stop < 0) throw new Error(`no <!-- ${name}:begin --> and <!-- ${name}:end --> markers`);
  return markdown.slice(0, start + begin.length) + content + markdown.slice(stop);
}
