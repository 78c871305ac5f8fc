/**
 * Shared set-up of the conformance tests: the reference app in-process, the reference target, and a run.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type ConformanceOptions, parseTarget, type Report, runConformance, type Target } from "../../conformance/mod.ts";
import { createReferenceApp } from "../../lib/reference/app.ts";
import type { Storage } from "../../lib/storage/types.ts";
import { memoryStorage } from "../../lib/storage/memory.ts";

/** The base URL of in-process runs; reference.json's base_url. */
export const BASE = "http://127.0.0.1:8080";

export const TARGET_FILE: string = fileURLToPath(new URL("../../conformance/targets/reference.json", import.meta.url));

/** The reference target, as the CLI reads it. */
export function referenceTarget(): Target {
  return parseTarget(JSON.parse(readFileSync(TARGET_FILE, "utf8")));
}

export type Handler = (request: Request) => Promise<Response>;

/** A fresh reference app on its own store (or on `wrap` of it); returns its fetch handler and the store. */
export async function referenceApp(
  wrap: (storage: Storage) => Storage = (s) => s,
): Promise<{ fetch: Handler; storage: Storage }> {
  const inner = memoryStorage();
  const storage = wrap(inner);
  const app = await createReferenceApp({ issuer: BASE, storage, passwordIterations: 1 });
  return { fetch: app.fetch, storage: inner };
}

/** Runs the whole suite in-process against `fetch`. */
export function run(fetch: Handler, options: ConformanceOptions = {}): Promise<Report> {
  return runConformance(referenceTarget(), { fetch, timeoutMs: 10_000, ...options });
}

/** The ids of the cases that did not pass, with their messages, for assertion output. */
export function problems(report: Report): string[] {
  return report.results.filter((r) => r.verdict !== "PASS").map((r) => `${r.verdict} ${r.id}: ${r.message ?? ""}`);
}
