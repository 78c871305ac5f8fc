/**
 * The suite as a product: no vacuous passes (a server answering 500 to everything passes no MUST case, and
 * negative cases are blocked when their control fails), profiles, expected failures, root causes, JUnit,
 * JSONC target files and the pre-flight that fails fast.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import {
  ALL_CASES,
  type CaseDef,
  ExpectationsError,
  formatJunit,
  formatText,
  parseExpectations,
  parseJsonc,
  parseTarget,
  PreflightError,
  runConformance,
} from "../../conformance/mod.ts";
import { problems, referenceApp, referenceTarget, run } from "./reference.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "conformance-product-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A server that answers 500 to everything. */
const broken = () => Promise.resolve(Response.json({ error: "server_error" }, { status: 500 }));

describe("no vacuous passes", () => {
  it("a server that answers 500 to everything passes no MUST case, and its negative cases are blocked", async () => {
    for (const profile of ["spec", "rfc6749", "oauth2.1", "mcp"] as const) {
      const report = await run(broken, { profile });
      const passedMust = report.results.filter((r) => r.verdict === "PASS" && r.level === "MUST").map((r) => r.id);
      expect(passedMust, profile).toEqual([]);
      // The positive cases fail; every negative one is blocked by a failing control, not failed or passed.
      expect(report.results.find((r) => r.id === "AUTHZ-CODE-ISSUED")?.verdict).toBe("FAIL");
      expect(report.results.find((r) => r.id === "SEC-CODE-REPLAY")?.verdict).toBe("BLOCKED");
      expect(report.summary.blocked).toBeGreaterThan(20);
      expect(formatText(report).split("\n").at(-1)).toMatch(/^0 passed, \d+ failed, \d+ blocked$/);
    }
  });

  it("every negative case names a positive control that runs in the same run, in every profile of the case", () => {
    const byId = new Map(ALL_CASES.map((c) => [c.id, c]));
    for (const c of ALL_CASES) {
      if (!c.positive) expect(c.needs?.length ?? 0, `${c.id} has no control`).toBeGreaterThan(0);
      for (const id of c.needs ?? []) {
        const need = byId.get(id);
        expect(need?.positive, `${c.id} needs ${id}, a positive case`).toBe(true);
        for (const p of c.profiles) expect(need!.profiles, `${id} is in ${c.id}'s profile ${p}`).toContain(p);
      }
    }
  });

  it("runs the prerequisites of --only as controls, and blocks a case whose control fails", async () => {
    const { fetch } = await referenceApp();
    // The confidential client's code redemption is broken: its negative cases prove nothing.
    const noConfidential: typeof fetch = async (request) => {
      const body = request.method === "POST" ? await request.clone().text() : "";
      if (body.includes("grant_type=authorization_code") && body.includes("client_id=demo-web")) {
        return Response.json({ error: "server_error" }, { status: 500 });
      }
      return fetch(request);
    };
    const report = await run(noConfidential, { only: "TOKEN-AC-CONF-SECRET-WRONG" });
    const control = report.results.find((r) => r.id === "TOKEN-AC-CONF-SCOPE-NOT-SENT")!;
    expect(control).toMatchObject({ verdict: "FAIL", control: true });
    const blocked = report.results.find((r) => r.id === "TOKEN-AC-CONF-SECRET-WRONG")!;
    expect(blocked).toMatchObject({ verdict: "BLOCKED", blocked_by: "TOKEN-AC-CONF-SCOPE-NOT-SENT" });
    expect(report.root_causes.map((c) => [c.id, c.blocks])).toEqual([["TOKEN-AC-CONF-SCOPE-NOT-SENT", ["TOKEN-AC-CONF-SECRET-WRONG"]]]);
  });
});

