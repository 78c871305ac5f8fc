// Findings 6-7 of issue 15: the request-head checks every adapter makes before routing.
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
