/**
 * The command line: `npx tsx conformance/cli.ts --target target.json` (or `deno run -A conformance/cli.ts`).
 * The only file of the suite that touches the runtime (arguments, files, child processes, exit code); it uses
 * `node:` modules, which Node, Deno and Bun all provide.
 *
 * Exit codes: 0 no unexpected MUST failure; 1 a MUST case failed that the expectations file does not list;
 * 2 bad usage, target, expectations or module, or a target that cannot be reached (pre-flight).
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { badgeOf, badgeSvg, shieldsJson } from "./badge.ts";
import { openDocumentServer } from "./document_server.ts";
import { formatHtml } from "./html.ts";
import {
  ALL_CASES,
  casesMarkdown,
  casesText,
  type ConformanceOptions,
  formatJson,
  formatJunit,
  formatText,
  driverFromModule,
  fetchFromModule,
  parseExpectations,
  parseJsonc,
  parseTarget,
  PreflightError,
  type Profile,
  PROFILES,
  type Report,
  runConformance,
  selectCases,
} from "./mod.ts";

const USAGE = `Usage: npx tsx conformance/cli.ts --target FILE [options]

Runs the OAuth 2.0 conformance suite against the server a target file describes.

Options:
  --target FILE      The target description (JSON, comments allowed). Required.
  --profile NAME     The rules to apply: spec (default), rfc6749, oauth2.1 or mcp.
  --expect FILE      Expected failures: case id to reason, optionally by profile (JSONC). The run exits 0
                     when only these fail, and names those that now pass.
  --base-url URL     Use this base URL instead of the file's base_url.
  --serve COMMAND    Start the server with COMMAND first; the first http(s) URL it prints on stdout
                     (e.g. "listening on http://127.0.0.1:PORT") becomes the base URL. Stopped at the end.
  --module MODULE    In-process mode: import MODULE and call its fetch handler, with no socket.
  --driver MODULE    Approve with a custom driver module exporting approve(authorizeUrl, { deny, fetch }).
  --only PATTERNS    Comma-separated case ids, * as a wildcard (e.g. "SEC-*,AUTHZ-STATE-PASSTHROUGH").
                     Their prerequisites run too, as controls.
  --skip PATTERNS    Leave these cases out (same syntax).
  --json FILE        Also write the report as JSON to FILE.
  --junit FILE       Also write the report as JUnit XML to FILE.
  --report FORMAT FILE
                     Also write the report as FORMAT to FILE (repeatable): html (one self-contained page),
                     badge (a shields-style SVG), shields (shields.io endpoint JSON), json, junit or text.
  --from-json FILES  Run nothing: read earlier --json reports (comma-separated, one server, e.g. one per
                     profile) and write the --report files from them.
  --timeout MS       Time limit of one case in milliseconds (default 20000).
  --verbose          Show every exchange of every case, and notes of passing cases.
  --list             List the cases (of --profile, if given) and exit (--markdown: as the README's table).
  --help             Show this help.

Exit codes: 0 no unexpected MUST failure, 1 an unexpected MUST failure, 2 bad usage, target, expectations
or module, or an unreachable target.`;

const FLAGS = new Set(["target", "base-url", "serve", "module", "driver", "only", "skip", "json", "junit", "timeout", "profile", "expect", "from-json"]);
/** The formats of `--report FORMAT FILE`. */
const REPORTS = {
  html: (reports: Report[]) => formatHtml(reports),
  badge: (reports: Report[]) => badgeSvg(badgeOf(reports)),
  shields: (reports: Report[]) => shieldsJson(badgeOf(reports)) + "\n",
  json: (reports: Report[]) => (reports.length === 1 ? formatJson(reports[0]!) : JSON.stringify(reports, null, 2)) + "\n",
  junit: (reports: Report[]) => reports.map((r) => formatJunit(r)).join("\n") + "\n",
  text: (reports: Report[]) => reports.map((r) => formatText(r)).join("\n\n") + "\n",
} as const;
type ReportFormat = keyof typeof REPORTS;
const SWITCHES = new Set(["verbose", "list", "markdown", "help"]);

class UsageError extends Error {}

