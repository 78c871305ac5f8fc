/**
 * The Deno shim of vitest must fail what vitest fails, or the Deno run of the test tree proves nothing.
 * Deno only (`npm run test:deno`); the checks below use plain `throw`, not the `expect` they test.
 */
import { AssertionError, expect, test } from "./vitest_deno.ts";

const Deno = (globalThis as unknown as {
  Deno: {
    Command: new (command: string, options: { args: string[]; stdout: "piped"; stderr: "piped"; env: Record<string, string> }) => {
      output(): Promise<{ code: number; stdout: Uint8Array; stderr: Uint8Array }>;
    };
    readTextFile(path: string): Promise<string>;
    makeTempFile(options: { suffix: string }): Promise<string>;
    writeTextFile(path: string, text: string): Promise<void>;
  };
}).Deno;

/** Throws unless `body` throws (or rejects with) the shim's AssertionError. */
async function mustFail(what: string, body: () => unknown): Promise<void> {
  try {
    await body();
  } catch (error) {
    if (error instanceof AssertionError) return;
    throw new Error(`${what}: threw ${String(error)} instead of an AssertionError`);
  }
  throw new Error(`${what}: passed, but must fail`);
}

async function mustPass(what: string, body: () => unknown): Promise<void> {
  try {
    await body();
  } catch (error) {
    throw new Error(`${what}: must pass, but threw ${String(error)}`);
  }
}

class Base {}
class Derived extends Base {}

const CASES: [string, () => unknown, () => unknown][] = [
  ["toBe", () => expect(1).toBe(1), () => expect({}).toBe({})],
  ["toBe NaN", () => expect(NaN).toBe(NaN), () => expect(0).toBe(-0)],
  ["toEqual", () => expect({ a: [1, { b: new Uint8Array([1]) }], u: undefined }).toEqual({ a: [1, { b: new Uint8Array([1]) }] }), () =>
    expect({ a: [1, { b: new Uint8Array([1]) }] }).toEqual({ a: [1, { b: new Uint8Array([2]) }] })],
  ["toEqual arrays", () => expect([1, 2]).toEqual([1, 2]), () => expect([1, 2]).toEqual([1, 2, 3])],
  ["toEqual types", () => expect(new Map([[1, "a"]])).toEqual(new Map([[1, "a"]])), () => expect([1]).toEqual({ 0: 1 })],
  ["toStrictEqual", () => expect({ a: 1 }).toStrictEqual({ a: 1 }), () => expect({ a: 1, b: undefined }).toStrictEqual({ a: 1 })],
  ["toMatchObject", () => expect({ a: 1, b: { c: 2, d: 3 } }).toMatchObject({ b: { c: 2 } }), () =>
    expect({ a: 1, b: { c: 2 } }).toMatchObject({ b: { c: 3 } })],
  ["toMatchObject arrays", () => expect([{ a: 1, b: 2 }]).toMatchObject([{ a: 1 }]), () => expect([{ a: 1 }, {}]).toMatchObject([{ a: 1 }])],
  ["toMatch", () => expect("hello world").toMatch(/wor/), () => expect("hello").toMatch("world")],
  ["toContain", () => expect(["a", "b"]).toContain("b"), () => expect("abc").toContain("d")],
  ["toContain identity", () => expect(new Set([1])).toContain(1), () => expect([{ a: 1 }]).toContain({ a: 1 })],
  ["toHaveLength", () => expect("abc").toHaveLength(3), () => expect([1]).toHaveLength(2)],
  ["toHaveProperty", () => expect({ a: { b: 1 } }).toHaveProperty("a.b", 1), () => expect({ a: {} }).toHaveProperty("a.b")],
  ["toBeInstanceOf", () => expect(new Derived()).toBeInstanceOf(Base), () => expect(new Base()).toBeInstanceOf(Derived)],
  ["toBeNull", () => expect(null).toBeNull(), () => expect(undefined).toBeNull()],
  ["toBeUndefined", () => expect(undefined).toBeUndefined(), () => expect(null).toBeUndefined()],
  ["toBeDefined", () => expect(0).toBeDefined(), () => expect(undefined).toBeDefined()],
  ["toBeTruthy", () => expect("x").toBeTruthy(), () => expect("").toBeTruthy()],
  ["toBeGreaterThan", () => expect(2).toBeGreaterThan(1), () => expect(1).toBeGreaterThan(1)],
  ["toBeGreaterThanOrEqual", () => expect(1).toBeGreaterThanOrEqual(1), () => expect(0).toBeGreaterThanOrEqual(1)],
  ["toBeLessThan", () => expect(1).toBeLessThan(2), () => expect(2).toBeLessThan(2)],
  ["toThrow", () => expect(() => { throw new TypeError("bad input"); }).toThrow(TypeError), () =>
    expect(() => { throw new Error("bad"); }).toThrow(TypeError)],
  ["toThrow message", () => expect(() => { throw new Error("bad input"); }).toThrow(/input/), () =>
    expect(() => { throw new Error("bad"); }).toThrow("input")],
  ["toThrow nothing", () => expect(() => 1).not.toThrow(), () => expect(() => 1).toThrow()],
  ["not", () => expect(1).not.toBe(2), () => expect(1).not.toBe(1)],
  ["message", () => expect(1, "why").toBe(1), () => expect(1, "why").toBe(2)],
  ["rejects", () => expect(Promise.reject(new Error("boom"))).rejects.toThrow("boom"), () =>
    expect(Promise.resolve(1)).rejects.toThrow()],
  ["rejects with another error", () => expect(Promise.reject(new TypeError("x"))).rejects.toThrow(TypeError), () =>
    expect(Promise.reject(new Error("x"))).rejects.toThrow(TypeError)],
  ["resolves", () => expect(Promise.resolve({ a: 1 })).resolves.toEqual({ a: 1 }), () =>
    expect(Promise.resolve(1)).resolves.toBe(2)],
  ["resolves on a rejection", () => expect(Promise.resolve(1)).resolves.not.toBe(2), () =>
    expect(Promise.reject(new Error("x"))).resolves.toBeDefined()],
];