describe("root causes", () => {
  it("open the report, most severe first: MUST before SHOULD, security before the rest, wording last", async () => {
    const cases: CaseDef[] = [
      { id: "W-SHOULD", title: "a SHOULD", area: "token", ref: "RFC 6749 §1", level: "SHOULD", profiles: ["spec"], positive: true, run: (ctx) => ctx.fail("should") },
      { id: "W-WORDING", title: "wording", area: "token", ref: "RFC 6749 §1", level: "MUST", profiles: ["spec"], positive: true, run: (ctx) => ctx.fail("code", undefined, true) },
      { id: "W-PLAIN", title: "plain", area: "token", ref: "RFC 6749 §1", level: "MUST", profiles: ["spec"], positive: true, run: (ctx) => ctx.fail("plain") },
      { id: "W-SEC", title: "security", area: "security", ref: "RFC 6749 §1", level: "MUST", profiles: ["spec"], positive: true, run: (ctx) => ctx.fail("sec") },
      { id: "W-DEP", title: "dependent", area: "token", ref: "RFC 6749 §1", level: "MUST", profiles: ["spec"], needs: ["W-PLAIN"], run: async () => {} },
    ];
    const report = await runConformance(referenceTarget(), { cases, fetch: broken, preflight: false });
    expect(report.root_causes.map((c) => c.id)).toEqual(["W-SEC", "W-PLAIN", "W-WORDING", "W-SHOULD"]);
    expect(report.root_causes[1]!.blocks).toEqual(["W-DEP"]);
    const text = formatText(report);
    expect(text.indexOf("Root causes (4)")).toBeLessThan(text.indexOf("Token endpoint: every grant"));
  });
});

describe("one rule broken in many places", () => {
  it("is one root cause, with the other cases listed after it", async () => {
    const same = (id: string, what: string): CaseDef => ({
      id, title: id, area: "token", ref: "RFC 6749 §5.2", level: "MUST", profiles: ["spec"], positive: true,
      run: (ctx) => ctx.fail(`${what}: a 401 response must carry WWW-Authenticate (RFC 6749 §5.2, RFC 9110 §15.5.2)`, undefined, true),
    });
    const cases = [same("G-ONE", "an unknown client"), same("G-TWO", "a wrong secret"), same("G-THREE", "no secret")];
    const report = await runConformance(referenceTarget(), { cases, fetch: broken, preflight: false });
    expect(report.root_causes.map((c) => [c.id, c.also])).toEqual([["G-ONE", ["G-TWO", "G-THREE"]]]);
    expect(formatText(report)).toContain("the same in 2 more: G-TWO, G-THREE");
  });
});

describe("profiles", () => {
  it("tags every case with its profiles and an RFC section, and leaves the spec's own rules out of rfc6749", () => {
    for (const c of ALL_CASES) {
      expect(c.profiles.length, c.id).toBeGreaterThan(0);
      // Every case names the RFC section it checks (MCP cases their RFC too), spec-only rules included.
      expect(c.ref, c.id).toMatch(/RFC \d+ §/);
    }
    const rfc = ALL_CASES.filter((c) => c.profiles.includes("rfc6749")).map((c) => c.id);
    expect(rfc).not.toContain("AUTHZ-SCOPE-TWO");
    expect(rfc).not.toContain("TOKEN-CC-SCOPE-REQUIRED");
    expect(rfc).toContain("SEC-CODE-REPLAY");
  });

  it("an RFC-legal server that accepts several scopes and a default scope fails the spec profile but passes rfc6749", async () => {
    // One app per run: the failed client authentications of one run must not throttle the next.
    const lenientApp = async () => {
      const { fetch } = await referenceApp();
      // Takes the first of several scopes, and the client's first scope when none is sent: legal under RFC 6749 §3.3.
      const lenient: typeof fetch = async (request) => {
        const url = new URL(request.url);
        const fix = (params: URLSearchParams, client: string | null) => {
          const scope = params.get("scope");
          if (scope !== null && scope.includes(" ")) params.set("scope", scope.split(" ")[0]!);
          if (scope === null && client === "demo-backend" && params.get("grant_type") === "client_credentials") params.set("scope", "exports");
          if (scope === null && params.get("response_type") === "code") params.set("scope", "reports.read");
        };
        if (url.searchParams.get("action") === "authorize") fix(url.searchParams, url.searchParams.get("client_id"));
        if (request.method === "POST" && url.searchParams.get("action") === "token") {
          const form = new URLSearchParams(await request.text());
          fix(form, form.get("client_id"));
          return fetch(new Request(url, { method: "POST", headers: request.headers, body: form.toString() }));
        }
        const body = request.method === "POST" ? await request.text() : undefined;
        return fetch(new Request(url, { method: request.method, headers: request.headers, ...(body === undefined ? {} : { body }) }));
      };
      return lenient;
    };
    const spec = await run(await lenientApp(), { profile: "spec" });
    expect(spec.results.filter((r) => r.verdict === "FAIL").map((r) => r.id).sort()).toEqual(
      ["AUTHZ-SCOPE-TWO", "TOKEN-CC-SCOPE-REQUIRED", "TOKEN-CC-SCOPE-TWO"],
    );
    const rfc = await run(await lenientApp(), { profile: "rfc6749" });
    expect(problems(rfc).filter((p) => !p.startsWith("SKIP ") && !/^NOT_OFFERED (JWT-AT|ID|DPOP|TOKEN-DEVICE)-/.test(p))).toEqual([]);
    expect(rfc.profile).toBe("rfc6749");
  });
});

