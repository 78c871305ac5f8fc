/**
 * CI's conformance step (`npm run conformance:ci`, the last command of .ci/run): the suite against the
 * reference server on Node, Deno and Bun over HTTP, and against the servers nobody here wrote, each with its
 * expectations file. Prints one tally per run, the full report of a run that failed, and ends with the line
 * `N passed, N failed` summed over every run (CI reads the last line).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import type { Report } from "../../conformance/mod.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SERVE = "lib/cli/serve.ts --port 0";

const PROFILES = ["spec", "rfc6749", "oauth2.1", "mcp"] as const;
const REFERENCE = ["--target", "conformance/targets/reference.json"];

/** The servers nobody here wrote: launcher, target, expectations. */
const FOREIGN = [
  { name: "oidc-provider", launcher: "conformance/targets/oidc_provider.ts", file: "oidc-provider" },
  { name: "@node-oauth/oauth2-server", launcher: "conformance/targets/node_oauth.ts", file: "node-oauth" },
  { name: "workers-oauth-provider", launcher: "conformance/targets/workers_oauth_provider.ts", file: "workers-oauth-provider" },
];

/** One run of the CLI: a name and its arguments (after `conformance/cli.ts`). */
export const RUNS: { name: string; args: string[] }[] = [
  ...PROFILES.map((p) => ({ name: `reference (Node) ${p}`, args: [...REFERENCE, "--profile", p, "--serve", `tsx ${SERVE}`] })),
  {
    name: "reference as MCP deployment mcp",
    args: ["--target", "conformance/targets/reference-mcp.json", "--profile", "mcp", "--module", "conformance/targets/reference_mcp_app.ts"],
  },
  { name: "reference (Deno) spec", args: [...REFERENCE, "--serve", "deno run --allow-net --allow-read lib/cli/serve_deno.ts --port 0"] },
  { name: "reference (Bun) spec", args: [...REFERENCE, "--serve", "bun lib/cli/serve_bun.ts --port 0"] },
  ...FOREIGN.flatMap((f) =>
    PROFILES.map((p) => ({
      name: `${f.name} ${p}`,
      args: [
        "--target", `conformance/targets/${f.file}.json`, "--profile", p, "--serve", `tsx ${f.launcher}`,
        "--expect", `conformance/targets/${f.file}.expect.jsonc`,
      ],
    }))
  ),
];

function run(args: string[], json: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn("tsx", ["conformance/cli.ts", ...args, "--json", json], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    // Bounded: a run that hangs is killed and counted as failed.
    const timer = setTimeout(() => child.kill("SIGKILL"), 300_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), "conformance-ci-"));
let passed = 0;
let failed = 0;
try {
  for (const [i, { name, args }] of RUNS.entries()) {
    const json = join(dir, `${i}.json`);
    const { code, output } = await run(args, json);
    let report: Report | undefined;
    try {
      report = JSON.parse(readFileSync(json, "utf8")) as Report;
    } catch {
      report = undefined;
    }
    if (report === undefined || code !== 0) {
      console.log(output);
      console.log(`${name}: exit ${code}`);
      failed += Math.max(1, report?.summary.failed ?? 0);
      if (report !== undefined) passed += report.summary.passed;
      continue;
    }
    const s = report.summary;
    console.log(`${name.padEnd(36)} ${s.passed} passed, ${s.failed} failed, ${s.blocked} blocked, ${s.expected} expected failures, ${s.skipped} skipped, ${s.warned} warnings`);
    passed += s.passed;
    failed += s.failed;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
