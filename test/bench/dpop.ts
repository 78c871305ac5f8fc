/**
 * `npm run bench:dpop`: what DPoP costs, in process, on whichever runtime runs this file (Node with tsx, Deno,
 * Bun). Four rows on one server with DPoP on and a memory store: client_credentials without and with a proof,
 * and a protected API call (`server.verifyAccessToken`) with a Bearer token and with a DPoP-bound token and its
 * proof. Each round runs every row for the same number of operations, in alternating order; the proofs are
 * signed before the round (a client's cost, not the server's), each with its own `jti`. The result is the median
 * over rounds of each round's rate and CPU time per operation, and of each round's ratios DPoP / Bearer by rate
 * and by CPU (target ≥ 0.5). Prints a table and one line of JSON.
 *
 *   tsx test/bench/dpop.ts [--ops 2000] [--rounds 8] [--inflight 16]
 *
 * @module
 */
import * as jose from "jose";
import { type AuthorizationServer, createAuthorizationServer, memoryStorage } from "../../mod.ts";
import { BACKEND_SECRET, ISSUER, registerBackend } from "./fixture.ts";
import { flags, runtime } from "./inprocess.ts";
import { counted } from "./jwt_rows.ts";

const f = flags();
/** The machine's 1-minute load (Linux), so that a reader can judge a run on a shared machine; "?" elsewhere. */
const load = async (): Promise<string> => {
  try {
    const { readFileSync } = await import("node:fs");
    return readFileSync("/proc/loadavg", "utf8").split(" ")[0]!;
  } catch {
    return "?";
  }
};
const loadBefore = await load();
const OPS = Number(f.get("ops") ?? 2000);
const ROUNDS = Number(f.get("rounds") ?? 8);
const INFLIGHT = Number(f.get("inflight") ?? 16);

const TOKEN_URL = `${ISSUER}/token`;
const API_URL = `${ISSUER}/api/reports`;
const BODY = new URLSearchParams({ grant_type: "client_credentials", client_id: "bench-backend", client_secret: BACKEND_SECRET, scope: "read" }).toString();

const ALL_ROWS = ["cc_bearer", "cc_dpop", "cc_dpop_ed25519", "api_bearer", "api_dpop", "api_dpop_ed25519"] as const;
type Row = typeof ALL_ROWS[number];
/** `--rows a,b` measures only those (for a profile); the ratios need all. */
const ROWS: readonly Row[] = f.get("rows")?.split(",").filter((r): r is Row => (ALL_ROWS as readonly string[]).includes(r)) ?? ALL_ROWS;
const TITLES: Record<Row, string> = {
  cc_bearer: "client_credentials, no proof (server.fetch)",
  cc_dpop: "client_credentials with a DPoP proof, ES256 (server.fetch)",
  cc_dpop_ed25519: "client_credentials with a DPoP proof, Ed25519 (server.fetch)",
  api_bearer: "API call, Bearer token (server.verifyAccessToken)",
  api_dpop: "API call, DPoP-bound token and proof with ath, ES256 (server.verifyAccessToken)",
  api_dpop_ed25519: "API call, DPoP-bound token and proof with ath, Ed25519 (server.verifyAccessToken)",
};

const counter = { calls: 0 };
const server: AuthorizationServer = createAuthorizationServer({
  issuer: ISSUER,
  storage: counted(memoryStorage(), counter),
  scopes: { read: "Read your reports" },
  secret: "bench-dpop-secret-0123456789abcdef-0123",
  dpop: { enabled: true },
  onError: (error) => console.error("bench server error:", error),
});
await registerBackend(server);

/** A client's key pair and a signer of its proofs. */
async function prover(alg: "ES256" | "EdDSA") {
  const { privateKey, publicKey } = await jose.generateKeyPair(alg, alg === "EdDSA" ? { crv: "Ed25519" } : {});
  const jwk = await jose.exportJWK(publicKey);
  return (htm: string, htu: string, extra: Record<string, string> = {}) =>
    new jose.SignJWT({ jti: crypto.randomUUID(), htm, htu, iat: Math.floor(Date.now() / 1000), ...extra })
      .setProtectedHeader({ alg, typ: "dpop+jwt", jwk })
      .sign(privateKey);
}
const es256 = await prover("ES256");
const ed25519 = await prover("EdDSA");

