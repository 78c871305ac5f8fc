// The README's code runs: every block is checked. TypeScript and JavaScript blocks are type-checked against the
// package's own entry points (as a user imports them), JSON configs go through the config parser, shell blocks
// are syntax-checked and those marked `<!-- check: run -->` are run, the systemd unit's command line goes
// through the CLI parser. A block may be preceded by `<!-- prelude: TS -->`, declarations it assumes (the
// reader's own `pool`, say), and a block whose first line is `// NAME.ts: …` is a module the others import.
// Vitest on Node only (it spawns tsc and bash).
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { parseCommandLine } from "../lib/cli/args.ts";
import { parseConfig } from "../lib/reference/config.ts";

interface Block {
  lang: string;
  line: number;
  code: string;
  /** The HTML comment right before the block, if any. */
  note: string;
}

function blocks(markdown: string): Block[] {
  const found: Block[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    while (++i < lines.length && lines[i] !== "```") body.push(lines[i]!);
    const before = lines.slice(0, start).join("\n").trimEnd();
    const note = before.endsWith("-->") ? before.slice(before.lastIndexOf("<!--") + 4, -3).trim() : "";
    found.push({ lang: open[1]!, line: start + 1, code: body.join("\n"), note });
  }
  return found;
}

const README = readFileSync("README.md", "utf8");
const all = blocks(README);
const deno = JSON.parse(readFileSync("deno.json", "utf8")) as { exports: Record<string, string> };
const WORK = resolve(".artifacts/readme");

test("every block has a language this test knows how to check", () => {
  const known = new Set(["ts", "js", "sh", "json", "ini", "nginx"]);
  expect(all.filter((b) => !known.has(b.lang)).map((b) => `line ${b.line}: "${b.lang}"`)).toEqual([]);
  expect(all.length).toBeGreaterThan(20);
});

test("the README points at nothing outside the repository and imports the package by its name", () => {
  for (const block of all.filter((b) => b.lang === "ts" || b.lang === "js")) {
    expect(block.code, `line ${block.line}`).not.toMatch(/from "\.\.?\/(mod|lib)/);
  }
});

test("each Deno and each Bun block is one complete alternative", () => {
  for (const block of all.filter((b) => /\b(Deno|Bun)\.serve\b|serve(Deno|Bun)\(/.test(b.code))) {
    const ways = [/\bDeno\.serve\(/, /serveDeno\(/, /\bBun\.serve\(/, /serveBun\(/].filter((re) => re.test(block.code));
    expect(ways.length, `line ${block.line} mixes alternatives`).toBe(1);
    expect(block.code, `line ${block.line}`).not.toMatch(/\/\/ or,/);
  }
});

/** Writes every TypeScript and JavaScript block into its own folder under .artifacts/readme (once); returns the files. */
let prepared: string[] | undefined;
function prepare(): string[] {
  if (prepared) return prepared;
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const code = all.filter((b) => b.lang === "ts" || b.lang === "js");
  const modules = code.filter((b) => /^\/\/ \w+\.ts: /.test(b.code));
  const files: string[] = [];
  for (const block of code) {
    if (modules.includes(block)) continue;
    const dir = join(WORK, `line-${block.line}`);
    mkdirSync(dir);
    for (const m of modules) writeFileSync(join(dir, /^\/\/ (\w+\.ts)/.exec(m.code)![1]!), m.code);
    const prelude = block.note.startsWith("prelude:") ? `${block.note.slice("prelude:".length).trim()}\n` : "";
    const named = /^\/\/ (\w+\.(?:ts|js))\s*$/m.exec(block.code.split("\n")[0] ?? "")?.[1];
    const file = join(dir, named ?? `block.${block.lang}`);
    writeFileSync(file, prelude + block.code + "\n");
    files.push(file);
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
    files: [join(WORK, "globals.d.ts"), ...files],
  }));
  prepared = files;
  return files;
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
    // Name the README line of each error.
    expect(output.replace(/\.artifacts\/readme\/line-(\d+)\//g, "README.md block at line $1: ")).toBe("");
  }, 150_000);
});

test("blocks that use Deno's own API type-check under deno check, with Deno's real types", () => {
  const imports = Object.fromEntries(Object.entries(deno.exports).map(([key, source]) => [
    key === "." ? "oauth2-fetch-server" : `oauth2-fetch-server/${key.slice(2)}`,
    `file://${resolve(source)}`,
  ]));
  prepare();
  const dirs = all.filter((b) => b.lang === "ts" && /\bDeno\./.test(b.code)).map((b) => join(WORK, `line-${b.line}`));
  expect(dirs.length).toBeGreaterThan(1);
  writeFileSync(join(WORK, "import_map.json"), JSON.stringify({ imports }));
  const files = dirs.map((dir) => join(dir, readdirSync(dir).find((f) => f !== "auth.ts")!));
  let output = "";
  try {
    execFileSync(resolve("node_modules/.bin/deno"), ["check", "--no-config", "--no-lock", `--import-map=${join(WORK, "import_map.json")}`, ...files], {
      encoding: "utf8", timeout: 120_000, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" },
    });
  } catch (error) {
    output = String((error as { stderr?: string }).stderr ?? error);
  }
  expect(output).toBe("");
}, 150_000);

test("every JSON block parses, and every config in it passes the config parser", () => {
  const env = (name: string) => `value-of-${name}-0123456789abcdef0123456789`;
  for (const block of all.filter((b) => b.lang === "json")) {
    const value = JSON.parse(block.code);
    if (typeof value === "object" && value !== null && "scopes" in value) {
      const config = { ...value };
      // A DATABASE_URL from the environment: any store URL will do for the parser.
      expect(() => parseConfig(config, `README.md line ${block.line}`, env), `line ${block.line}`).not.toThrow();
    }
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
      expect(() => parseCommandLine(args), line).not.toThrow();
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
      expect(() => execFileSync("bash", ["-n"], { input: block.code }), `line ${block.line}`).not.toThrow();
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
      expect(output.length, `line ${block.line}`).toBeGreaterThan(0);
    }
  }, 120_000);
});
