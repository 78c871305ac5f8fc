/**
 * `vitest` on Deno: Deno's own `node:test` runs the tests and @vitest/expect (vitest's matchers, on chai) checks
 * them; deno.json maps "vitest" here. The glue covers only what the Deno-run files use: vitest's argument order
 * (`test(name, fn, timeout)`, 5 s by default as in vitest), `.each` titles (`%s`, `%j`, `%#`), `.skipIf`, and
 * `afterEach`, run inside each test so that a failing hook fails it (Deno's node:test drops such a failure).
 *
 * @module
 */
import { after, before, describe as block, it as single } from "node:test";
import * as chai from "chai";
import { JestAsymmetricMatchers, JestChaiExpect, JestExtend } from "@vitest/expect";

for (const plugin of [JestExtend, JestChaiExpect, JestAsymmetricMatchers]) chai.use(plugin as Parameters<typeof chai.use>[0]);
// deno-lint-ignore no-explicit-any
export const expect: any = chai.expect;
export const AssertionError: typeof chai.AssertionError = chai.AssertionError;
export { after as afterAll, before as beforeAll };

// deno-lint-ignore no-explicit-any
type Fn = (...args: any[]) => unknown;
type Define = (name: string, fn: Fn, timeout?: number) => void;
/** vitest's `.each` typing: an array row spreads into the body's arguments, any other row is its one argument. */
interface Each {
  <T extends unknown[] | [unknown]>(rows: readonly T[]): (name: string, fn: (...args: T) => unknown, timeout?: number) => void;
  <T>(rows: readonly T[]): (name: string, fn: (...args: T[]) => unknown, timeout?: number) => void;
}
/** `test`, `it` or `describe` as the test files call them. */
export type Runner = Define & { each: Each; skipIf(condition: unknown): Define };

function runner(define: (name: string, skip: boolean, fn: Fn, timeout?: number) => void): Runner {
  const title = (name: string, row: unknown, index: number): string => {
    const args = Array.isArray(row) ? [...row] : [row];
    return name.replace(/%[sj#]/g, (token) => (token === "%#" ? String(index) : token === "%j" ? JSON.stringify(args.shift()) : String(args.shift())));
  };
  return Object.assign((name: string, fn: Fn, timeout?: number) => define(name, false, fn, timeout), {
    each: ((rows: readonly unknown[]): Define => (name, fn, timeout) =>
      rows.forEach((row, i) => define(title(name, row, i), false, () => (Array.isArray(row) ? fn(...row) : fn(row)), timeout))) as Each,
    skipIf: (condition: unknown): Define => (name, fn, timeout) => define(name, Boolean(condition), fn, timeout),
  });
}

const afterEachHooks: Fn[] = [];
/** Hooks for every test of the file (the Deno-run files register them at the top level only). */
export const afterEach = (fn: Fn): void => void afterEachHooks.push(fn);

export const test: Runner = runner((name, skip, fn, timeout = 5_000) =>
  single(name, { skip, timeout }, async () => {
    try {
      await fn();
    } finally {
      for (const hook of afterEachHooks) await hook();
    }
  }));
export const it: Runner = test;
export const describe: Runner = runner((name, skip, fn) => block(name, { skip }, () => void fn()));
