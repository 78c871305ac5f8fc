// The docs' code runs: every block of the README and of the Markdown beside the code (every .md under lib/,
// examples/ and test/, and conformance/README.md) is checked. TypeScript and JavaScript blocks are type-checked
// against the package's own entry points (as a user imports them), JSON configs go through the config parser
// (a fragment as part of a minimal config), the conformance suite's JSONC through its own parsers, shell blocks
// are syntax-checked and those marked `<!-- check: run -->` are run, the systemd unit's command line goes through
// the CLI parser. A block may be preceded by `<!-- prelude: TS -->`, declarations it assumes (the reader's own
// `pool`, say), and a block whose first line is `// NAME.ts: …` is a module the other blocks of its file import.
// Relative links (and their #anchors) and repository paths in backticks must exist.
// Vitest on Node only (it spawns tsc and bash).
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, normalize, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { ALL_CASES } from "../conformance/cases/index.ts";
import { parseExpectations } from "../conformance/expect.ts";
import { parseJsonc } from "../conformance/jsonc.ts";
import { parseTarget } from "../conformance/target.ts";
import { PROFILES, type Profile } from "../conformance/types.ts";
import { parseCommandLine } from "../lib/cli/args.ts";
import { configKey } from "../lib/core/option_table.ts";
import { parseConfig } from "../lib/reference/config.ts";
import { CONFIG_FIELDS } from "../lib/reference/config_fields.ts";

interface Block {
  file: string;
  lang: string;
  line: number;
  code: string;
  /** The HTML comment right before the block, if any. */
  note: string;
}

/** The fenced blocks of a Markdown file, also those indented in a list. */
function blocks(file: string, markdown: string): Block[] {
  const found: Block[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!;
    const start = i;
    const body: string[] = [];
    while (++i < lines.length && lines[i] !== `${indent}\`\`\``) body.push(lines[i]!.slice(indent.length));
    const before = lines.slice(0, start).join("\n").trimEnd();
    const note = before.endsWith("-->") ? before.slice(before.lastIndexOf("<!--") + 4, -3).trim() : "";
    found.push({ file, lang: open[2]!, line: start + 1, code: body.join("\n"), note });
  }
  return found;
}

/** Every Markdown file under a folder (no node_modules, no dot folders). */
function markdownUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === "node_modules" || entry.name.startsWith(".") ? [] : markdownUnder(path);
    return entry.name.endsWith(".md") ? [path] : [];
  });
}

// History is kept as it was written: its commands and paths are those of their day.
const HISTORY = ["test/bench/HISTORY.md"];
const DOCS = ["README.md", "conformance/README.md", ...markdownUnder("lib"), ...markdownUnder("examples"), ...markdownUnder("test")]
  .filter((f) => !HISTORY.includes(f));
const TEXT = new Map(DOCS.map((f) => [f, readFileSync(f, "utf8")]));
const all = DOCS.flatMap((f) => blocks(f, TEXT.get(f)!));
const where = (b: Block) => `${b.file}:${b.line}`;
const deno = JSON.parse(readFileSync("deno.json", "utf8")) as { exports: Record<string, string> };
const WORK = resolve(".artifacts/readme");
const dirOf = (b: Block) => join(WORK, `${b.file.replace(/[^\w]+/g, "_")}-line-${b.line}`);

test("the docs checked are the README and the Markdown beside the code", () => {
  for (const file of ["README.md", "lib/README.md", "lib/storage/README.md", "lib/reference/README.md", "conformance/README.md", "test/bench/README.md", "test/mutation/README.md"]) {
    expect(DOCS).toContain(file);
  }
});

test("every block has a language this test knows how to check", () => {
  const known = new Set(["ts", "js", "sh", "json", "jsonc", "ini", "nginx", "text"]);
  expect(all.filter((b) => !known.has(b.lang)).map((b) => `${where(b)}: "${b.lang}"`)).toEqual([]);
  expect(all.length).toBeGreaterThan(40);
});

