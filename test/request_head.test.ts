// Findings 6-7 of issue 15: the request-head checks every adapter makes before routing.
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { originForm, requestHeadProblem, targetProblem, validHost } from "../lib/request_head.ts";

describe("validHost", () => {
  test.each([
    "auth.example.com", "auth.example.com:443", "127.0.0.1", "127.0.0.1:8080", "[::1]", "[::1]:8080", "[2001:db8::7]",
    "localhost:65535", "xn--bcher-kva.example", "a%20b",
  ])("%s is valid", (value) => expect(validHost(value)).toBe(true));
  test.each([
    "", "x@evil.example", "a b", "evil:99999", "evil:", "evil:-1", "evil/index.php?module=OAuth2&action=token&", "a, b",
    "[::1", "::1", "evil#x", "evil\\x", "a%zz", "evil:80:80", "[::1]x",
  ])("%j is refused", (value) => expect(validHost(value)).toBe(false));
});

describe("targets", () => {
  test.each([
    ["/index.php?module=OAuth2&action=token", null],
    ["/a/b.c/..d?x=../y", null],
    ["/api/../index.php", "dot"],
    ["/api/%2E%2e/index.php", "dot"],
    ["/api/%2e%2E/token", "dot"],
    ["/./token", "dot"],
    ["/token/.", "dot"],
    ["//evil.example/x", "//"],
    ["*", "path"],
    ["index.php", "path"],
  ])("%s", (target, problem) => {
    const found = targetProblem(target);
    if (problem === null) expect(found).toBeNull();
    else expect(found).toContain(problem);
  });

  test("absolute form is taken as its path and query", () => {
    expect(originForm("http://evil.example/index.php?module=OAuth2&action=token")).toBe("/index.php?module=OAuth2&action=token");
    expect(originForm("HTTPS://evil.example")).toBe("/");
    expect(originForm("http://evil.example?x=1")).toBe("/?x=1");
    expect(originForm("/plain")).toBe("/plain");
  });

  test("one Host, valid, and a routable target", () => {
    expect(requestHeadProblem([], "/")).toMatch(/missing/);
    expect(requestHeadProblem(["a", "a"], "/")).toMatch(/repeated/);
    expect(requestHeadProblem(["x@y"], "/")).toMatch(/malformed/);
    expect(requestHeadProblem(["a"], "/x/../y")).toMatch(/dot/);
    expect(requestHeadProblem(["a:80"], "http://b/y")).toMatch(/path/);
    expect(requestHeadProblem(["a:80"], "/y?z=1")).toBeNull();
  });
});

describe("the one-scan checks agree with the grammar", () => {
  // The RFC 3986 §3.2.2 grammar as written before the one-scan fast paths: the reference they must match.
  const grammarHost = (value: string): boolean => {
    if (value.length === 0 || value.length > 255 + 6) return false;
    let host = value;
    const colon = value.lastIndexOf(":");
    if (colon !== -1 && !value.endsWith("]")) {
      const port = value.slice(colon + 1);
      if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) return false;
      host = value.slice(0, colon);
    }
    return host.startsWith("[")
      ? /^\[(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{0,4}|\d{1,3}(?:\.\d{1,3}){3})\]$/.test(host)
      : /^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+$/.test(host);
  };
  const grammarTarget = (target: string): string | null => {
    if (!target.startsWith("/")) return "path";
    if (target.startsWith("//")) return "//";
    const end = target.search(/[?#]/);
    for (const segment of (end === -1 ? target : target.slice(0, end)).split("/")) {
      const decoded = segment.replace(/%2e/gi, ".");
      if (decoded === "." || decoded === "..") return "dot";
    }
    return null;
  };
  const text = (alphabet: string, maxLength: number) =>
    fc.array(fc.constantFrom(...alphabet), { maxLength }).map((chars) => chars.join(""));

  test("validHost", () => {
    const host = fc.oneof(
      text("ab1.-:[]%2eE@ _~9056", 12),
      fc.tuple(text("ab.-", 6), fc.integer({ min: 0, max: 999_999 })).map(([name, port]) => `${name}:${port}`),
      fc.string({ maxLength: 8 }),
      fc.constantFrom("a".repeat(255) + ":65535", "a".repeat(256) + ":65535", "a".repeat(262), "a".repeat(261)),
    );
    fc.assert(fc.property(host, (value) => {
      expect(validHost(value), JSON.stringify(value)).toBe(grammarHost(value));
    }), {
      numRuns: 3000,
    });
  });

  test("targetProblem", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom("/", "a", ".", "%2e", "%2E", "%", "?", "#"), { maxLength: 10 }).map((parts) => parts.join("")), (target) => {
        const found = targetProblem(target);
        const expected = grammarTarget(target);
        if (expected === null) expect(found, target).toBeNull();
        else expect(found, target).toContain(expected);
      }),
      { numRuns: 3000 },
    );
  });
});
