// `npm run bench:smoke` says PASS or FAIL, and its exit code says the same (vitest on Node).
import { expect, test } from "vitest";
import { targetWord, verdict, type VerdictRow } from "./verdict.ts";

const row = (over: Partial<VerdictRow>): VerdictRow => ({ section: "in-process", runtime: "node", scenario: "client_credentials", ratio: 0.6, result: { errors: 0 }, ...over });

test.each([
  [[row({})], true, 0, /^bench smoke: PASS: .* 0\.60 of the bare handler/],
  [[row({ ratio: 0.42 })], true, 1, /^bench smoke: FAIL: .* 0\.42 .* below 0\.45/],
  [[row({ ratio: 0.46 })], true, 0, /^bench smoke: PASS: .* 0\.46 .*≥ 0\.45/],
  [[row({}), row({ section: "http", ratio: 0.3 })], true, 0, /^bench smoke: PASS/],
  [[row({}), row({ section: "http", result: { errors: 3 } })], true, 1, /^bench smoke: FAIL: 1 row\(s\) had failed requests/],
  [[row({ section: "http" })], true, 1, /^bench smoke: FAIL: the in-process client_credentials row is missing/],
  [[row({ ratio: 0.1 })], false, 0, /^bench: PASS/],
])("%#: the verdict's word matches its exit code", (rows, smoke, code, line) => {
  const result = verdict(rows, smoke);
  expect(result.code).toBe(code);
  expect(result.line).toMatch(line);
  expect(result.line.includes("PASS")).toBe(code === 0);
  expect(result.line.includes("FAIL")).toBe(code === 1);
});

test("the gate judges the median of the per-round ratios and shows their range", () => {
  const pass = verdict([row({ ratio: 0.5, round_ratios: [0.31, 0.48, 0.5, 0.52, 0.7] })], true);
  expect(pass).toEqual({ code: 0, line: "bench smoke: PASS: in-process client_credentials is 0.50 of the bare handler (median of 5 rounds, 0.31-0.70) (≥ 0.45)" });
  expect(verdict([row({ ratio: 0.43, round_ratios: [0.4, 0.43, 0.6] })], true).code).toBe(1);
});

test("a smoke run never prints MISSED for a row that cannot fail it", () => {
  expect(targetWord(false, true, false)).toBe("below (not gated in smoke)");
  expect(targetWord(false, true, true)).toBe("MISSED");
  expect(targetWord(false, false, false)).toBe("MISSED");
  expect(targetWord(true, true, false)).toBe("met");
});