test("the docs point at nothing outside the repository and import the package by its name", () => {
  for (const block of all.filter((b) => b.lang === "ts" || b.lang === "js")) {
    expect(block.code, where(block)).not.toMatch(/from "\.\.?\/(mod|lib|conformance)/);
  }
});

test("each Deno and each Bun block is one complete alternative", () => {
  for (const block of all.filter((b) => /\b(Deno|Bun)\.serve\b|serve(Deno|Bun)\(/.test(b.code))) {
    const ways = [/\bDeno\.serve\(/, /serveDeno\(/, /\bBun\.serve\(/, /serveBun\(/].filter((re) => re.test(block.code));
    expect(ways.length, `${where(block)} mixes alternatives`).toBe(1);
    expect(block.code, where(block)).not.toMatch(/\/\/ or,/);
  }
});

describe("links", () => {
  /** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2. */
  const anchors = (markdown: string): Set<string> => {
    const seen = new Map<string, number>();
    const out = new Set<string>();
    for (const heading of markdown.replace(/^ *```[\s\S]*?^ *```/gm, "").match(/^#{1,6} .+$/gm) ?? []) {
      const base = heading.replace(/^#+ /, "").trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      out.add(n === 0 ? base : `${base}-${n}`);
    }
    return out;
  };
  const prose = (markdown: string) => markdown.replace(/^ *```[\s\S]*?^ *```/gm, "");

  test("every relative link names a file that exists, and its #anchor a heading there", () => {
    const broken: string[] = [];
    for (const [file, text] of TEXT) {
      for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split("#") as [string, string | undefined];
        const resolved = path === "" ? file : normalize(join(dirname(file), path));
        if (!existsSync(resolved)) {
          broken.push(`${file}: ${target}`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith(".md") && !anchors(readFileSync(resolved, "utf8")).has(anchor)) {
          broken.push(`${file}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  test("every repository path written in backticks exists (test/mutation/README.md names files as of its runs)", () => {
    const missing: string[] = [];
    for (const [file, text] of TEXT) {
      if (file === "test/mutation/README.md") continue;
      for (const [, path] of prose(text).matchAll(/`((?:lib|test|conformance|examples)\/[\w./-]*\.(?:ts|md|json|jsonc))`/g)) {
        if (!existsSync(path!)) missing.push(`${file}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

/** Writes every TypeScript and JavaScript block into its own folder under .artifacts/readme (once); returns the files. */
let prepared: Map<Block, string> | undefined;
function prepare(): Map<Block, string> {
  if (prepared) return prepared;
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const code = all.filter((b) => b.lang === "ts" || b.lang === "js");
  const modules = code.filter((b) => /^\/\/ \w+\.ts: /.test(b.code));
  const files = new Map<Block, string>();
  for (const block of code) {
    if (modules.includes(block)) continue;
    const dir = dirOf(block);
    mkdirSync(dir);
    for (const m of modules.filter((m) => m.file === block.file)) writeFileSync(join(dir, /^\/\/ (\w+\.ts)/.exec(m.code)![1]!), m.code);
    const prelude = block.note.startsWith("prelude:") ? `${block.note.slice("prelude:".length).trim()}\n` : "";
    const named = /^\/\/ (\w+\.(?:ts|js))\s*$/m.exec(block.code.split("\n")[0] ?? "")?.[1];
    const file = join(dir, named ?? `block.${block.lang}`);
    writeFileSync(file, prelude + block.code + "\n");
    files.set(block, file);
  }
  // What a user's project sees: the package's entry points by name, Node's types, and a loose typing of the
  // Deno and Bun globals the snippets touch (the Deno blocks are also checked by deno itself, below).
  const paths = Object.fromEntries(Object.entries(deno.exports).map(([key, source]) => [
    key === "." ? "oauth2-fetch-server" : `oauth2-fetch-server/${key.slice(2)}`,
    [resolve(source)],
  ]));
  writeFileSync(join(WORK, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(join(WORK, "globals.d.ts"), `
    declare var Deno: {
      serve(handler: (request: Request, info: any) => Response | Promise<Response>): any;
      serve(options: any, handler: (request: Request, info: any) => Response | Promise<Response>): any;
      addSignalListener(signal: "SIGINT" | "SIGTERM", handler: () => void): void;
      exit(code?: number): never;
    };
    declare var Bun: { serve(...args: any[]): any };
    declare module "express" {
      interface Req { get(name: string): string | undefined }
      interface Res { json(body: unknown): Res; status(code: number): Res; set(headers: Record<string, string>): Res }
      interface App {
        use(handler: unknown): void;
        get(path: string, handler: (req: Req, res: Res) => unknown): void;
        listen(port: number, host: string): unknown;
      }
      export default function express(): App;
    }
  `);
  writeFileSync(join(WORK, "tsconfig.json"), JSON.stringify({
    extends: resolve("tsconfig.json"),
    compilerOptions: {
      noEmit: true, allowJs: true, checkJs: true, isolatedDeclarations: false, declaration: false,
      rootDir: resolve("."), paths, types: ["node"], typeRoots: [resolve("node_modules/@types")],
    },
    files: [join(WORK, "globals.d.ts"), ...files.values()],
  }));
  prepared = files;
  return files;
}

/** Names the doc and line of each error in a tool's output. */
function located(output: string): string {
  let out = output;
  for (const block of all) out = out.replaceAll(`${dirOf(block)}/`, `${where(block)} block: `);
  return out.replaceAll(`${WORK}/`, "");
}

describe("TypeScript and JavaScript blocks type-check against the package", () => {
  test("tsc: no errors", () => {
    prepare();
    let output = "";
    try {
      execFileSync(process.execPath, [resolve("node_modules/typescript/bin/tsc"), "-p", join(WORK, "tsconfig.json")], { encoding: "utf8", timeout: 120_000 });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error);
    }
    expect(located(output.replace(/\.artifacts\/readme\//g, `${WORK}/`))).toBe("");
  }, 150_000);
});

test("blocks that use Deno's own API type-check under deno check, with Deno's real types", () => {
  const imports = Object.fromEntries(Object.entries(deno.exports).map(([key, source]) => [
    key === "." ? "oauth2-fetch-server" : `oauth2-fetch-server/${key.slice(2)}`,
    `file://${resolve(source)}`,
  ]));
  const files = prepare();
  const denoBlocks = [...files].filter(([b]) => b.lang === "ts" && /\bDeno\./.test(b.code)).map(([, file]) => file);
  expect(denoBlocks.length).toBeGreaterThan(1);
  writeFileSync(join(WORK, "import_map.json"), JSON.stringify({ imports }));
  let output = "";
  try {
    execFileSync(resolve("node_modules/.bin/deno"), ["check", "--no-config", "--no-lock", `--import-map=${join(WORK, "import_map.json")}`, ...denoBlocks], {
      encoding: "utf8", timeout: 120_000, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" },
    });
  } catch (error) {
    output = String((error as { stderr?: string }).stderr ?? error);
  }
  expect(located(output)).toBe("");
}, 150_000);

test("every JSON block parses, and every config in it, whole or a fragment, passes the config parser", () => {
  const env = (name: string) => `value-of-${name}-0123456789abcdef0123456789`;
  const topKeys = new Set(CONFIG_FIELDS.map(configKey).filter((k) => k !== null));
  let configs = 0;
  for (const block of all.filter((b) => b.lang === "json")) {
    const value = JSON.parse(block.code);
    if (typeof value !== "object" || value === null || Array.isArray(value)) continue;
    if (!Object.keys(value).some((k) => topKeys.has(k))) continue;
    // A fragment (`{ "cors": { … } }`) is checked as part of the smallest config: one scope.
    const config = { scopes: [{ name: "read", description: "Read" }], ...value };
    expect(() => parseConfig(config, where(block), env), where(block)).not.toThrow();
    configs++;
  }
  expect(configs).toBeGreaterThan(8);
});

test("every JSONC block is a conformance target or expectations file its parsers accept", () => {
  const jsonc = all.filter((b) => b.lang === "jsonc");
  expect(jsonc.length).toBeGreaterThan(1);
  for (const block of jsonc) {
    const value = parseJsonc(block.code) as Record<string, unknown>;
    if ("base_url" in value) expect(() => parseTarget(value), where(block)).not.toThrow();
    else for (const profile of Object.keys(PROFILES) as Profile[]) expect(() => parseExpectations(value, profile, ALL_CASES), where(block)).not.toThrow();
  }
});

test("the systemd unit starts the server with flags the command line accepts", () => {
  const units = all.filter((b) => b.lang === "ini");
  expect(units.length).toBeGreaterThan(0);
  for (const unit of units) {
    const exec = /^ExecStart=\S+ (.*)$/m.exec(unit.code)![1]!.replace(/%i/g, "8081");
    expect(parseCommandLine(exec.split(/\s+/)).kind, exec).toBe("run");
  }
  for (const block of all.filter((b) => b.lang === "sh" && /oauth2-fetch-server serve/.test(b.code))) {
    for (const line of block.code.replace(/\\\n\s*/g, "").split("\n").filter((l) => l.includes("oauth2-fetch-server serve"))) {
      const args = line.slice(line.indexOf("oauth2-fetch-server serve") + "oauth2-fetch-server ".length).trim().split(/\s+/);
      expect(() => parseCommandLine(args), `${where(block)}: ${line}`).not.toThrow();
    }
  }
});

test("the nginx block proxies with the forwarded headers the server trusts and keeps /metrics private", () => {
  for (const block of all.filter((b) => b.lang === "nginx")) {
    expect(block.code.split("{").length).toBe(block.code.split("}").length);
    expect(block.code).toContain("X-Forwarded-For");
    expect(block.code).toMatch(/location = \/metrics \{[^}]*deny all/);
  }
});

describe("shell blocks", () => {
  test("every one is valid shell", () => {
    for (const block of all.filter((b) => b.lang === "sh")) {
      expect(() => execFileSync("bash", ["-n"], { input: block.code }), where(block)).not.toThrow();
    }
  });

  test("those marked `check: run` run and exit 0 (npx oauth2-fetch-server is this checkout's command)", () => {
    prepare();
    const bin = join(WORK, "bin");
    mkdirSync(bin, { recursive: true });
    const cli = join(bin, "oauth2-fetch-server");
    writeFileSync(cli, `#!/bin/sh\nexec "${process.execPath}" --import tsx "${resolve("lib/cli/serve.ts")}" "$@"\n`);
    writeFileSync(join(bin, "npx"), `#!/bin/sh\nif [ "$1" = oauth2-fetch-server ]; then shift; exec "${cli}" "$@"; fi\necho "not run here: npx $*" >&2; exit 1\n`);
    chmodSync(cli, 0o755);
    chmodSync(join(bin, "npx"), 0o755);
    const runnable = all.filter((b) => b.lang === "sh" && b.note === "check: run");
    expect(runnable.length).toBeGreaterThan(1);
    for (const block of runnable) {
      const output = execFileSync("bash", ["-euo", "pipefail", "-c", block.code], {
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      });
      expect(output.length, where(block)).toBeGreaterThan(0);
    }
  }, 120_000);
});

