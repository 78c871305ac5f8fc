/**
 * The command line over real HTTP: the reference server started as a child process on a free port.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Report } from "../../conformance/mod.ts";
import { TARGET_FILE } from "./reference.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const NODE_TSX = [process.execPath, "--import", "tsx"];

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to completion (bounded). */
function cli(args: string[], timeoutMs = 60_000): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE_TSX[0]!, [...NODE_TSX.slice(1), "conformance/cli.ts", ...args], { cwd: ROOT });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`CLI timed out:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const lastLine = (text: string) => text.trimEnd().split("\n").at(-1);

describe("conformance/cli.ts", () => {
  let server: ChildProcess | undefined;
  let baseUrl = "";
  let dir = "";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "conformance-"));
    server = spawn(NODE_TSX[0]!, [...NODE_TSX.slice(1), "lib/cli/serve.ts", "--port", "0"], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
    baseUrl = await new Promise<string>((resolve, reject) => {
      let seen = "";
      const timer = setTimeout(() => reject(new Error(`No listening line: ${seen}`)), 30_000);
      server!.stdout!.on("data", (d: Buffer) => {
        seen += d.toString();
        const m = /listening on (http:\/\/\S+)/.exec(seen);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      server!.once("exit", (code) => reject(new Error(`The server exited (${code}): ${seen}`)));
    });
  }, 40_000);

  afterAll(() => {
    server?.kill("SIGTERM");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("passes every case against the reference server over HTTP, and writes the JSON, HTML and badge reports", async () => {
    const json = join(dir, "report.json");
    const [html, svg, shields] = ["report.html", "badge.svg", "badge.json"].map((f) => join(dir, f));
    const result = await cli(["--target", TARGET_FILE, "--base-url", baseUrl, "--json", json, "--report", "html", html!, "--report", "badge", svg!, "--report", "shields", shields!]);
    const report = JSON.parse(readFileSync(json, "utf8")) as Report;
    // The demo issues opaque tokens without DPoP: the JWT access-token and DPoP cases are not offered (its metadata
    // has no jwks_uri, no dpop_signing_alg_values_supported).
    const notOffered = report.results.filter((r) => r.verdict === "NOT_OFFERED").map((r) => r.id);
    expect(notOffered.every((id) => id.startsWith("JWT-AT-") || id.startsWith("DPOP-") || id.startsWith("TOKEN-DEVICE-"))).toBe(true);
    const failing = report.results.filter((r) => r.verdict !== "PASS" && r.verdict !== "NOT_OFFERED").map((r) => `${r.verdict} ${r.id}`);
    // Over HTTP there is no clock to move, and the demo redirect URI is a loopback one (any port may match).
    expect(failing).toEqual(["SKIP AUTHZ-REDIRECT-VARIANT-PORT", "SKIP SEC-CODE-EXPIRED"]);
    expect(result.code).toBe(0);
    expect(report.target.base_url).toBe(baseUrl);
    expect(lastLine(result.stdout)).toBe(`${report.summary.total - 2 - notOffered.length} passed, 0 failed, 0 blocked`);
    expect(readFileSync(html!, "utf8")).toContain(`<tr><th><a href="#profile-spec">spec</a></th><td>${report.summary.passed}</td><td>0</td>`);
    expect(readFileSync(svg!, "utf8")).toContain(`OAuth conformance (spec): ${report.summary.passed} passed`);
    expect(JSON.parse(readFileSync(shields!, "utf8"))).toEqual({ schemaVersion: 1, label: "OAuth conformance (spec)", message: `${report.summary.passed} passed`, color: "#4c1" });
    // Earlier JSON reports become a page and a badge without a run.
    const merged = join(dir, "merged.html");
    const again = await cli(["--from-json", `${json},${json}`, "--report", "html", merged]);
    expect(again.code).toBe(0);
    expect(readFileSync(merged, "utf8").match(/id="profile-spec"/g)).toHaveLength(2);
  }, 90_000);

  it("starts the server itself with --serve, and exits 1 on a MUST failure", async () => {
    // A target whose confidential secret is wrong: every flow that needs it fails.
    const target = JSON.parse(readFileSync(TARGET_FILE, "utf8")) as { clients: { confidential: { client_secret: string } } };
    target.clients.confidential.client_secret = "not-the-secret";
    const file = join(dir, "wrong.json");
    writeFileSync(file, JSON.stringify(target));
    const serve = [...NODE_TSX, "lib/cli/serve.ts", "--port", "0"].map((a) => JSON.stringify(a)).join(" ");
    const result = await cli(["--target", file, "--serve", serve, "--only", "TOKEN-AC-CONF-*-NOT-SENT,SEC-CODE-REPLAY"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/FAIL +TOKEN-AC-CONF-SCOPE-NOT-SENT/);
    // The replay case cannot be judged when the confidential client gets no token at all: blocked, not failed.
    expect(result.stdout).toMatch(/BLOCKED +SEC-CODE-REPLAY/);
    expect(result.stdout).toMatch(/client_secret=not-\*\*\*/);
    // TOKEN-AC-PUB-SCOPE-NOT-SENT ran as SEC-CODE-REPLAY's control, and passed.
    expect(lastLine(result.stdout)).toMatch(/^1 passed, 3 failed, 1 blocked$/);
  }, 90_000);

  it("exits 2 with the problems of a bad target", async () => {
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ base_url: "nope", clients: {} }));
    const result = await cli(["--target", file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`"base_url" must be an absolute http(s) URL: "nope"`);
    expect(result.stderr).toContain(`"clients.public" must be an object`);
  }, 30_000);
});
