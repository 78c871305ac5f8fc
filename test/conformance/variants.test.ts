/**
 * Proof that the suite can fail: the reference server passes every case, and each deliberately broken variant
 * fails on the case that covers its break.
 */
import { describe, expect, it } from "vitest";
import { problems, referenceApp, run } from "./reference.ts";
import { VARIANTS } from "./variants.ts";

describe("the conformance suite against the reference server (in-process)", () => {
  it("passes every case", async () => {
    const report = await run((await referenceApp()).fetch);
    expect(problems(report)).toEqual([]);
    expect(report.summary.passed).toBe(report.summary.total);
    // Every cell of the body-field table was exercised.
    expect(report.matrix).toHaveLength(40);
    expect(report.matrix.filter((c) => c.verdict !== "PASS")).toEqual([]);
  });
});

describe("broken variants of the reference server", () => {
  for (const variant of VARIANTS) {
    it(`fails "${variant.name}" on ${variant.catches.join(", ")}`, async () => {
      const report = await run(await variant.build());
      const failed = report.results.filter((r) => r.verdict === "FAIL").map((r) => r.id);
      for (const id of variant.catches) expect(failed, `${variant.name}: ${id} must FAIL`).toContain(id);
      // The failure shows its evidence: the request sent and the response received.
      for (const id of variant.catches) {
        const result = report.results.find((r) => r.id === id)!;
        expect(result.message).toBeTruthy();
        expect(result.evidence.length, `${id} has evidence`).toBeGreaterThan(0);
      }
      expect(report.summary.failed).toBeGreaterThan(0);
    });
  }
});
