/**
 * CI's conformance step (`npm run conformance:ci`, the last command of .ci/run): the suite against the
 * reference server on Node, Deno and Bun over HTTP, and against the servers nobody here wrote, each with its
 * expectations file, two runs at a time (CONFORMANCE_JOBS; CI has 2 cores). Prints one tally per run, the full
 * report of a run that failed, and ends with the line `N passed, N failed` summed over every run (CI reads the
 * last line). `--reports DIR` also writes each server's HTML page, badge and shields.io JSON there.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { badgeOf, badgeSvg, formatHtml, type Report, shieldsJson } from "../../conformance/mod.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SERVE = "lib/cli/serve.ts --port 0";

const PROFILES = ["spec", "rfc6749", "oauth2.1", "mcp"] as const;
const REFERENCE = ["--target", "conformance/targets/reference.json"];

/** The servers nobody here wrote: launcher, target, expectations. */
const FOREIGN = [
  { name: "oidc-provider", launcher: "conformance/targets/oidc_provider.ts", file: "oidc-provider" },
  { name: "@node-oauth/oauth2-server", launcher: "conformance/targets/node_oauth.ts", file: "node-oauth" },
  { name: "better-auth", launcher: "conformance/targets/better_auth.ts", file: "better-auth" },
  { name: "workers-oauth-provider", launcher: "conformance/targets/workers_oauth_provider.ts", file: "workers-oauth-provider" },
];

/** One run of the CLI: a name, the server it tests (for --reports), and its arguments (after `conformance/cli.ts`). */
export const RUNS: { name: string; server: string; args: string[] }[] = [
  ...PROFILES.map((p) => ({ name: `reference (Node) ${p}`, server: "reference", args: [...REFERENCE, "--profile", p, "--serve", `tsx ${SERVE}`] })),
  {
    name: "reference as MCP deployment mcp",
    server: "reference-mcp",
    args: ["--target", "conformance/targets/reference-mcp.json", "--profile", "mcp", "--module", "conformance/targets/reference_mcp_app.ts"],
  },
  { name: "reference (Deno) spec", server: "reference-deno", args: [...REFERENCE, "--serve", "deno run --allow-net --allow-read lib/cli/serve_deno.ts --port 0"] },
  { name: "reference (Bun) spec", server: "reference-bun", args: [...REFERENCE, "--serve", "bun lib/cli/serve_bun.ts --port 0"] },
  ...FOREIGN.flatMap((f) =>
    PROFILES.map((p) => ({
      name: `${f.name} ${p}`,
      server: f.file,
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

/** Runs `jobs` with at most `width` at once (CI has 2 cores); results in the jobs' order. */
async function pool<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
  const results: T[] = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, jobs.length) }, worker));
  return results;
}

// --reports DIR: also write each server's HTML page (every profile), its badge and shields.io JSON there.
const reportsAt = process.argv.indexOf("--reports");
const reportsDir = reportsAt === -1 ? undefined : process.argv[reportsAt + 1];
const width = Number(process.env.CONFORMANCE_JOBS ?? 2);
const dir = mkdtempSync(join(tmpdir(), "conformance-ci-"));
let passed = 0;
let failed = 0;
const started = Date.now();
try {
  const outcomes = await pool(RUNS.map(({ args }, i) => async () => {
    const json = join(dir, `${i}.json`);
    const t0 = Date.now();
    const { code, output } = await run(args, json);
    let report: Report | undefined;
    try {
      report = JSON.parse(readFileSync(json, "utf8")) as Report;
    } catch {
      report = undefined;
    }
    return { code, output, report, seconds: (Date.now() - t0) / 1000 };
  }), width);
  for (const [i, { code, output, report, seconds }] of outcomes.entries()) {
    const { name } = RUNS[i]!;
    if (report === undefined || code !== 0) {
      console.log(output);
      console.log(`${name}: exit ${code}`);
      failed += Math.max(1, report?.summary.failed ?? 0);
      if (report !== undefined) passed += report.summary.passed;
      continue;
    }
    const s = report.summary;
    console.log(
      `${name.padEnd(40)} ${s.passed} passed, ${s.failed} failed, ${s.blocked} blocked, ${s.expected} expected failures, ` +
        `${s.not_offered} not offered, ${s.skipped} skipped, ${s.warned} warnings (${seconds.toFixed(1)} s)`,
    );
    passed += s.passed;
    failed += s.failed;
  }
  if (reportsDir !== undefined) {
    mkdirSync(reportsDir, { recursive: true });
    const byServer = new Map<string, Report[]>();
    for (const [i, { report }] of outcomes.entries()) {
      if (report !== undefined) byServer.set(RUNS[i]!.server, [...byServer.get(RUNS[i]!.server) ?? [], report]);
    }
    for (const [server, reports] of byServer) {
      writeFileSync(join(reportsDir, `${server}.html`), formatHtml(reports));
      writeFileSync(join(reportsDir, `${server}.svg`), badgeSvg(badgeOf(reports)));
      writeFileSync(join(reportsDir, `${server}.json`), shieldsJson(badgeOf(reports)) + "\n");
    }
    console.log(`Reports of ${byServer.size} servers in ${reportsDir}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${RUNS.length} runs, ${width} at a time, in ${((Date.now() - started) / 1000).toFixed(0)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
