/**
 * Runs the test tree on one runtime, with the files `test/runtimes.ts` lets it run:
 * `tsx test/run.ts bun|deno|node26 [-- extra runner arguments]`.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import process from "node:process";
import { type Runtime, runsOn } from "./runtimes.ts";

const runtime = process.argv[2] as Runtime;
const extra = process.argv.slice(3).filter((a) => a !== "--");
const root = join(import.meta.dirname, "..");

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" || entry.name === "fixtures" ? [] : walk(path);
    return /(\.test|_test)\.ts$/.test(entry.name) ? [path] : [];
  });
}

const files = walk(join(root, "test"))
  .map((path) => relative(join(root, "test"), path))
  // vitest, bun and deno differ in the file names they look for; the Deno shim's self-test is named for Deno.
  .filter((path) => path.endsWith(".test.ts") || runtime === "deno")
  .filter((path) => runsOn(path, runtime))
  .sort()
  .map((path) => `./test/${path}`);

const commands: Record<Runtime, [string, string[]]> = {
  // The Node that runs this script runs vitest: test:node26 puts Node 26 first on PATH.
  node22: [process.execPath, ["node_modules/vitest/vitest.mjs", "run", ...files]],
  node26: [process.execPath, ["node_modules/vitest/vitest.mjs", "run", ...files]],
  bun: ["bun", ["--config=test/bunfig.toml", "test", ...files]],
  deno: ["deno", ["test", "--allow-read", "--allow-env", "--allow-write", "--allow-run=deno", "--allow-net=127.0.0.1", ...files]],
};
const entry = commands[runtime];
if (entry === undefined) {
  console.error("usage: tsx test/run.ts node22|node26|bun|deno");
  process.exit(2);
}
const [command, args] = entry;
const result = spawnSync(command, [...args, ...extra], { cwd: root, stdio: "inherit" });
process.exit(result.status ?? 1);
