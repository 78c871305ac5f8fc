/**
 * The case catalogue: ids stable and unique, every cell of the spec's body-field table covered, and the
 * README's case table generated from the code.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ALL_CASES, BODY_FIELDS, casesMarkdown, type Column, FEATURES, featuresMarkdown, type Row } from "../../conformance/mod.ts";

const README = new URL("../../conformance/README.md", import.meta.url);

describe("the case catalogue", () => {
  it("has unique, readable ids and a reference for every case", () => {
    const ids = ALL_CASES.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const c of ALL_CASES) {
      expect(c.id).toMatch(/^(AUTHZ|TOKEN|RESP|BEARER|SEC|CONC|PAGES|META|REVOKE|MCP|JWT|ID)-[A-Z0-9_-]+$/);
      expect(c.ref).toMatch(/spec §|RFC \d+/);
    }
  });

  it("has one case per cell of the body-field table, named after it", () => {
    for (const [row, columns] of Object.entries(BODY_FIELDS) as [Row, Record<Column, string>][]) {
      for (const [column, value] of Object.entries(columns) as [Column, string][]) {
        const kind = value === "not sent" ? "NOT-SENT" : "REQUIRED";
        const id = `TOKEN-${column}-${row.toUpperCase()}-${kind}`;
        const found = ALL_CASES.find((c) => c.id === id);
        expect(found?.cells, id).toEqual([{ column, row }]);
      }
    }
    expect(Object.values(BODY_FIELDS).flatMap((r) => Object.values(r))).toHaveLength(40);
  });

  it("matches the README's case table", () => {
    const text = readFileSync(README, "utf8");
    const section = /<!-- cases:start -->\n([\s\S]*?)\n<!-- cases:end -->/.exec(text)?.[1];
    expect(section, "Regenerate with: npx tsx conformance/cli.ts --list --markdown").toBe(casesMarkdown(ALL_CASES));
  });

  it("matches the README's feature table, and every case names known features", () => {
    const text = readFileSync(README, "utf8");
    const section = /<!-- features:start -->\n([\s\S]*?)\n<!-- features:end -->/.exec(text)?.[1];
    expect(section).toBe(featuresMarkdown());
    for (const c of ALL_CASES) for (const f of c.features ?? []) expect(Object.keys(FEATURES), c.id).toContain(f);
  });
});

describe("the suite's library files", () => {
  it("use Web APIs only: nothing but cli.ts and its document server names process, Deno, Bun, Buffer or node:*", async () => {
    const { readdirSync } = await import("node:fs");
    const dir = new URL("../../conformance/", import.meta.url);
    // targets/ holds launchers of third-party servers (started with --serve), never imported by the suite.
    const files = (readdirSync(dir, { recursive: true }) as string[])
      .filter((f) => f.endsWith(".ts") && f !== "cli.ts" && !f.startsWith("targets/"));
    expect(files.length).toBeGreaterThan(20);
    // document_server.ts (the CIMD cases' loopback listener, on node:http) is the CLI's: no library file imports it.
    const NODE_ONLY = "document_server.ts";
    for (const file of files) {
      const code = readFileSync(new URL(file, dir), "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
      if (file === NODE_ONLY) continue;
      expect(code, file).not.toMatch(/\b(process|Deno|Bun|Buffer)\s*[.[(]|["']node:/);
      expect(code, file).not.toContain(NODE_ONLY);
    }
  });
});
