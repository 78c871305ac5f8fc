// The design card's promises, checked: no runtime dependencies, manifests in step, and a core on Web APIs only.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";

const pkg = JSON.parse(readFileSync("package.json", "utf8"));
const deno = JSON.parse(readFileSync("deno.json", "utf8"));

test("package.json has no runtime dependencies", () => {
  expect(pkg.dependencies ?? {}).toEqual({});
  expect(pkg.peerDependencies ?? {}).toEqual({});
  expect(pkg.optionalDependencies ?? {}).toEqual({});
});

test("package.json and deno.json carry the same version and entry points", () => {
  expect(deno.version).toBe(pkg.version);
  const npmEntries = Object.keys(pkg.exports ?? { ".": "" }).sort();
  const denoEntries = Object.keys(deno.exports).sort();
  expect(npmEntries).toEqual(denoEntries);
});

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : [];
  });
}

test("nothing outside lib/adapters/ and lib/cli/ names Deno, Bun, process, Buffer or node:*", () => {
  const offenders: string[] = [];
  for (const file of ["mod.ts", ...files("lib")]) {
    if (/^lib\/(adapters|cli)\//.test(file)) continue;
    const code = readFileSync(file, "utf8")
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/\/\/.*$/gm, "");
    const hit = /\b(Deno|Bun|process|Buffer)\.|\bfrom\s+["']node:|\brequire\(/.exec(code);
    if (hit) offenders.push(`${file}: ${hit[0]}`);
  }
  expect(offenders).toEqual([]);
});

test("relative imports carry explicit .ts specifiers, so Deno runs the source unbuilt", () => {
  const offenders: string[] = [];
  for (const file of ["mod.ts", ...files("lib")]) {
    for (const match of readFileSync(file, "utf8").matchAll(/from\s+["'](\.{1,2}\/[^"']+)["']/g)) {
      if (!match[1]!.endsWith(".ts")) offenders.push(`${file}: ${match[1]}`);
    }
  }
  expect(offenders).toEqual([]);
});
