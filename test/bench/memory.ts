/**
 * Memory of the in-memory store, with the heap measured after full garbage collections:
 *
 *   node --expose-gc --import tsx test/bench/memory.ts [--tokens 1000000] [--cycles 3] [--out DIR]
 *
 * 1. Live: issues `--tokens` client_credentials access tokens through the token endpoint (`server.fetch`, so
 *    the records are exactly what the server stores) and reports the heap they hold, in total and per token.
 * 2. Churn: tokens of 60 s; the injected clock then moves past their expiry, the next batch is issued, and so
 *    on for `--cycles` batches. The heap after each batch must stay flat, not grow with the tokens ever issued.
 *
 * Prints a summary, writes JSON to `.artifacts/bench/memory-*.json`, and exits non-zero if the live heap is
 * over 400 MB or the churned heap grows by more than 25 % between the first and the last batch.
 *
 * @module
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import process from "node:process";
import { createAuthorizationServer, memoryStorage } from "../../mod.ts";
import { CLIENT_CREDENTIALS_BODY, FORM_HEADERS, registerBackend, TOKEN_PATH } from "./fixture.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("Run with node --expose-gc: the heap is measured after full collections");

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const TOKENS = arg("tokens", 1_000_000);
const CYCLES = arg("cycles", 3);
const TTL = 60;

/** A token request; built per call and garbage after it, so the heap after a collection holds the store. */
const tokenRequest = (): Request =>
  new Request("http://127.0.0.1" + TOKEN_PATH, { method: "POST", headers: FORM_HEADERS, body: CLIENT_CREDENTIALS_BODY });

function heapMB(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

async function setup(ttl: number) {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const storage = memoryStorage({ clock });
  const server = createAuthorizationServer({
    issuer: "http://127.0.0.1",
    scopes: { read: "Read" },
    storage,
    clock,
    lifetimes: { accessToken: ttl },
  });
  await registerBackend(server);
  const issue = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const response = await server.fetch(tokenRequest());
      if (response.status !== 200) throw new Error(`token request failed: ${response.status} ${await response.text()}`);
    }
  };
  return { storage, issue, advance: (seconds: number) => (now += seconds * 1000) };
}

const started = Date.now();

// 1. Live tokens, in a function of its own so that all of it is garbage afterwards.
async function liveTokens(): Promise<{ tokens: number; heap_mb: number; bytes_per_token: number }> {
  const live = await setup(3600);
  const empty = heapMB();
  await live.issue(TOKENS);
  const full = heapMB();
  const tokens = live.storage.size().access;
  return { tokens, heap_mb: Math.round(full - empty), bytes_per_token: Math.round(((full - empty) * 2 ** 20) / tokens) };
}
const liveResult = await liveTokens();
console.log(`live: ${liveResult.tokens.toLocaleString("en-US")} access tokens hold ${liveResult.heap_mb} MB of heap ` +
  `(${liveResult.bytes_per_token} bytes each)`);

// 2. Churn: batches of short-lived tokens, each batch issued after the previous one expired.
const churn = await setup(TTL);
const base = heapMB();
const batches: { issued_total: number; live: number; heap_mb: number }[] = [];
for (let cycle = 1; cycle <= CYCLES; cycle++) {
  await churn.issue(TOKENS);
  batches.push({ issued_total: cycle * TOKENS, live: churn.storage.size().access, heap_mb: Math.round(heapMB() - base) });
  const last = batches.at(-1)!;
  console.log(`churn: ${last.issued_total.toLocaleString("en-US")} issued in all, ${last.live.toLocaleString("en-US")} live, ` +
    `${last.heap_mb} MB of heap`);
  // Past the expiry of every token of this batch, and past the next sweep (30 s slots).
  churn.advance(TTL + 61);
}
const growth = batches.at(-1)!.heap_mb / batches[0]!.heap_mb;
console.log(`churn: the heap after batch ${CYCLES} is ${growth.toFixed(2)} × the heap after batch 1 ` +
  `(${(Date.now() - started) / 1000} s in all)`);

const dir = resolve(process.argv.includes("--out") ? process.argv[process.argv.indexOf("--out") + 1]! : ".artifacts/bench");
mkdirSync(dir, { recursive: true });
const file = resolve(dir, `memory-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(file, JSON.stringify({ node: process.version, date: new Date().toISOString(), live: liveResult, churn: { ttl_seconds: TTL, batches, growth } }, null, 2));
console.log(`results: ${file}`);

const ok = (TOKENS < 1_000_000 || liveResult.heap_mb < 400) && growth <= 1.25;
if (!ok) console.error("memory check FAILED: live heap over 400 MB, or the churned heap grew by more than 25 %");
process.exit(ok ? 0 : 1);
