/**
 * The part of vitest's API that the test tree uses, on top of `Deno.test`, so `deno test` runs the same files
 * as vitest and `bun test`. deno.json maps the bare specifier "vitest" here; nothing else imports it.
 *
 * What it keeps from vitest: `describe`/`test`/`it` with `.each`, `.skip`, `.skipIf`, `.runIf`, `.only`,
 * `.todo`; the four hooks with vitest's order (before hooks outer to inner, after hooks inner to outer, the
 * later-registered first), a function returned by a before hook being its teardown; a 5 s default timeout (a number or `{ timeout }` as the third argument); and the
 * matchers below, with `.not`, `.resolves` and `.rejects`. `toEqual` ignores `undefined` properties, as
 * vitest's does; `toStrictEqual` does not.
 *
 * What differs: each test is one `Deno.test`, run in registration order, with Deno's op and resource
 * sanitizers off (vitest has none, and a server started in `beforeAll` outlives the first test). `afterAll`
 * runs after the last test of its block that runs; with `deno test --filter` it may not run at all.
 * Anything else (`vi`, snapshots, asymmetric matchers) is missing on purpose: a file that needs it fails to
 * load under Deno, loudly, instead of passing without checking.
 *
 * `test/shims/vitest_deno_test.ts` proves that failing expectations, hooks and timeouts do fail.
 *
 * @module
 */

type Body = () => unknown;
type Options = number | { timeout?: number };

interface DenoTestDefinition {
  name: string;
  fn: () => Promise<void>;
  ignore?: boolean;
  only?: boolean;
  sanitizeOps?: boolean;
  sanitizeResources?: boolean;
}

/** The two members of the `Deno` namespace the shim touches, typed structurally (no Deno types needed). */
const runtime = (globalThis as unknown as {
  Deno: { test(definition: DenoTestDefinition): void; inspect(value: unknown, options?: { depth?: number }): string };
}).Deno;

const DEFAULT_TIMEOUT = 5_000;

interface Scope {
  readonly name: string;
  readonly parent: Scope | undefined;
  readonly skip: boolean;
  readonly beforeAll: Body[];
  readonly afterAll: Body[];
  readonly beforeEach: Body[];
  readonly afterEach: Body[];
  /** What `beforeAll` hooks returned, run with the `afterAll` hooks. */
  readonly teardowns: Body[];
  /** Tests of this block and its children that will run, and how many have finished. */
  total: number;
  finished: number;
  setup: Promise<unknown> | undefined;
}

function scope(name: string, parent: Scope | undefined, skip: boolean): Scope {
  return {
    name, parent, skip, beforeAll: [], afterAll: [], beforeEach: [], afterEach: [], teardowns: [],
    total: 0, finished: 0, setup: undefined,
  };
}

const root: Scope = scope("", undefined, false);
let current: Scope = root;

/** The chain of blocks from the outermost to `s`. */
function chain(s: Scope): Scope[] {
  const scopes: Scope[] = [];
  for (let at: Scope | undefined = s; at !== undefined; at = at.parent) scopes.unshift(at);
  return scopes;
}

function fullName(s: Scope, name: string): string {
  return [...chain(s).map((at) => at.name).filter((n) => n !== ""), name].join(" > ");
}

async function runAll(hooks: readonly Body[]): Promise<void> {
  for (const hook of hooks) await hook();
}

/** Runs before-hooks in order; as in vitest, a function one returns is its teardown, kept in `teardowns`. */
async function runBefore(hooks: readonly Body[], teardowns: Body[]): Promise<void> {
  for (const hook of hooks) {
    const result = await hook();
    if (typeof result === "function") teardowns.push(result as Body);
  }
}

