/**
 * The one list of where a test does not run. Every test file runs under vitest on Node 22, Node 26, `bun test`
 * and `deno test`, except those named here, each with the runtimes it skips and why. `npm run test:node26`,
 * `test:bun` and `test:deno` all run `test/run.ts`, which reads this list; there is no other.
 */
export type Runtime = "node22" | "node26" | "bun" | "deno";

/** A file or folder (ending in "/") under test/, the runtimes that skip it, and the reason. */
export interface Exception {
  readonly path: string;
  readonly skip: readonly Runtime[];
  readonly why: string;
}

const NOT_NODE22 = ["node26", "bun", "deno"] as const;
const NODE_ONLY = ["bun", "deno"] as const;

/** Where tests do not run. */
export const EXCEPTIONS: readonly Exception[] = [
  { path: "adapters/", skip: NODE_ONLY, why: "the Node adapter, on node:http" },
  { path: "cli/", skip: NODE_ONLY, why: "spawns `node --import tsx`" },
  { path: "browser/", skip: NOT_NODE22, why: "drives Chromium (one run is enough)" },
  { path: "mcp/mcp_reference_server.test.ts", skip: NOT_NODE22, why: "spawns `node --import tsx` and openssl" },
  { path: "mcp/spa_openid_client.test.ts", skip: NOT_NODE22, why: "drives Chromium (one run is enough)" },
  { path: "mcp/mcp_sdk_client.test.ts", skip: ["deno"], why: "the MCP SDK's exports map gives Deno's type checker no types" },
  { path: "mcp/mcp_sdk_sessions.test.ts", skip: ["deno"], why: "the MCP SDK's exports map gives Deno's type checker no types" },
  { path: "mcp/machine_clients.test.ts", skip: ["deno"], why: "the MCP SDK's exports map gives Deno's type checker no types" },
  { path: "mcp/mcp_dpop.test.ts", skip: ["deno"], why: "the MCP SDK's exports map gives Deno's type checker no types" },
  { path: "mcp/mcp_jwt.test.ts", skip: ["deno"], why: "the MCP SDK's exports map gives Deno's type checker no types" },
  { path: "bench/", skip: NOT_NODE22, why: "load tests, not unit tests" },
  { path: "conformance/", skip: NOT_NODE22, why: "the suite's own tests; CI runs the suite on every runtime itself" },
  { path: "adversarial/", skip: NOT_NODE22, why: "fuzzing and races, long; run on Node 22" },
  { path: "package/", skip: NOT_NODE22, why: "npm pack and install in plain Node" },
  { path: "instances/", skip: NOT_NODE22, why: "spawns reference-server processes on shared databases" },
  { path: "support/", skip: ["node22", "node26", "bun", "deno"], why: "helpers, not tests" },
  { path: "shims/", skip: ["node22", "node26", "bun"], why: "the Deno glue for vitest and its self-test" },
  { path: "readme.test.ts", skip: NOT_NODE22, why: "runs tsc, deno check and bash over the README's blocks" },
  { path: "runtimes/serve.test.ts", skip: NOT_NODE22, why: "starts the reference server on all three runtimes itself" },
  { path: "runtimes/attacks.test.ts", skip: NOT_NODE22, why: "starts the reference server on all three runtimes itself" },
  { path: "runtimes/host.test.ts", skip: NODE_ONLY, why: "starts the reference server on all three runtimes itself" },
  { path: "runtimes/slowloris.test.ts", skip: NODE_ONLY, why: "starts the reference server on all three runtimes itself" },
  { path: "storage/postgres.test.ts", skip: NOT_NODE22, why: "starts a real PostgreSQL server" },
  { path: "storage/redis.test.ts", skip: NOT_NODE22, why: "starts a real Redis server" },
  { path: "storage/identity_databases.test.ts", skip: NOT_NODE22, why: "starts real PostgreSQL and Redis servers" },
  { path: "storage/races.test.ts", skip: NOT_NODE22, why: "races racer processes on real databases" },
  { path: "storage/dpop.test.ts", skip: NOT_NODE22, why: "starts PostgreSQL and Redis, races server instances in racer processes" },
  { path: "storage/device_races.test.ts", skip: NOT_NODE22, why: "races racer processes on real databases" },
  { path: "storage/outage.test.ts", skip: NOT_NODE22, why: "stops and restarts real database servers" },
  { path: "storage/redis_resend.test.ts", skip: NOT_NODE22, why: "pauses a real Redis server and kills its connections" },
  { path: "storage/model.test.ts", skip: NODE_ONLY, why: "random verb sequences with fast-check, like the adversarial suite" },
  { path: "storage/bun_drivers.test.ts", skip: ["deno"], why: "Bun's own SQL and Redis clients (it skips itself elsewhere)" },
];

/** Whether a path under test/ runs on a runtime. */
export function runsOn(path: string, runtime: Runtime): boolean {
  return !EXCEPTIONS.some((e) => e.skip.includes(runtime) && (e.path.endsWith("/") ? path.startsWith(e.path) : path === e.path));
}