describe("expected failures", () => {
  it("are read by profile, need a reason, and must name real cases", () => {
    const file = { all: { "TOKEN-METHOD-GET": "we allow GET" }, spec: { "AUTHZ-SCOPE-*": "several scopes" }, rfc6749: { "SEC-CODE-REPLAY": "x" } };
    const spec = parseExpectations(file, "spec", ALL_CASES);
    expect(spec.get("TOKEN-METHOD-GET")).toBe("we allow GET");
    expect(spec.get("AUTHZ-SCOPE-TWO")).toBe("several scopes");
    expect(spec.has("SEC-CODE-REPLAY")).toBe(false);
    expect(parseExpectations({ "SEC-CODE-REPLAY": "flat" }, "mcp", ALL_CASES).get("SEC-CODE-REPLAY")).toBe("flat");
    expect(() => parseExpectations({ "SEC-TYPO": "x" }, "spec", ALL_CASES)).toThrow(ExpectationsError);
    expect(() => parseExpectations({ "SEC-CODE-REPLAY": "" }, "spec", ALL_CASES)).toThrow(/needs a reason/);
    expect(() => parseExpectations({ spec: { "SEC-TYPO": "x" } }, "mcp", ALL_CASES)).toThrow(/No case matches "SEC-TYPO"/);
  });

  it("keep the run green when only they fail, and name those that now pass (CLI, exit codes)", async () => {
    const target = join(dir, "target.json");
    writeFileSync(target, readFileSync(join(ROOT, "conformance/targets/reference.json"), "utf8"));
    const module = join(dir, "server.mts");
    // The reference app with the Pragma header removed (a SHOULD) and two scopes accepted (a spec MUST).
    writeFileSync(module, `
      import { createReferenceApp } from ${JSON.stringify(join(ROOT, "lib/reference/app.ts"))};
      const app = await createReferenceApp({ issuer: "http://127.0.0.1:8080", passwordIterations: 1 });
      export async function fetch(request) {
        const url = new URL(request.url);
        if (request.method === "POST" && url.searchParams.get("action") === "token") {
          const form = new URLSearchParams(await request.text());
          const scope = form.get("scope");
          if (scope && scope.includes(" ")) form.set("scope", scope.split(" ")[0]);
          request = new Request(url, { method: "POST", headers: request.headers, body: form.toString() });
        }
        return app.fetch(request);
      }`);
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, ["--import", "tsx", "conformance/cli.ts", "--target", target, "--module", module, ...args], {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 60_000,
      });
    const only = ["--only", "TOKEN-CC-*,RESP-PRAGMA-NO-CACHE"];
    const bare = cli(...only);
    expect(bare.stderr).toBe("");
    expect(bare.status).toBe(1);
    expect(bare.stdout).toMatch(/FAIL +TOKEN-CC-SCOPE-TWO/);

    const expect1 = join(dir, "expect.jsonc");
    writeFileSync(expect1, `{
      // Known deviations, by profile.
      "spec": {
        "TOKEN-CC-SCOPE-TWO": "we take the first of several scopes", /* RFC 6749 §3.3 allows it */
        "RESP-PRAGMA-NO-CACHE": "fixed long ago",
      },
    }`);
    const junit = join(dir, "report.xml");
    const known = cli(...only, "--expect", expect1, "--junit", junit);
    expect(known.stderr).toBe("");
    expect(known.status).toBe(0);
    expect(known.stdout).toContain("Expected failures (1):");
    expect(known.stdout).toContain("TOKEN-CC-SCOPE-TWO [MUST] Two scopes in one request are refused, even when the client is allowed both (expected: we take the first of several scopes)");
    expect(known.stdout).toContain("Expected to fail but passed (remove them from the expectations file): RESP-PRAGMA-NO-CACHE");
    expect(known.stdout.trimEnd().split("\n").at(-1)).toMatch(/^\d+ passed, 0 failed, 0 blocked$/);
    const xml = readFileSync(junit, "utf8");
    expect(xml).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites /);
    expect(xml).toContain(`<skipped message="expected FAIL: we take the first of several scopes"/>`);
    expect(xml).toMatch(/<testcase classname="conformance.token_client_credentials" name="TOKEN-CC-SECRET-WRONG: [^"]*" time="[\d.]+"\/>/);
    expect(xml.match(/<testcase /g)?.length).toBe(xml.match(/<\/testcase>|\/>\n/g)?.length);

    const skipped = cli(...only, "--skip", "TOKEN-CC-SCOPE-TWO");
    expect(skipped.status).toBe(0);
    expect(skipped.stdout).not.toContain("TOKEN-CC-SCOPE-TWO");
  }, 90_000);
});

