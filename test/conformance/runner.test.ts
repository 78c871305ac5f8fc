/**
 * The runner's isolation and verdicts, the report's format, and the evidence's masking, with made-up cases.
 */
import { describe, expect, it } from "vitest";
import { type CaseDef, formatText, runConformance, selectCases } from "../../conformance/mod.ts";
import { ALL_CASES } from "../../conformance/mod.ts";
import { referenceTarget } from "./reference.ts";

const base = { area: "token", ref: "test", level: "MUST", profiles: ["spec"] } as const;
const fake = (id: string, run: CaseDef["run"], level: "MUST" | "SHOULD" = "MUST"): CaseDef => ({ ...base, id, title: id, level, run });
const echo = async (request: Request) =>
  Response.json({ error: "invalid_client", seen: await request.text() }, { status: 401, headers: { "www-authenticate": "Basic" } });
const driver = { approve: () => Promise.reject(new Error("no approvals here")) };

describe("runConformance with made-up cases", () => {
  it("isolates cases: throws, timeouts, SHOULD and skips each get their own verdict", async () => {
    const cases = [
      fake("A-THROWS", () => Promise.reject(new TypeError("boom"))),
      fake("B-HANGS", () => new Promise(() => {})),
      fake("C-SHOULD", (ctx) => ctx.fail("recommended, not required"), "SHOULD"),
      fake("D-SKIP", (ctx) => ctx.skip("not configured")),
      fake("E-PASSES", async () => "all good"),
    ];
    const report = await runConformance(referenceTarget(), { cases, fetch: echo, driver, timeoutMs: 50, preflight: false });
    expect(report.results.map((r) => [r.id, r.verdict])).toEqual([
      ["A-THROWS", "FAIL"],
      ["B-HANGS", "FAIL"],
      ["C-SHOULD", "WARN"],
      ["D-SKIP", "SKIP"],
      ["E-PASSES", "PASS"],
    ]);
    expect(report.results[0]!.message).toBe("Unexpected error: boom");
    expect(report.results[1]!.message).toBe("Timed out after 50 ms");
  });

  it("turns a failed SHOULD into a warning", async () => {
    const cases = [fake("S", (ctx) => ctx.fail("nope"), "SHOULD")];
    const report = await runConformance(referenceTarget(), { cases, fetch: echo, driver, preflight: false });
    expect(report.results[0]!.verdict).toBe("WARN");
    expect(report.summary).toEqual({ total: 1, passed: 0, failed: 0, blocked: 0, warned: 1, skipped: 0, not_offered: 0, expected: 0, unexpected_passes: [] });
  });

  it("shows masked evidence and ends the text report with the counts", async () => {
    const cases = [
      fake("EVIDENCE", async (ctx) => {
        const client = ctx.target.clients.client_credentials;
        const reply = await ctx.clientCredentials(client);
        ctx.fail("expected tokens", reply);
      }),
    ];
    const report = await runConformance(referenceTarget(), { cases, fetch: echo, driver, preflight: false });
    const [exchange] = report.results[0]!.evidence;
    expect(exchange!.request.body).toBe("grant_type=client_credentials&client_id=demo-backend&client_secret=demo***&scope=exports");
    // The response body echoes the request: the secret in it is masked too.
    expect(exchange!.response!.body).not.toContain("demo-backend-secret");
    expect(exchange!.response!.status).toBe(401);
    const text = formatText(report);
    expect(text).toMatch(/FAIL +EVIDENCE/);
    expect(text).toContain("> POST http://127.0.0.1:8080/index.php?module=OAuth2&action=token");
    expect(text).toContain("< 401");
    expect(text.split("\n").at(-1)).toBe("0 passed, 1 failed, 0 blocked");
  });
});

describe("a rate-limited server", () => {
  it("is named as the likely cause under the cases that got a 429", async () => {
    const limited = () => Promise.resolve(Response.json({ error: "slow_down" }, { status: 429, headers: { "retry-after": "30" } }));
    const cases = [fake("LIMITED", async (ctx) => ctx.fail("no token", await ctx.clientCredentials(ctx.target.clients.client_credentials)))];
    const report = await runConformance(referenceTarget(), { cases, fetch: limited, driver, preflight: false });
    expect(report.results[0]!.message).toContain("rate-limited the suite during this case (429, Retry-After: 30)");
  });
});

describe("selectCases", () => {
  it("matches ids exactly or with * wildcards, and refuses a pattern that matches nothing", () => {
    expect(selectCases(ALL_CASES, "SEC-CODE-REPLAY").map((c) => c.id)).toEqual(["SEC-CODE-REPLAY"]);
    expect(selectCases(ALL_CASES, "sec-code-*").length).toBeGreaterThan(2);
    expect(() => selectCases(ALL_CASES, "SEC-TYPO")).toThrow(/No case matches "SEC-TYPO"/);
  });
});