for (const [name, passing, failing] of CASES) {
  test(`${name}: passes when it holds, fails when it does not`, async () => {
    await mustPass(`${name} (holds)`, passing);
    await mustFail(`${name} (does not hold)`, failing);
  });
}

test("the failure message names the values and the label", async () => {
  try {
    expect({ id: 1 }, "the user").toEqual({ id: 2 });
  } catch (error) {
    const message = (error as Error).message;
    if (!message.startsWith("the user: ") || !message.includes("id: 1") || !message.includes("id: 2")) {
      throw new Error(`unhelpful message: ${message}`);
    }
    return;
  }
  await mustFail("toEqual", () => {});
});

test("a file run by deno test through the shim reports exactly the failures it should", async () => {
  const fixture = new URL("./fixtures/shim_cases.ts", import.meta.url).pathname;
  // The project's import map (chai, @vitest/expect) without its test excludes, which name this fixture.
  const root = new URL("../../deno.json", import.meta.url);
  const { imports } = JSON.parse(await Deno.readTextFile(root.pathname)) as { imports: Record<string, string> };
  const absolute = Object.fromEntries(Object.entries(imports).map(([k, v]) => [k, new URL(v, root).href]));
  const config = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(config, JSON.stringify({ imports: absolute }));
  // "deno" from PATH (npm scripts put node_modules/.bin first), which is what --allow-run=deno permits.
  const { code, stdout, stderr } = await new Deno.Command("deno", {
    args: ["test", "--config", config, "--no-check", "--allow-read", "--allow-env", fixture],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const out = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  const fail = (why: string) => new Error(`${why}\n--- deno test output ---\n${out}`);
  if (code === 0) throw fail("the run passed, but it has failing tests");
  // Top-level tests and blocks; the tests inside blocks are counted as steps.
  const summary = /FAILED \| (\d+) passed[^|]*\| (\d+) failed[^|]*\| (\d+) ignored/.exec(out);
  if (!summary || summary[1] !== "6" || summary[2] !== "11" || summary[3] !== "2") {
    throw fail(`expected 6 passed, 11 failed, 2 ignored; got ${summary?.[0] ?? "no summary"}`);
  }
  for (const line of out.split("\n")) {
    const m = /^\s*((?:pass|fail|skip): .*) \.\.\. (ok|FAILED|ignored)/.exec(line);
    if (!m) continue;
    const wanted = m[1]!.startsWith("pass:") ? "ok" : m[1]!.startsWith("skip:") ? "ignored" : "FAILED";
    if (m[2] !== wanted) throw fail(`"${m[1]}" was ${m[2]}, expected ${wanted}`);
  }
  const order = [...out.matchAll(/^order: (.*)$/gm)].map((m) => m[1]);
  const expected = ["beforeAll", "test first", "afterEach", "test second", "afterEach", "afterAll"];
  if (JSON.stringify(order) !== JSON.stringify(expected)) throw fail(`hook order ${JSON.stringify(order)}`);
}, 60_000);