const tokenRequest = (proof?: string) =>
  new Request(TOKEN_URL, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(proof === undefined ? {} : { dpop: proof }) },
    body: BODY,
  });

async function issue(proof?: string): Promise<{ access_token: string; token_type: string }> {
  const response = await server.fetch(tokenRequest(proof));
  if (response.status !== 200) throw new Error(`token request: ${response.status} ${await response.text()}`);
  return (await response.json()) as { access_token: string; token_type: string };
}

const bearerToken = (await issue()).access_token;
const bound = await issue(await es256("POST", TOKEN_URL));
const boundEd = await issue(await ed25519("POST", TOKEN_URL));
if (bound.token_type !== "DPoP" || boundEd.token_type !== "DPoP") throw new Error("the bound token is not a DPoP token");
const athOf = async (token: string) =>
  jose.base64url.encode(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token))));
const [ath, athEd] = [await athOf(bound.access_token), await athOf(boundEd.access_token)];

const issued = async (proof: string | undefined) => {
  const response = await server.fetch(tokenRequest(proof));
  await response.text();
  return response.status === 200;
};
const called = async (authorization: string, proof: string | undefined) =>
  (await server.verifyAccessToken(new Request(API_URL, { headers: { authorization, ...(proof === undefined ? {} : { dpop: proof }) } }), "read"))
    .client_id === "bench-backend";

/** One operation of a row, given the proof signed for it (none for the Bearer rows). */
const OPERATIONS: Record<Row, (proof: string | undefined) => Promise<boolean>> = {
  cc_bearer: () => issued(undefined),
  cc_dpop: issued,
  cc_dpop_ed25519: issued,
  api_bearer: () => called(`Bearer ${bearerToken}`, undefined),
  api_dpop: (proof) => called(`DPoP ${bound.access_token}`, proof),
  api_dpop_ed25519: (proof) => called(`DPoP ${boundEd.access_token}`, proof),
};

/** Proofs for `ops` operations of `row`, signed ahead. */
const SIGNERS: Record<Row, (() => Promise<string>) | undefined> = {
  cc_bearer: undefined,
  cc_dpop: () => es256("POST", TOKEN_URL),
  cc_dpop_ed25519: () => ed25519("POST", TOKEN_URL),
  api_bearer: undefined,
  api_dpop: () => es256("GET", API_URL, { ath }),
  api_dpop_ed25519: () => ed25519("GET", API_URL, { ath: athEd }),
};
const proofsFor = (row: Row, ops: number): Promise<(string | undefined)[]> =>
  Promise.all(Array.from({ length: ops }, () => SIGNERS[row]?.()));

/** CPU time of this process in µs, every thread (WebCrypto works off the main thread); 0 where unknown. */
const cpu = (): number => {
  const usage = (globalThis as { process?: { cpuUsage?: () => { user: number; system: number } } }).process?.cpuUsage?.();
  return usage === undefined ? 0 : usage.user + usage.system;
};

/**
 * Runs `ops` operations of `row`, `INFLIGHT` at a time: operations per second, CPU µs per operation (less moved by
 * other work on a shared machine than the rate), store calls per operation.
 */
