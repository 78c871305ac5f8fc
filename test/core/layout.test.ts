// The layout the architecture promises, checked from the source: no import circle in lib/ (type imports
// included), the core context type named only inside lib/core/, and runtime-specific APIs only in the adapters
// and the command line.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sources(path) : entry.name.endsWith(".ts") ? [path] : [];
  });
}

const files = sources("lib");
const text = new Map(files.map((file) => [file, readFileSync(join(ROOT, file), "utf8")]));

function importsOf(file: string): string[] {
  const found: string[] = [];
  for (const match of text.get(file)!.matchAll(/^(?:import|export)\s[^;]*?from\s+"(\.[^"]+)";/gms)) {
    found.push(normalize(join(dirname(file), match[1]!)));
  }
  return found.filter((target) => text.has(target));
}

test("lib/ has no import circle, type imports included", () => {
  const graph = new Map(files.map((file) => [file, importsOf(file)]));
  // Tarjan's strongly connected components: any component of more than one file is a circle.
  let index = 0;
  const indexes = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string): void => {
    indexes.set(file, index);
    low.set(file, index++);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file)!) {
      if (!indexes.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, indexes.get(next)!));
    }
    if (low.get(file) === indexes.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1) circles.push(component.sort());
    }
  };
  for (const file of files) if (!indexes.has(file)) visit(file);
  expect(circles).toEqual([]);
});

test("outside lib/core/, no code names the core context type", () => {
  const naming = files.filter((file) => !file.startsWith(join("lib", "core")) && /\bimport[^;]*\bCore\b[^;]*from\s+"[^"]*core\/context\.ts"/s.test(text.get(file)!));
  expect(naming).toEqual([]);
});

test("runtime-specific APIs appear only in lib/adapters/ and lib/cli/", () => {
  const offending = files
    .filter((file) => !/^lib[\\/](adapters|cli)[\\/]/.test(file))
    .filter((file) =>
      text.get(file)!.split("\n").some((line) =>
        !/^\s*(\*|\/\/|\/\*)/.test(line) && /\b(Deno|Bun|process|Buffer)\.|from\s+"node:|\brequire\(/.test(line.replace(/\/\/.*$/, ""))
      )
    )
    .map((file) => relative(ROOT, join(ROOT, file)));
  expect(offending).toEqual([]);
});
