/**
 * Why a Bearer-protected API call on Node costs more than it did in round 2: the same resource server in
 * several shapes, each in its own process, loaded in alternating rounds (autocannon, 32 connections, a random
 * one of 64 valid client_credentials tokens per request), with the server's CPU time per request.
 *
 *   tsx test/bench/bearer_paths.ts [--rounds 6] [--seconds 3] ROOT#MODE ...
 *
 * ROOT is a checkout (`.` for this one; `git archive REV | tar -x -C DIR` for another, with node_modules linked);
 * MODE is one of:
 * - `response`: `verifyAccessToken`, answered with `new Response(...)` (what the README shows, and round 3's
 *   only way on Node);
 * - `lazy`: `verifyAccessToken`, answered with the core's lazy response (`respond(request, jsonResponse(...))`,
 *   as the reference server's sample API answers), which the Node adapter writes without a WHATWG `Response`;
 * - `handle`: round 2's `serveNode({ handle: server.protectHandle(...) })` (checkouts before 0537938 only);
 * - `bare`: a constant `new Response(...)`, no token check.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import process from "node:process";
import { cpuSeconds, firstLine, loadRequests, stop } from "./load.ts";
import { median } from "./durable.ts";

const SERVER = `
const root = process.env.ROOT, mode = process.env.MODE;
const { createAuthorizationServer } = await import(root + "/mod.ts");
const { serveNode } = await import(root + "/lib/adapters/node.ts");
const server = createAuthorizationServer({ issuer: "http://127.0.0.1", scopes: { read: "Read" } });
const secret = "backend-secret-0123456789abcdef";
await server.clients.register({ client_id: "backend", client_secret: secret, name: "B", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] });
const tokens = [];
for (let i = 0; i < 64; i++) {
  const body = "grant_type=client_credentials&client_id=backend&client_secret=" + secret + "&scope=read";
  const r = await server.fetch(new Request("http://127.0.0.1/token", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body }));
  tokens.push((await r.json()).access_token);
}
const answer = (info) => JSON.stringify({ client_id: info.client_id });
let app;
if (mode === "handle") {
  app = { handle: server.protectHandle("read", (_r, info) => ({ status: 200, headers: [["content-type", "application/json"]], body: answer(info) })) };
} else if (mode === "bare") {
  app = { fetch: async () => new Response('{"client_id":"backend"}', { headers: { "content-type": "application/json" } }) };
} else if (mode === "lazy") {
  const { respond, jsonResponse } = await import(root + "/lib/http.ts");
  app = { fetch: async (request) => server.verifyAccessToken(request, "read").then(
    (info) => respond(request, jsonResponse(200, { client_id: info.client_id })),
    () => respond(request, { status: 401, headers: [], body: null })) };
} else {
  app = { fetch: async (request) => server.verifyAccessToken(request, "read").then(
    (info) => new Response(answer(info), { headers: { "content-type": "application/json" } }),
    () => new Response(null, { status: 401 })) };
}
const { port } = await serveNode(app, { port: 0 });
console.log(JSON.stringify({ port, tokens }));
`;

const argv = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const i = argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(argv.splice(i, 2)[1]);
};
const rounds = option("rounds", 6);
const seconds = option("seconds", 3);
interface Server {
  spec: string;
  child: ReturnType<typeof spawn>;
  ready: { port: number; tokens: string[] };
  rates: number[];
  cpu: number[];
}
const servers: Server[] = [];
for (const spec of argv) {
  const [root, mode = "response"] = spec.split("#") as [string, string?];
  const dir = resolve(root);
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "--eval", SERVER], {
    cwd: dir,
    env: { ...process.env, ROOT: dir, MODE: mode },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const ready = await firstLine<{ port: number; tokens: string[] }>(child, 60_000);
  servers.push({ spec, child, ready, rates: [], cpu: [] });
}
try {
  const request = (s: Server) => () => ({
    method: "GET",
    path: "/",
    headers: { authorization: `Bearer ${s.ready.tokens[Math.floor(Math.random() * s.ready.tokens.length)]}` },
  });
  for (const s of servers) await loadRequests(s.ready.port, { seconds: 2 }, request(s));
  for (let r = 0; r < rounds; r++) {
    for (const s of r % 2 === 0 ? servers : [...servers].reverse()) {
      const before = cpuSeconds(s.child.pid) ?? 0;
      const result = await loadRequests(s.ready.port, { seconds }, request(s));
      const after = cpuSeconds(s.child.pid) ?? 0;
      if (result.errors > 0) throw new Error(`${s.spec}: failed requests ${JSON.stringify(result.statuses)}`);
      s.rates.push(result.count / result.seconds);
      s.cpu.push(((after - before) * 1e6) / result.count);
    }
  }
  const first = servers[0]!;
  for (const s of servers) {
    console.log(`${s.spec.padEnd(24)} ${Math.round(median(s.rates)).toLocaleString("en-US").padStart(7)}/s  ` +
      `${median(s.cpu).toFixed(1).padStart(6)} µs CPU/request  ` +
      `× first: rate ${median(s.rates.map((v, i) => v / first.rates[i]!)).toFixed(2)}, CPU ${median(s.cpu.map((v, i) => v / first.cpu[i]!)).toFixed(2)}`);
  }
} finally {
  for (const s of servers) await stop(s.child);
}
