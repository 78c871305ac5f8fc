/**
 * Shared set-up of the conformance tests: the reference app in-process (with a clock the suite can move), the
 * reference target, and a run.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type AdvanceClock, type ConformanceOptions, parseTarget, type Report, runConformance, type Target } from "../../conformance/mod.ts";
import { createReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, type ReferenceConfig } from "../../lib/reference/config.ts";
import type { Storage } from "../../lib/storage/types.ts";
import { memoryStorage } from "../../lib/storage/memory.ts";
import { type DocumentServer, openDocumentServer } from "../../conformance/document_server.ts";

/** The base URL of in-process runs; reference.json's base_url. */
export const BASE = "http://127.0.0.1:8080";

export const TARGET_FILE: string = fileURLToPath(new URL("../../conformance/targets/reference.json", import.meta.url));

/** A redirect URI that is not a loopback one, for the cases that loopback URIs skip (any port may match). */
export const WEB_REDIRECT = "https://client.example/callback";

/** The MCP deployment's target (reference-mcp.json), for conformance/targets/reference_mcp_app.ts. */
export const MCP_TARGET_FILE: string = fileURLToPath(new URL("../../conformance/targets/reference-mcp.json", import.meta.url));

/**
 * This test process's host for client metadata documents, on a random loopback port (the target file's fixed
 * port stays for the CLI); the MCP app under test allows its origin (`documentOrigin`).
 */
export const DOCUMENTS: DocumentServer = await openDocumentServer("http://127.0.0.1:0");

/** The reference target, as the CLI reads it; `web`: with {@link WEB_REDIRECT} for the code clients. */
export function referenceTarget(web = false, file: string = TARGET_FILE): Target {
  const json = JSON.parse(readFileSync(file, "utf8"));
  if (json.client_metadata_documents !== undefined) json.client_metadata_documents.origin = DOCUMENTS.origin;
  // The suite serves its identity keys from the same host.
  if (json.identity !== undefined) json.identity.origin = DOCUMENTS.origin;
  if (web) for (const role of ["public", "confidential"]) json.clients[role].redirect_uri = WEB_REDIRECT;
  return parseTarget(json);
}

/** The demo configuration with {@link WEB_REDIRECT} as the code clients' redirect URI. */
export function webConfig(): ReferenceConfig {
  return {
    ...DEMO_CONFIG,
    clients: DEMO_CONFIG.clients.map((c) => c.client_id === "demo-spa" || c.client_id === "demo-web" ? { ...c, redirect_uris: [WEB_REDIRECT] } : c),
  };
}

export type Handler = (request: Request) => Promise<Response>;

/** A reference app: its handler, its store, and its clock. */
export interface TestApp {
  fetch: Handler;
  storage: Storage;
  /** Moves the app's clock forward. */
  clock: AdvanceClock;
  /** Rotates its signing keys (`keys rotate`). */
  rotateKeys?: () => Promise<void>;
}

/** `config` (default the demo's) issuing JWT access tokens (RFC 9068), so the JWT cases run too. */
export function jwtConfig(config: ReferenceConfig = DEMO_CONFIG): ReferenceConfig {
  return { ...config, access_token_format: "jwt" };
}

/** A fresh reference app on its own store (or on `wrap` of it), with a clock the suite can move. */
export async function referenceApp(
  wrap: (storage: Storage) => Storage = (s) => s,
  options: { config?: ReferenceConfig } = {},
): Promise<TestApp> {
  let offset = 0;
  const now = () => Date.now() + offset;
  const inner = memoryStorage({ clock: now });
  const storage = wrap(inner);
  const app = await createReferenceApp({ issuer: BASE, storage, passwordIterations: 1, clock: now, ...(options.config ? { config: options.config } : {}) });
  return {
    fetch: app.fetch,
    storage: inner,
    clock: (ms) => Promise.resolve(void (offset += ms)),
    rotateKeys: async () => void await app.server.keys.rotate(),
  };
}

/** Runs the whole suite in-process against `fetch` (the reference target, or `target`). */
export function run(fetch: Handler, options: ConformanceOptions = {}, target: Target = referenceTarget()): Promise<Report> {
  return runConformance(target, { fetch, timeoutMs: 10_000, documents: DOCUMENTS, keys: DOCUMENTS, ...options });
}

/** The ids of the cases that did not pass, with their messages, for assertion output. */
export function problems(report: Report): string[] {
  return report.results.filter((r) => r.verdict !== "PASS").map((r) => `${r.verdict} ${r.id}: ${r.message ?? ""}`);
}