/** The `--report FORMAT FILE` pairs, in order. */
const reportFiles: { format: ReportFormat; file: string }[] = [];

function parseArgs(argv: string[]): Map<string, string> {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new UsageError(`Unexpected argument "${arg}"`);
    const name = m[1]!;
    if (name === "report") {
      const format = m[2] ?? argv[++i];
      const file = argv[++i];
      if (format === undefined || file === undefined) throw new UsageError("--report needs a format and a file: --report html report.html");
      if (!Object.hasOwn(REPORTS, format)) throw new UsageError(`--report format must be one of ${Object.keys(REPORTS).join(", ")}: "${format}"`);
      reportFiles.push({ format: format as ReportFormat, file });
    } else if (SWITCHES.has(name)) args.set(name, "true");
    else if (FLAGS.has(name)) {
      const value = m[2] ?? argv[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      args.set(name, value);
    } else throw new UsageError(`Unknown option --${name}`);
  }
  return args;
}

/** A file path becomes a file URL; anything else (a package name, a URL) is imported as it is. */
function specifier(value: string): string {
  if (/^[a-z][a-z0-9+.-]+:/i.test(value) && !/^[a-z]:[\\/]/i.test(value)) return value;
  return /^(\.{0,2}[\\/]|[a-z]:[\\/])/i.test(value) || /\.[cm]?[jt]sx?$/.test(value) ? pathToFileURL(resolve(value)).href : value;
}

interface Server {
  url: string;
  stop(): Promise<void>;
}

/** Starts the server command and waits for the first http(s) URL it prints. */
function startServer(command: string, verbose: boolean): Promise<Server> {
  const detached = process.platform !== "win32";
  const child: ChildProcess = spawn(command, { shell: true, stdio: ["ignore", "pipe", "inherit"], detached });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once("exit", () => done()));
    try {
      // The whole process group: a shell and whatever it started.
      if (detached && child.pid !== undefined) process.kill(-child.pid, "SIGTERM");
      else child.kill("SIGTERM");
    } catch {
      child.kill("SIGTERM");
    }
    await Promise.race([exited, new Promise((done) => setTimeout(done, 3000))]);
  };
  return new Promise((resolveServer, reject) => {
    let seen = "";
    let found = false;
    const timer = setTimeout(() => {
      void stop();
      reject(new UsageError(`--serve: no URL printed within 30 s by: ${command}`));
    }, 30_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new UsageError(`--serve: the server exited (code ${code}) before printing its URL: ${command}`));
    });
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      if (verbose) process.stderr.write(chunk);
      if (found) return;
      seen += chunk;
      const m = /https?:\/\/[^\s"'<>]+/.exec(seen);
      if (m) {
        clearTimeout(timer);
        child.removeAllListeners("exit");
        found = true;
        resolveServer({ url: m[0].replace(/[.,;)]+$/, ""), stop });
      }
    });
  });
}

/** Reads a JSON-with-comments file, or fails with a usage error naming it. */
async function readJsonc(path: string, what: string): Promise<unknown> {
  try {
    return parseJsonc(await readFile(path, "utf8"));
  } catch (error) {
    throw new UsageError(`Cannot read ${what} "${path}": ${(error as Error).message}`);
  }
}

/** Writes every `--report` file from the reports. */
async function writeReports(reports: Report[]): Promise<void> {
  for (const { format, file } of reportFiles) await writeFile(file, REPORTS[format](reports));
}

/** `--from-json`: the `--report` files from earlier JSON reports; exit 1 when one of them failed. */
async function rewrite(files: string[]): Promise<number> {
  if (files.length === 0) throw new UsageError("--from-json needs at least one file");
  if (reportFiles.length === 0) throw new UsageError("--from-json writes --report files: name at least one");
  const reports: Report[] = [];
  for (const file of files) {
    const json = await readJsonc(file, "report");
    const list = Array.isArray(json) ? json : [json];
    for (const r of list) {
      if (typeof r !== "object" || r === null || !("summary" in r) || !("results" in r)) throw new UsageError(`"${file}" is not a JSON report of this suite`);
      reports.push(r as Report);
    }
  }
  await writeReports(reports);
  for (const r of reports) console.log(`${r.profile.padEnd(9)} ${r.summary.passed} passed, ${r.summary.failed} failed, ${r.summary.not_offered} not offered`);
  return reports.some((r) => r.summary.failed > 0) ? 1 : 0;
}

