/**
 * `vitest` on Deno: Deno's own `node:test` runs the tests and @vitest/expect (vitest's matchers, on chai) checks
 * them; deno.json maps "vitest" here and the packages' bare imports into node_modules. What is left is glue:
 * vitest's argument order (`test(name, fn, timeout)`), `.each`, `.skipIf`, `.runIf`, and a teardown returned by
 * `beforeAll`. A default timeout of 5 s, as vitest's.
 *
 * @module
 */
import * as nodeTest from "node:test";
import * as chai from "chai";
import { JestAsymmetricMatchers, JestChaiExpect, JestExtend } from "@vitest/expect";

chai.use(JestExtend as Parameters<typeof chai.use>[0]);
chai.use(JestChaiExpect as Parameters<typeof chai.use>[0]);
chai.use(JestAsymmetricMatchers as Parameters<typeof chai.use>[0]);
// deno-lint-ignore no-explicit-any
export const expect: any = chai.expect;
export const AssertionError: typeof chai.AssertionError = chai.AssertionError;

// deno-lint-ignore no-explicit-any
type Fn = (...args: any[]) => unknown;
type Options = number | { timeout?: number } | undefined;
const timeoutOf = (options: Options): number => (typeof options === "number" ? options : options?.timeout) ?? 5_000;

/** vitest's `%s`/`%i`/`%d`/`%j`/`$name` in `.each` titles. */
function title(name: string, row: unknown, index: number): string {
  const args = Array.isArray(row) ? [...row] : [row];
  return name.replace(/%[sidfjo#%]|\$(\w+)/g, (token, key?: string) => {
    if (key !== undefined) return String((row as Record<string, unknown>)?.[key]);
    if (token === "%%") return "%";
    if (token === "%#") return String(index);
    const value = args.shift();
    return token === "%j" || token === "%o" ? JSON.stringify(value) : String(value);
  });
}

/** vitest's `.each` typing: an array row spreads into the body's arguments, any other row is its one argument. */
interface Each {
  <T extends unknown[] | [unknown]>(rows: readonly T[]): (name: string, fn: (...args: T) => unknown, options?: Options) => void;
  <T>(rows: readonly T[]): (name: string, fn: (...args: T[]) => unknown, options?: Options) => void;
}
type Define = (name: string, options: { timeout?: number; skip?: boolean }, fn: Fn) => unknown;

/**
 * `beforeEach`/`afterEach` run inside each test, so that a failing hook fails its test (Deno's node:test drops
 * an afterEach failure) and a teardown returned by `beforeEach` runs after the `afterEach` hooks, as in vitest.
 */
interface Scope {
  before: Fn[];
  after: Fn[];
  teardowns: Fn[];
}
const scopes: Scope[] = [{ before: [], after: [], teardowns: [] }];
const top = (): Scope => scopes[scopes.length - 1]!;

async function withEachHooks(chain: Scope[], fn: Fn): Promise<void> {
  const teardowns: unknown[] = [];
  try {
    for (const scope of chain) for (const hook of scope.before) teardowns.push(await hook());
    await fn();
  } finally {
    for (const scope of [...chain].reverse()) for (const hook of [...scope.after].reverse()) await hook();
    for (const teardown of teardowns.reverse()) if (typeof teardown === "function") await teardown();
  }
}
type Runner = ((name: string, fn?: Fn, options?: Options) => void) & {
  skip(name: string, fn?: Fn, options?: Options): void;
  skipIf(condition: unknown): (name: string, fn?: Fn, options?: Options) => void;
  runIf(condition: unknown): (name: string, fn?: Fn, options?: Options) => void;
  each: Each;
};

function runner(define: Define, isTest: boolean): Runner {
  const run = (name: string, fn: Fn = () => {}, options?: Options, skip = false): void => {
    if (isTest) {
      const chain = scopes.slice();
      define(name, { timeout: timeoutOf(options), skip }, () => withEachHooks(chain, fn));
      return;
    }
    const parents = scopes.slice(); // a block's body may run later than its definition
    define(name, { skip }, () => {
      const scope: Scope = { before: [], after: [], teardowns: [] };
      const saved = scopes.splice(0, scopes.length, ...parents, scope);
      try {
        fn();
      } finally {
        scopes.splice(0, scopes.length, ...saved);
      }
      // Registered last, so teardowns returned by `beforeAll` run after the block's `afterAll` hooks.
      nodeTest.after(async () => void (await runAll(scope.teardowns.reverse())));
    });
  };
  const each = ((rows: readonly unknown[]) => (name: string, fn: Fn, options?: Options) =>
    rows.forEach((row, i) => run(title(name, row, i), () => (Array.isArray(row) ? fn(...row) : fn(row)), options))) as Each;
  return Object.assign((name: string, fn?: Fn, options?: Options) => run(name, fn, options), {
    skip: (name: string, fn?: Fn, options?: Options) => run(name, fn, options, true),
    skipIf: (condition: unknown) => (name: string, fn?: Fn, options?: Options) => run(name, fn, options, Boolean(condition)),
    runIf: (condition: unknown) => (name: string, fn?: Fn, options?: Options) => run(name, fn, options, !condition),
    each,
  });
}

export const describe: Runner = runner(nodeTest.describe as never, false);
export const test: Runner = runner(nodeTest.it as never, true);
export const it: Runner = test;
export const beforeEach = (fn: Fn): void => void top().before.push(fn);
export const afterEach = (fn: Fn): void => void top().after.push(fn);
export const afterAll = (fn: Fn): void => void nodeTest.after(async () => void (await fn()));
/** A function returned by a `beforeAll` hook is its teardown, as in vitest. */
export function beforeAll(fn: Fn): void {
  const scope = top();
  nodeTest.before(async () => {
    const teardown = await fn();
    if (typeof teardown === "function") scope.teardowns.push(teardown as Fn);
  });
  // At a file's top level there is no block end to wait for: its teardowns run with its afterAll hooks.
  if (scope === scopes[0] && scope.teardowns.length === 0 && !registeredTop) {
    registeredTop = true;
    nodeTest.after(async () => void (await runAll(scopes[0]!.teardowns.reverse())));
  }
}
let registeredTop = false;

async function runAll(fns: Fn[]): Promise<void> {
  for (const fn of fns) await fn();
}