async function withTimeout(body: Body, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Test timed out in ${ms}ms.`)), ms);
  });
  try {
    await Promise.race([Promise.resolve().then(body), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function register(name: string, body: Body | undefined, options: Options | undefined, flags: { skip?: boolean; only?: boolean }): void {
  const owner = current;
  const blocks = chain(owner);
  const ignore = flags.skip === true || body === undefined || blocks.some((s) => s.skip);
  if (!ignore) for (const s of blocks) s.total++;
  const ms = typeof options === "number" ? options : options?.timeout ?? DEFAULT_TIMEOUT;
  runtime.test({
    name: fullName(owner, name),
    ignore,
    ...(flags.only ? { only: true } : {}),
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      let failure: { error: unknown } | undefined;
      const teardowns = new Map<Scope, Body[]>(blocks.map((s) => [s, []]));
      try {
        // beforeAll once per block, outer first; a failed one fails every test of its block.
        for (const s of blocks) await (s.setup ??= runBefore(s.beforeAll, s.teardowns));
        for (const s of blocks) await runBefore(s.beforeEach, teardowns.get(s)!);
        await withTimeout(body!, ms);
      } catch (error) {
        failure = { error };
      }
      for (const s of [...blocks].reverse()) {
        try {
          await runAll([...teardowns.get(s)!, ...s.afterEach].reverse());
        } catch (error) {
          failure ??= { error };
        }
      }
      for (const s of [...blocks].reverse()) {
        if (++s.finished !== s.total) continue;
        try {
          await runAll([...s.teardowns, ...s.afterAll].reverse());
        } catch (error) {
          failure ??= { error };
        }
      }
      if (failure) throw failure.error;
    },
  });
}

// --- describe / test / it -------------------------------------------------------------------------------

type Row = unknown;
type EachName = string | ((...args: never[]) => string);

/** vitest's `.each` typing: an array row spreads into the body's arguments, any other row is its one argument. */
interface EachFn {
  <T extends unknown[] | [unknown]>(rows: readonly T[]): (name: EachName, body: (...args: T) => unknown, options?: Options) => void;
  <T>(rows: readonly T[]): (name: EachName, body: (...args: T[]) => unknown, options?: Options) => void;
}

/** vitest's name template: %s %d %i %f %j %o %O %# %% take the row's values in turn; $key names a field of an object row. */
function formatName(template: string, row: Row, index: number): string {
  const args = Array.isArray(row) ? [...row] : [row];
  let name = template.replace(/%([sdifjoO#%])/g, (all, spec: string) => {
    if (spec === "%") return "%";
    if (spec === "#") return String(index);
    if (args.length === 0) return all;
    const value = args.shift();
    if (spec === "d" || spec === "i") return String(spec === "i" ? Math.trunc(Number(value)) : Number(value));
    if (spec === "f") return String(Number(value));
    if (spec === "j") return JSON.stringify(value);
    if (spec === "s" && typeof value !== "object") return String(value);
    return runtime.inspect(value, { depth: 2 });
  });
  if (!Array.isArray(row) && typeof row === "object" && row !== null) {
    name = name.replace(/\$([A-Za-z_][\w.]*)/g, (all, path: string) => {
      let value: unknown = row;
      for (const key of path.split(".")) value = (value as Record<string, unknown> | undefined)?.[key];
      return value === undefined && !path.includes(".") && !(path in row) ? all : typeof value === "string" ? value : runtime.inspect(value);
    });
  }
  return name;
}

function each(define: (name: string, body: Body, options?: Options) => void): EachFn {
  return ((rows: readonly Row[]) => (name: EachName, body: (...args: unknown[]) => unknown, options?: Options): void => {
    rows.forEach((row, index) => {
      const args: unknown[] = Array.isArray(row) ? row : [row];
      const title = typeof name === "function" ? name(...(args as never[])) : formatName(name, row, index);
      define(title, () => body(...args), options);
    });
  }) as EachFn;
}

interface TestFn {
  (name: string, body?: Body, options?: Options): void;
  skip(name: string, body?: Body, options?: Options): void;
  only(name: string, body?: Body, options?: Options): void;
  todo(name: string, body?: Body, options?: Options): void;
  skipIf(condition: unknown): (name: string, body?: Body, options?: Options) => void;
  runIf(condition: unknown): (name: string, body?: Body, options?: Options) => void;
  each: EachFn;
}

function makeTest(): TestFn {
  const define = (flags: { skip?: boolean; only?: boolean }) => (name: string, body?: Body, options?: Options) =>
    register(name, body, options, flags);
  const fn = define({}) as TestFn;
  fn.skip = define({ skip: true });
  fn.only = define({ only: true });
  fn.todo = define({ skip: true });
  fn.skipIf = (condition) => define({ skip: Boolean(condition) });
  fn.runIf = (condition) => define({ skip: !condition });
  fn.each = each(fn);
  return fn;
}

export const test: TestFn = makeTest();
export const it: TestFn = test;

interface DescribeFn {
  (name: string, body: () => void): void;
  skip(name: string, body: () => void): void;
  skipIf(condition: unknown): (name: string, body: () => void) => void;
  runIf(condition: unknown): (name: string, body: () => void) => void;
  each: EachFn;
}

function block(skip: boolean) {
  return (name: string, body: () => void): void => {
    const parent = current;
    current = scope(name, parent, skip);
    try {
      const result = body() as unknown;
      if (result instanceof Promise) throw new Error(`describe("${name}") must not be async: register tests synchronously`);
    } finally {
      current = parent;
    }
  };
}

export const describe: DescribeFn = Object.assign(block(false), {
  skip: block(true),
  skipIf: (condition: unknown) => block(Boolean(condition)),
  runIf: (condition: unknown) => block(!condition),
  each: each((name, body) => block(false)(name, body as () => void)),
});
export const suite: DescribeFn = describe;

export function beforeAll(hook: Body): void {
  current.beforeAll.push(hook);
}
export function afterAll(hook: Body): void {
  current.afterAll.push(hook);
}
export function beforeEach(hook: Body): void {
  current.beforeEach.push(hook);
}
export function afterEach(hook: Body): void {
  current.afterEach.push(hook);
}

// --- expect ---------------------------------------------------------------------------------------------

/** What `expect` throws: an Error whose name tells a failed expectation from a crash. */
export class AssertionError extends Error {
  override name = "AssertionError";
}

const show = (value: unknown): string => runtime.inspect(value, { depth: 6 });

function tag(value: unknown): string {
  return Object.prototype.toString.call(value);
}

/** vitest's deep equality: `strict` also compares prototypes and `undefined`-valued keys. */
export function equals(a: unknown, b: unknown, strict = false, seen: Map<object, object> = new Map()): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (tag(a) !== tag(b)) return false;
  if (strict && Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (seen.get(a) === b) return true;
  seen.set(a, b);
  if (a instanceof Date) return Object.is(a.getTime(), (b as Date).getTime());
  if (a instanceof RegExp) return a.source === (b as RegExp).source && a.flags === (b as RegExp).flags;
  if (a instanceof Error && (a.name !== (b as Error).name || a.message !== (b as Error).message)) return false;
  if (a instanceof Map) {
    const other = b as Map<unknown, unknown>;
    if (a.size !== other.size) return false;
    for (const [key, value] of a) if (!other.has(key) || !equals(value, other.get(key), strict, seen)) return false;
    return true;
  }
  if (a instanceof Set) {
    const other = [...(b as Set<unknown>)];
    if (a.size !== other.length) return false;
    for (const value of a) if (!other.some((o) => equals(value, o, strict, seen))) return false;
    return true;
  }
  if (ArrayBuffer.isView(a) || Array.isArray(a)) {
    const x = a as unknown as ArrayLike<unknown>;
    const y = b as unknown as ArrayLike<unknown>;
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!equals(x[i], y[i], strict, seen)) return false;
    if (!Array.isArray(a)) return true;
  }
  const keys = (o: object) => Object.keys(o).filter((k) => strict || (o as Record<string, unknown>)[k] !== undefined);
  const ka = keys(a).filter((k) => !Array.isArray(a) || !/^\d+$/.test(k));
  const kb = keys(b).filter((k) => !Array.isArray(b) || !/^\d+$/.test(k));
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (strict && !Object.hasOwn(b, k)) return false;
    if (!equals((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], strict, seen)) return false;
  }
  return true;
}

/** vitest's `toMatchObject`: every property of `expected` is in `actual`, recursively; arrays match item by item. */
function matchesObject(actual: unknown, expected: unknown): boolean {
  if (typeof expected !== "object" || expected === null) return equals(actual, expected);
  if (typeof actual !== "object" || actual === null) return false;
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => matchesObject(actual[i], e));
  }
  if (expected instanceof Date || expected instanceof RegExp || expected instanceof Map || expected instanceof Set) {
    return equals(actual, expected);
  }
  return Object.keys(expected).every((k) =>
    k in (actual as object) && matchesObject((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k])
  );
}

/** What a `toThrow` argument accepts: a substring, a pattern, an Error class or an Error with that message. */
function thrownMatches(thrown: unknown, expected: unknown): boolean {
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  if (expected === undefined) return true;
  if (typeof expected === "string") return message.includes(expected);
  if (expected instanceof RegExp) return expected.test(message);
  if (typeof expected === "function") return thrown instanceof (expected as new (...args: never[]) => unknown);
  if (expected instanceof Error) return message === expected.message;
  throw new TypeError(`toThrow() cannot take ${show(expected)}`);
}

interface Outcome {
  pass: boolean;
  /** The failure message when `pass` is false (or, under `.not`, when it is true). */
  message: (not: boolean) => string;
}

const is = (pass: boolean, what: (not: string) => string): Outcome => ({ pass, message: (not) => what(not ? "not " : "") });

/** Stands for the thrown value when a matcher runs on a rejection (`.rejects.toThrow`). */
const REJECTED = Symbol("rejected");
interface Rejected {
  [REJECTED]: unknown;
}

function getProperty(value: unknown, path: string | readonly string[]): { found: boolean; value: unknown } {
  const keys = typeof path === "string" ? path.split(".") : path;
  let at: unknown = value;
  for (const key of keys) {
    if (at === null || at === undefined || !(key in Object(at))) return { found: false, value: undefined };
    at = (at as Record<string, unknown>)[key];
  }
  return { found: true, value: at };
}

const MATCHERS: { [K in keyof Matchers]: (actual: never, ...expected: Parameters<Matchers[K]>) => Outcome } = {
  toBe: (a: unknown, e: unknown) => is(Object.is(a, e), (not) => `expected ${show(a)} ${not}to be ${show(e)}`),
  toEqual: (a: unknown, e: unknown) => is(equals(a, e), (not) => `expected ${show(a)} ${not}to equal ${show(e)}`),
  toStrictEqual: (a: unknown, e: unknown) =>
    is(equals(a, e, true), (not) => `expected ${show(a)} ${not}to strictly equal ${show(e)}`),
  toMatchObject: (a: unknown, e: object) => is(matchesObject(a, e), (not) => `expected ${show(a)} ${not}to match object ${show(e)}`),
  toMatch: (a: unknown, e: string | RegExp) => {
    if (typeof a !== "string") throw new AssertionError(`toMatch() needs a string, got ${show(a)}`);
    return is(typeof e === "string" ? a.includes(e) : e.test(a), (not) => `expected ${show(a)} ${not}to match ${show(e)}`);
  },
  toContain: (a: unknown, e: unknown) => {
    const pass = typeof a === "string"
      ? a.includes(String(e))
      : a !== null && typeof a === "object" && Symbol.iterator in a
      ? [...(a as Iterable<unknown>)].some((item) => item === e)
      : false;
    return is(pass, (not) => `expected ${show(a)} ${not}to contain ${show(e)}`);
  },
  toContainEqual: (a: Iterable<unknown>, e: unknown) =>
    is([...a].some((item) => equals(item, e)), (not) => `expected ${show(a)} ${not}to contain an item equal to ${show(e)}`),
  toHaveLength: (a: { length?: unknown }, n: number) =>
    is(a?.length === n, (not) => `expected ${show(a)} (length ${show(a?.length)}) ${not}to have length ${n}`),
  toHaveProperty: (a: unknown, path: string | readonly string[], ...value: unknown[]) => {
    const got = getProperty(a, path);
    const pass = got.found && (value.length === 0 || equals(got.value, value[0]));
    const what = value.length === 0 ? "" : ` with value ${show(value[0])}`;
    return is(pass, (not) => `expected ${show(a)} ${not}to have property ${show(path)}${what}`);
  },
  toBeInstanceOf: (a: unknown, e: abstract new (...args: never[]) => unknown) =>
    is(a instanceof e, (not) => `expected ${show(a)} ${not}to be an instance of ${e.name}`),
  toBeNull: (a: unknown) => is(a === null, (not) => `expected ${show(a)} ${not}to be null`),
  toBeUndefined: (a: unknown) => is(a === undefined, (not) => `expected ${show(a)} ${not}to be undefined`),
  toBeDefined: (a: unknown) => is(a !== undefined, (not) => `expected ${show(a)} ${not}to be defined`),
  toBeTruthy: (a: unknown) => is(Boolean(a), (not) => `expected ${show(a)} ${not}to be truthy`),
  toBeFalsy: (a: unknown) => is(!a, (not) => `expected ${show(a)} ${not}to be falsy`),
  toBeNaN: (a: unknown) => is(Number.isNaN(a), (not) => `expected ${show(a)} ${not}to be NaN`),
  toBeGreaterThan: (a: number, e: number) => is(a > e, (not) => `expected ${show(a)} ${not}to be greater than ${show(e)}`),
  toBeGreaterThanOrEqual: (a: number, e: number) => is(a >= e, (not) => `expected ${show(a)} ${not}to be >= ${show(e)}`),
  toBeLessThan: (a: number, e: number) => is(a < e, (not) => `expected ${show(a)} ${not}to be less than ${show(e)}`),
  toBeLessThanOrEqual: (a: number, e: number) => is(a <= e, (not) => `expected ${show(a)} ${not}to be <= ${show(e)}`),
  toThrow: (a: unknown, e?: unknown) => {
    let thrown: { value: unknown } | undefined;
    if (typeof a === "object" && a !== null && REJECTED in a) thrown = { value: (a as Rejected)[REJECTED] };
    else if (typeof a === "function") {
      try {
        a();
      } catch (value) {
        thrown = { value };
      }
    } else throw new AssertionError(`toThrow() needs a function or .rejects, got ${show(a)}`);
    const what = e === undefined ? "" : ` matching ${show(e)}`;
    if (thrown === undefined) return is(false, (not) => `expected the function ${not}to throw${what}, but it returned`);
    return is(thrownMatches(thrown.value, e), (not) => `expected ${show(thrown.value)} ${not}to be thrown${what}`);
  },
};

/** The matchers, as a test file calls them. */
export interface Matchers {
  toBe(expected: unknown): void;
  toEqual(expected: unknown): void;
  toStrictEqual(expected: unknown): void;
  toMatchObject(expected: object): void;
  toMatch(expected: string | RegExp): void;
  toContain(expected: unknown): void;
  toContainEqual(expected: unknown): void;
  toHaveLength(length: number): void;
  toHaveProperty(path: string | readonly string[], ...value: unknown[]): void;
  toBeInstanceOf(expected: abstract new (...args: never[]) => unknown): void;
  toBeNull(): void;
  toBeUndefined(): void;
  toBeDefined(): void;
  toBeTruthy(): void;
  toBeFalsy(): void;
  toBeNaN(): void;
  toBeGreaterThan(expected: number): void;
  toBeGreaterThanOrEqual(expected: number): void;
  toBeLessThan(expected: number): void;
  toBeLessThanOrEqual(expected: number): void;
  toThrow(expected?: unknown): void;
}

/** The same matchers on a settled promise (`.resolves`, `.rejects`). */
export type AsyncMatchers = { [K in keyof Matchers]: (...expected: Parameters<Matchers[K]>) => Promise<void> };

/** `expect(value)`: the matchers, their negation, and their promise forms. */
export interface Assertion extends Matchers {
  not: Matchers;
  resolves: AsyncMatchers & { not: AsyncMatchers };
  rejects: AsyncMatchers & { not: AsyncMatchers };
}

function matchers(actual: () => unknown, not: boolean, label: string | undefined): Matchers {
  const out: Record<string, (...expected: unknown[]) => void> = {};
  for (const [name, matcher] of Object.entries(MATCHERS)) {
    out[name] = (...expected) => {
      const outcome = (matcher as (a: unknown, ...e: unknown[]) => Outcome)(actual(), ...expected);
      if (outcome.pass === not) {
        throw new AssertionError(`${label === undefined ? "" : `${label}: `}${outcome.message(not)}`);
      }
    };
  }
  return out as unknown as Matchers;
}

function settled(promise: unknown, mode: "resolves" | "rejects", not: boolean, label: string | undefined): AsyncMatchers {
  const out: Record<string, (...expected: unknown[]) => Promise<void>> = {};
  for (const name of Object.keys(MATCHERS)) {
    out[name] = async (...expected) => {
      let value: unknown;
      try {
        const resolved = await promise;
        if (mode === "rejects") throw new AssertionError(`expected the promise to reject, but it resolved to ${show(resolved)}`);
        value = resolved;
      } catch (error) {
        if (error instanceof AssertionError) throw error;
        if (mode === "resolves") throw new AssertionError(`expected the promise to resolve, but it rejected with ${show(error)}`);
        // toThrow reads the reason as what was thrown; every other matcher reads the reason itself.
        value = name === "toThrow" ? { [REJECTED]: error } : error;
      }
      (matchers(() => value, not, label) as unknown as Record<string, (...e: unknown[]) => void>)[name]!(...expected);
    };
  }
  return out as AsyncMatchers;
}

/** vitest's `expect(value, message?)`. */
export function expect(actual: unknown, message?: string): Assertion {
  const assertion = matchers(() => actual, false, message) as Assertion;
  assertion.not = matchers(() => actual, true, message);
  assertion.resolves = Object.assign(settled(actual, "resolves", false, message), { not: settled(actual, "resolves", true, message) });
  assertion.rejects = Object.assign(settled(actual, "rejects", false, message), { not: settled(actual, "rejects", true, message) });
  return assertion;
}