async function measure(row: Row, ops: number): Promise<{ rate: number; cpu: number; calls: number; errors: number }> {
  const proofs = await proofsFor(row, ops);
  const before = counter.calls;
  const cpuBefore = cpu();
  let next = 0;
  let errors = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: INFLIGHT }, async () => {
    while (next < ops) {
      const proof = proofs[next++];
      if (!(await OPERATIONS[row](proof).catch(() => false))) errors++;
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  return { rate: ops / seconds, cpu: (cpu() - cpuBefore) / ops, calls: (counter.calls - before) / ops, errors };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

for (const row of ROWS) await measure(row, Math.min(OPS, 500)); // warm-up
const rates = new Map<Row, number[]>(ROWS.map((row) => [row, []]));
const cpus = new Map<Row, number[]>(ROWS.map((row) => [row, []]));
const calls = new Map<Row, number>();
let errors = 0;
const ratios = { cc: [] as number[], ccEd: [] as number[], api: [] as number[], apiEd: [] as number[] };
const cpuRatios = { cc: [] as number[], ccEd: [] as number[], api: [] as number[], apiEd: [] as number[] };
for (let round = 0; round < ROUNDS; round++) {
  const rate: Partial<Record<Row, number>> = {};
  const used: Partial<Record<Row, number>> = {};
  for (const row of round % 2 === 0 ? ROWS : [...ROWS].reverse()) {
    const m = await measure(row, OPS);
    rate[row] = m.rate;
    used[row] = m.cpu;
    rates.get(row)!.push(m.rate);
    cpus.get(row)!.push(m.cpu);
    calls.set(row, m.calls);
    errors += m.errors;
  }
  if (ROWS.length < ALL_ROWS.length) continue;
  ratios.cc.push(rate.cc_dpop! / rate.cc_bearer!);
  ratios.ccEd.push(rate.cc_dpop_ed25519! / rate.cc_bearer!);
  ratios.api.push(rate.api_dpop! / rate.api_bearer!);
  ratios.apiEd.push(rate.api_dpop_ed25519! / rate.api_bearer!);
  // CPU per Bearer operation / CPU per DPoP operation: the rate ratio of a server bound by its CPU.
  cpuRatios.cc.push(used.cc_bearer! / used.cc_dpop!);
  cpuRatios.ccEd.push(used.cc_bearer! / used.cc_dpop_ed25519!);
  cpuRatios.api.push(used.api_bearer! / used.api_dpop!);
  cpuRatios.apiEd.push(used.api_bearer! / used.api_dpop_ed25519!);
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const summary = (r: number[]) => (r.length === 0 ? "-" : `${median(r).toFixed(2)} (rounds ${r.map((x) => x.toFixed(2)).join(", ")})`);
const lines = [
  `DPoP rows on ${runtime().name} ${runtime().version}, memory store, ${OPS} operations per row and round, ${ROUNDS} rounds, ${INFLIGHT} in flight`,
  "",
  "| row | ops/s (median) | CPU µs/op (median) | store calls/op |",
  "|---|---:|---:|---:|",
  ...ROWS.map((row) => `| ${TITLES[row]} | ${fmt(median(rates.get(row)!))} | ${fmt(median(cpus.get(row)!))} | ${calls.get(row)!.toFixed(2)} |`),
  "",
  "Ratios, DPoP / without (target ≥ 0.5), the median over rounds of each round's ratio:",
  `client_credentials, by rate: ES256 ${summary(ratios.cc)}; Ed25519 ${summary(ratios.ccEd)}`,
  `client_credentials, by CPU per operation: ES256 ${summary(cpuRatios.cc)}; Ed25519 ${summary(cpuRatios.ccEd)}`,
  `API call, by rate: ES256 ${summary(ratios.api)}; Ed25519 ${summary(ratios.apiEd)}`,
  `API call, by CPU per operation: ES256 ${summary(cpuRatios.api)}; Ed25519 ${summary(cpuRatios.apiEd)}`,
  `1-minute load before ${loadBefore}, after ${await load()}.`,
];
if (errors > 0) lines.push(`${errors} operations failed: the figures are not valid`);
console.log(lines.join("\n"));
console.log(JSON.stringify({
  runtime: runtime(),
  ops: OPS,
  rounds: ROUNDS,
  inflight: INFLIGHT,
  rates: Object.fromEntries([...rates].map(([row, r]) => [row, Math.round(median(r))])),
  cpu_us: Object.fromEntries([...cpus].map(([row, r]) => [row, Math.round(median(r))])),
  cpu_us_by_round: Object.fromEntries([...cpus].map(([row, r]) => [row, r.map(Math.round)])),
  ratios: Object.fromEntries(Object.entries(ratios).map(([name, r]) => [name, Math.round(median(r) * 1000) / 1000])),
  cpu_ratios: Object.fromEntries(Object.entries(cpuRatios).map(([name, r]) => [name, Math.round(median(r) * 1000) / 1000])),
  errors,
}));
if (errors > 0) throw new Error("operations failed");
