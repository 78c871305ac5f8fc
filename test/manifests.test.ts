// The design card's promises, checked: no runtime dependencies, manifests in step, and a core on Web APIs only.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";

const pkg = JSON.parse(readFileSync("package.json", "utf8"));
const deno = JSON.parse(readFileSync("deno.json", "utf8"));

test("package.json has no runtime dependencies", () => {
  expect(pkg.dependencies ?? {}).toEqual({});
  // Database drivers are optional peers: npm never installs them unasked, and the stores take injected executors.
  const peers = Object.keys(pkg.peerDependencies ?? {});
  expect(peers.filter((name) => pkg.peerDependenciesMeta?.[name]?.optional !== true)).toEqual([]);
  expect(pkg.optionalDependencies ?? {}).toEqual({});
});

test("package.json and deno.json carry the same version and entry points", () => {
  expect(deno.version).toBe(pkg.version);
  const npmEntries = Object.keys(pkg.exports ?? { ".": "" }).sort();
  const denoEntries = Object.keys(deno.exports).sort();
  expect(npmEntries).toEqual(denoEntries);
});

test("each npm entry point is the build of the same source as the JSR one: dist/*.js with dist/*.d.ts", () => {
  for (const [entry, source] of Object.entries(deno.exports as Record<string, string>)) {
    expect(existsSync(source), `${entry} → ${source}`).toBe(true);
    expect(source).toMatch(/^\.\/.*\.ts$/);
    const built = `./dist/${source.slice(2, -3)}`;
    expect(pkg.exports[entry], entry).toEqual({ types: `${built}.d.ts`, default: `${built}.js` });
    // JSR publishes what deno.json's publish.include names and publish.exclude does not.
    const named = (paths: string[] | undefined) => (paths ?? []).some((path) => source.slice(2) === path || source.slice(2).startsWith(path));
    expect(named(deno.publish.include) && !named(deno.publish.exclude), source).toBe(true);
  }
  expect(pkg.main).toBe(pkg.exports["."].default);
  expect(pkg.types).toBe(pkg.exports["."].types);
  expect(pkg.files).toContain("dist");
});

test("npm test lints the docs of every JSR entry point (deno doc --lint, what JSR scores documentation by)", () => {
  const lint = /deno doc --lint ([^&]+)/.exec(pkg.scripts["check:deno"])?.[1]?.trim().split(/\s+/) ?? [];
  const sources = Object.values(deno.exports as Record<string, string>).map((source) => source.slice(2));
  expect(lint.sort()).toEqual(sources.sort());
  expect(pkg.scripts.test).toContain("check:deno");
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

test("the package is installable and described: bin, LICENSE, CHANGELOG, repository, schema shipped on npm and JSR", () => {
  expect(pkg.bin).toEqual({ "oauth2-fetch-server": "./dist/lib/cli/serve.js" });
  expect(readFileSync("lib/cli/serve.ts", "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
  // A git install runs `prepare`, so it gets dist/ like the tarball.
  expect(pkg.scripts.prepare).toBe("npm run build");
  expect(pkg.repository?.url).toMatch(/^git\+https:\/\//);
  expect(readFileSync("LICENSE", "utf8")).toMatch(new RegExp(`^${pkg.license} License`));
  expect(deno.license).toBe(pkg.license);
  expect(readFileSync("CHANGELOG.md", "utf8")).toContain(`## ${pkg.version}`);
  for (const file of ["LICENSE", "CHANGELOG.md", "lib/reference/config.schema.json"]) {
    expect(pkg.files).toContain(file);
    expect(deno.publish.include.some((path: string) => file === path || file.startsWith(path))).toBe(true);
  }
});

test("the READMEs link only to files inside the repository", () => {
  for (const readme of ["README.md", "conformance/README.md"]) {
    const dir = readme.includes("/") ? readme.slice(0, readme.lastIndexOf("/") + 1) : "";
    for (const [, target] of readFileSync(readme, "utf8").matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^(https?:|#|mailto:)/.test(target!)) continue;
      const path = join(dir, target!.split("#")[0]!);
      expect(path.startsWith("..") || path.startsWith("/"), `${readme}: ${target}`).toBe(false);
      expect(existsSync(path), `${readme}: ${target}`).toBe(true);
    }
  }
});