async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (args.has("help")) {
    console.log(USAGE);
    return 0;
  }
  const profileArg = args.get("profile");
  if (profileArg !== undefined && !(profileArg in PROFILES)) {
    throw new UsageError(`--profile must be one of ${Object.keys(PROFILES).join(", ")}: "${profileArg}"`);
  }
  const profile = profileArg as Profile | undefined;
  if (args.has("list")) {
    const cases = profile === undefined ? ALL_CASES : selectCases(ALL_CASES, undefined, { profile });
    console.log(args.has("markdown") ? casesMarkdown(cases) : casesText(cases));
    return 0;
  }
  const fromJson = args.get("from-json");
  if (fromJson !== undefined) return await rewrite(fromJson.split(",").map((f) => f.trim()).filter((f) => f !== ""));
  const targetPath = args.get("target");
  if (targetPath === undefined) throw new UsageError("--target FILE is required");
  const json = await readJsonc(targetPath, "target");
  const expectPath = args.get("expect");
  const expected = expectPath === undefined
    ? undefined
    : parseExpectations(await readJsonc(expectPath, "expectations"), profile ?? "spec", ALL_CASES);
  const verbose = args.has("verbose");
  const serve = args.get("serve");
  const server = serve === undefined ? undefined : await startServer(serve, verbose);
  try {
    const baseUrl = args.get("base-url") ?? server?.url;
    const target = parseTarget(json, {
      ...(baseUrl === undefined ? {} : { base_url: baseUrl }),
      location: pathToFileURL(resolve(targetPath)),
    });
    // The command line imports modules itself: the published library holds no unanalysable import().
    const importModule = (name: string): Promise<unknown> => import(name);
    const options: ConformanceOptions = { trace: verbose, importModule };
    if (profile !== undefined) options.profile = profile;
    if (expected !== undefined) options.expected = expected;
    const skip = args.get("skip");
    if (skip !== undefined) options.skip = skip;
    const driver = args.get("driver");
    if (driver !== undefined) options.driver = driverFromModule(await importModule(specifier(driver)), driver);
    const module = args.get("module");
    if (module !== undefined) options.fetch = fetchFromModule(await importModule(specifier(module)), module);
    const only = args.get("only");
    if (only !== undefined) options.only = only;
    const timeout = args.get("timeout");
    if (timeout !== undefined) {
      if (!/^\d+$/.test(timeout)) throw new UsageError(`--timeout must be a number of milliseconds: "${timeout}"`);
      options.timeoutMs = Number(timeout);
    }
    // The suite serves the Client ID Metadata Documents itself, where the target's server may fetch them.
    const documents = target.client_metadata_documents === undefined ? undefined : await openDocumentServer(target.client_metadata_documents.origin);
    if (documents !== undefined) options.documents = documents;
    // And the public keys it signs with as a client, an identity provider and a workload platform.
    const origin = target.identity?.origin;
    const keys = origin === undefined ? undefined : origin === documents?.origin ? documents : await openDocumentServer(origin);
    if (keys !== undefined) options.keys = keys;
    const report = await runConformance(target, options).finally(async () => {
      await documents?.close();
      if (keys !== documents) await keys?.close();
    });
    console.log(formatText(report, { verbose }));
    const jsonFile = args.get("json");
    if (jsonFile !== undefined) await writeFile(jsonFile, formatJson(report) + "\n");
    const junitFile = args.get("junit");
    if (junitFile !== undefined) await writeFile(junitFile, formatJunit(report) + "\n");
    await writeReports([report]);
    return report.summary.failed > 0 ? 1 : 0;
  } finally {
    await server?.stop();
  }
}

const code = await main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  if (error instanceof UsageError) console.error("\nRun with --help for usage.");
  else if (error instanceof PreflightError) console.error("\nNo case was run.");
  return 2;
});
// Exit once stdout is flushed: idle keep-alive sockets to the server must not hold the process open.
process.stdout.write("", () => process.exit(code));
