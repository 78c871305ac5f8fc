/**
 * The top self-time functions of a V8 CPU profile (`node --cpu-prof`), as the README quotes them:
 *
 *   tsx test/bench/profile.ts FILE.cpuprofile [--top 25]
 *
 * `npm run bench -- --profile` writes one profile per Node child to `.artifacts/bench/profiles/`. Also prints the
 * busy time by category: the library's own functions, the runtime's JS, socket writes, GC.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function, in ms and in share of all samples, heaviest first. */
export function selfTimes(profile: Profile): { name: string; where: string; ms: number; share: number }[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const totals = new Map<string, { name: string; where: string; ms: number }>();
  let all = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]!);
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    all += ms;
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || "(anonymous)";
    let where = url;
    if (url.startsWith("file://")) where = relative(process.cwd(), fileURLToPath(url));
    where = where === "" ? "" : `${where}:${lineNumber + 1}`;
    const key = `${name} ${where}`;
    const entry = totals.get(key) ?? { name, where, ms: 0 };
    entry.ms += ms;
    totals.set(key, entry);
  }
  return [...totals.values()]
    .map((t) => ({ ...t, share: t.ms / all }))
    .sort((a, b) => b.ms - a.ms);
}

/** Busy time (idle excluded) by where it is spent: the library, the runtime's JS, the kernel's socket writes, GC. */
export function categories(profile: Profile): { category: string; share: number }[] {
  const totals = new Map<string, number>();
  let busy = 0;
  for (const t of selfTimes(profile)) {
    if (t.name === "(idle)") continue;
    let category = "runtime native (parser, builtins, other)";
    if (t.name === "(garbage collector)") category = "garbage collector";
    else if (t.name === "(program)") category = "(program): VM outside JS";
    else if (t.name === "writev" || t.name === "writevGeneric") category = "socket writes (writev, kernel)";
    else if (t.where.includes("lib/adapters/")) category = "library: Node adapter";
    else if (t.where.includes("lib/")) category = "library: core";
    else if (t.where.startsWith("node:") || t.where.startsWith("ext:")) category = "runtime JS (http, streams, fetch)";
    else if (t.where.includes("test/bench/")) category = "bench harness";
    totals.set(category, (totals.get(category) ?? 0) + t.ms);
    busy += t.ms;
  }
  return [...totals].map(([category, ms]) => ({ category, share: ms / busy })).sort((a, b) => b.share - a.share);
}

if (process.argv[1]?.endsWith("profile.ts")) {
  const file = process.argv[2];
  if (file === undefined) throw new Error("Usage: tsx test/bench/profile.ts FILE.cpuprofile [--top N]");
  const top = Number(process.argv[process.argv.indexOf("--top") + 1] ?? 25) || 25;
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  console.log("busy time by category (idle excluded):");
  for (const c of categories(profile)) console.log(`${(c.share * 100).toFixed(1).padStart(5)}%  ${c.category}`);
  console.log(`\ntop ${top} functions by self time (share of all samples, idle included):`);
  for (const row of selfTimes(profile).slice(0, top)) {
    console.log(`${(row.share * 100).toFixed(1).padStart(5)}%  ${row.ms.toFixed(0).padStart(6)} ms  ${row.name}  ${row.where}`);
  }
}
