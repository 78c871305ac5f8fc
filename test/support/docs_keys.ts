// `npm run docs:keys`: rewrites the docs' tables generated from the option table (see docs_tables.ts), so that
// a new option or feature needs no hand edit of the README's config key table.
import { readFileSync, writeFileSync } from "node:fs";
import { GENERATED, withBlock } from "./docs_tables.ts";

for (const { file, name, render } of GENERATED) {
  const before = readFileSync(file, "utf8");
  const after = withBlock(before, name, render());
  if (after !== before) writeFileSync(file, after);
  console.log(`${after === before ? "unchanged" : "rewritten"}: ${file} (${name})`);
}