describe("target files", () => {
  it("may carry comments and trailing commas, and the README's documented example loads as written", () => {
    expect(parseJsonc(`{ "a": "x // not a comment", /* c */ "b": [1, 2,], // end\n }`)).toEqual({ a: "x // not a comment", b: [1, 2] });
    const readme = readFileSync(join(ROOT, "conformance/README.md"), "utf8");
    const block = /## Target format\n\n```jsonc\n([\s\S]*?)\n```/.exec(readme)?.[1];
    expect(block).toBeTruthy();
    const target = parseTarget(parseJsonc(block!));
    expect(target.name).toBe("Acme auth (staging)");
    expect(target.token_url).toBe("https://auth.staging.acme.test/oauth/token");
  });
});

describe("fail fast", () => {
  it("an unreachable target aborts within seconds with one message saying what to fix", async () => {
    const started = Date.now();
    const result = spawnSync(process.execPath, [
      "--import", "tsx", "conformance/cli.ts", "--target", join(ROOT, "conformance/targets/reference.json"), "--base-url", "http://127.0.0.1:9",
    ], { cwd: ROOT, encoding: "utf8", timeout: 30_000 });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^Cannot reach the token endpoint http:\/\/127\.0\.0\.1:9\/index\.php\?module=OAuth2&action=token: .*Is the server running/);
    expect(result.stdout).toBe("");
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 30_000);

  it("a target that stops answering mid-run aborts the run with one message", async () => {
    const { fetch } = await referenceApp();
    let gone = false;
    const dying = (request: Request) => {
      if (gone) return Promise.reject(new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:8080") }));
      return fetch(request);
    };
    const started = Date.now();
    const run1 = run(dying, { onResult: (r) => void (gone ||= r.id === "AUTHZ-STATE-PASSTHROUGH") });
    await expect(run1).rejects.toThrow(/^The target stopped answering during AUTHZ-DENY-ACCESS_DENIED: Cannot reach the token endpoint .*ECONNREFUSED/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("a wrong token_url or client secret is named before any case runs", async () => {
    const { fetch } = await referenceApp();
    const wrongUrl = parseTarget({ ...JSON.parse(readFileSync(join(ROOT, "conformance/targets/reference.json"), "utf8")), token_url: "oauth/token" });
    await expect(runConformance(wrongUrl, { fetch })).rejects.toThrow(/answered 404: check "token_url"/);
    const json = JSON.parse(readFileSync(join(ROOT, "conformance/targets/reference.json"), "utf8"));
    json.clients.client_credentials.client_secret = "wrong";
    await expect(runConformance(json, { fetch })).rejects.toThrow(PreflightError);
    await expect(runConformance(json, { fetch })).rejects.toThrow(/check "clients.client_credentials"/);
  });
});

describe("JUnit", () => {
  it("escapes what it quotes", async () => {
    const cases: CaseDef[] = [
      { id: "X-ESC", title: `<&"'>`, area: "token", ref: "RFC 6749 §1", level: "MUST", profiles: ["spec"], positive: true, run: (ctx) => ctx.fail(`a <b> & "c"`) },
    ];
    const report = await runConformance(referenceTarget(), { cases, fetch: broken, preflight: false });
    const xml = formatJunit(report);
    expect(xml).toContain(`name="X-ESC: &lt;&amp;&quot;'&gt;"`);
    expect(xml).toContain(`<failure message="a &lt;b&gt; &amp; &quot;c&quot;" type="MUST">`);
  });
});
