// Runs on all three runtimes: proves which runner executes the test tree, and that the runtime is the version
// package-lock.json pins (the `deno` and `bun` devDependencies), so "CI proves Deno X, Bun Y" stays true.
import { readFileSync } from "node:fs";
import * as vitest from "vitest";
import { expect, test } from "vitest";

const g = globalThis as {
  Deno?: { version: { deno: string } };
  Bun?: { version: string };
  process?: { versions?: { node?: string }; env?: Record<string, string | undefined> };
};
const runtime = g.Deno ? "deno" : g.Bun ? "bun" : "node";
const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as { packages: Record<string, { version?: string }> };
const pinned = (name: string): string | undefined => lock.packages[`node_modules/${name}`]?.version;

/** A specifier the bundler cannot see, so vitest on Node does not try to resolve the other runtimes' modules. */
const load = (specifier: string): Promise<Record<string, unknown>> => import(specifier);

test(`the "vitest" import is the runner of the runtime (${runtime})`, async () => {
  if (runtime === "bun") {
    // Bun maps "vitest" to its own bun:test; the real vitest would throw outside its runner.
    expect(vitest.expect).toBe((await load("bun:test")).expect);
  } else if (runtime === "deno") {
    // deno.json's import map sends "vitest" to the shim.
    expect(vitest.expect).toBe((await load(new URL("../shims/vitest_deno.ts", import.meta.url).href)).expect);
  } else {
    expect(typeof (vitest as unknown as { vi?: unknown }).vi).toBe("object");
  }
});

test(`the runtime is the version CI pins (${runtime})`, () => {
  const hint = "run the tests through the npm scripts (npm test, test:node26, test:deno, test:bun), which use node_modules/.bin";
  if (runtime === "deno") expect(g.Deno!.version.deno, hint).toBe(pinned("deno"));
  else if (runtime === "bun") expect(g.Bun!.version, hint).toBe(pinned("bun"));
  // Node: the oldest supported line (the `node` devDependency, first on PATH in npm scripts), or the current LTS
  // line (`node26`) under `npm run test:node26`, which names it in TEST_NODE_PACKAGE.
  else expect(g.process!.versions!.node, hint).toBe(pinned(g.process!.env?.TEST_NODE_PACKAGE ?? "node"));
});
