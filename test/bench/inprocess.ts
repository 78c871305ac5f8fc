/**
 * In-process benchmarks: `server.fetch` with no socket, one call in flight. The same file runs on Node (tsx),
 * Deno and Bun; it prints one line of JSON, which `run.ts` collects.
 *
 *   tsx test/bench/inprocess.ts [--seconds 3] [--warmup 1] [--rounds 2] [--only bare,client_credentials]
 *
 * Only the call is timed: pre-issuing codes and reading the next refresh token out of a response happen
 * between timed sections. Rates are operations per second of timed work.
 *
 * @module
 */
import type { AuthorizationServer } from "../../mod.ts";
import {
  bareFetch,
  CLIENT_CREDENTIALS_BODY,
  codeExchangeBody,
  createBenchServer,
  FORM_HEADERS,
  ISSUER,
  issueCodes,
  refreshBody,
  TOKEN_PATH,
} from "./fixture.ts";
import { type Measurement, round, Samples } from "./stats.ts";

const TOKEN_URL = ISSUER + TOKEN_PATH;

/** One scenario: untimed preparation, the timed call, untimed follow-up. */
interface Scenario {
  /** Before each timed call, e.g. refill the pool of codes. */
  before?(): Promise<void> | void;
  /** The timed call; returns whether it succeeded. */
  timed(): Promise<boolean>;
}

/**
 * A token request as a server hands it over: a Request parsed from the wire always declares its body's
 * length (or is chunked), so this one does too. The bare handler gets the very same Request.
 */
const post = (body: string): Request =>
  new Request(TOKEN_URL, {
    method: "POST",
    headers: { "content-type": FORM_HEADERS["content-type"]!, "content-length": String(body.length) },
    body,
  });

/** The names of the scenarios, in the order they run. */
export const SCENARIOS = [
  "bare",
  "client_credentials",
  "authorization_code",
  "refresh_token",
  "bearer",
] as const;
export type ScenarioName = typeof SCENARIOS[number];

async function scenarios(server: AuthorizationServer): Promise<Record<ScenarioName, Scenario>> {
  // authorization_code: a pool of codes issued between timed calls.
  let codes: string[] = [];
  let nextBody = "";
  // refresh_token: one grant, rotated again and again; each answer carries the next token.
  let refreshToken = "";
  let lastBody: string | undefined;
  const first = await server.fetch(post(codeExchangeBody((await issueCodes(server, 1))[0]!)));
  refreshToken = ((await first.json()) as { refresh_token: string }).refresh_token;
  // bearer: a valid token in a Request built once.
  const issued = await server.fetch(post(CLIENT_CREDENTIALS_BODY));
  const accessToken = ((await issued.json()) as { access_token: string }).access_token;
  const bearerRequest = new Request(`${ISSUER}/api/reports`, { headers: { authorization: `Bearer ${accessToken}` } });

  return {
    bare: {
      async timed() {
        const response = await bareFetch(post(CLIENT_CREDENTIALS_BODY));
        await response.text();
        return response.status === 200;
      },
    },
    client_credentials: {
      async timed() {
        const response = await server.fetch(post(CLIENT_CREDENTIALS_BODY));
        await response.text();
        return response.status === 200;
      },
    },
    authorization_code: {
      async before() {
        if (codes.length === 0) codes = await issueCodes(server, 1000);
        nextBody = codeExchangeBody(codes.pop()!);
      },
      async timed() {
        const response = await server.fetch(post(nextBody));
        await response.text();
        return response.status === 200;
      },
    },
    refresh_token: {
      async before() {
        if (lastBody !== undefined) {
          refreshToken = (JSON.parse(lastBody) as { refresh_token: string }).refresh_token;
          lastBody = undefined;
        }
      },
      async timed() {
        const response = await server.fetch(post(refreshBody(refreshToken)));
        // The body is read (as every other row reads it); parsing it for the next token is left untimed.
        lastBody = await response.text();
        return response.status === 200;
      },
    },
    bearer: {
      async timed() {
        const info = await server.verifyAccessToken(bearerRequest, "read");
        return info.client_id === "bench-backend";
      },
    },
  };
}

/** Calls of one scenario in a row before the next scenario's turn (see {@link runInProcess}). */
const BATCH = 16;

/** `calls` timed calls of a scenario; returns how many failed. */
async function batch(scenario: Scenario, calls: number, samples: Samples): Promise<number> {
  let errors = 0;
  for (let i = 0; i < calls; i++) {
    if (scenario.before) await scenario.before();
    const start = performance.now();
    let ok: boolean;
    try {
      ok = await scenario.timed();
    } catch {
      ok = false;
    }
    samples.add(performance.now() - start);
    if (!ok) errors++;
  }
  return errors;
}

async function measure(scenario: Scenario, seconds: number, samples: Samples): Promise<number> {
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  // 64 calls between clock checks outside the timed sections.
  while (performance.now() < end) errors += await batch(scenario, 64, samples);
  return errors;
}

/**
 * Runs the chosen scenarios: a warm-up each, then `rounds` measured rounds in which they take turns in batches
 * of 16 calls, so that drift and other work on the machine hit all alike; each result keeps its per-round rates.
 */
export async function runInProcess(options: {
  seconds: number;
  warmup: number;
  rounds: number;
  only: readonly ScenarioName[];
  /** The server to measure (test/bench/storage.ts passes one per store); default a memory-store server. */
  server?: AuthorizationServer;
}): Promise<Record<string, Measurement>> {
  const server = options.server ?? await createBenchServer();
  const all = await scenarios(server);
  const samples = new Map<ScenarioName, Samples>();
  const errors = new Map<ScenarioName, number>();
  for (const name of options.only) {
    await measure(all[name], options.warmup, new Samples());
    samples.set(name, new Samples());
    errors.set(name, 0);
  }
  const roundRates = new Map<ScenarioName, number[]>(options.only.map((name) => [name, []]));
  for (let round = 0; round < options.rounds; round++) {
    // Within a round the scenarios take turns, 16 calls each (a few ms), for `seconds` each in all: whatever
    // else the machine does in a round slows them alike, so the ratio of their rates in one round stays put
    // (each scenario for whole seconds in turn, a busy neighbour moved one round's ratio from 0.16 to 0.74).
    // The order of the turns flips every round.
    const order = round % 2 === 0 ? options.only : [...options.only].reverse();
    const before = new Map(order.map((name) => [name, [samples.get(name)!.length, samples.get(name)!.total] as const]));
    const end = performance.now() + options.seconds * order.length * 1000;
    while (performance.now() < end) {
      for (const name of order) errors.set(name, errors.get(name)! + await batch(all[name], BATCH, samples.get(name)!));
    }
    for (const name of order) {
      const s = samples.get(name)!;
      const [count, total] = before.get(name)!;
      roundRates.get(name)!.push(Math.round((s.length - count) / ((s.total - total) / 1000)));
    }
  }
  const results: Record<string, Measurement> = {};
  for (const [name, s] of samples) {
    results[name] = {
      rate: Math.round(s.length / (s.total / 1000)),
      p50: round(s.percentile(50)),
      p99: round(s.percentile(99)),
      count: s.length,
      errors: errors.get(name)!,
      seconds: round(s.total / 1000, 2),
      round_rates: roundRates.get(name)!,
    };
  }
  return results;
}

/** The runtime this file runs on, and its version. */
export function runtime(): { name: "node" | "deno" | "bun"; version: string } {
  const g = globalThis as unknown as {
    Deno?: { version: { deno: string } };
    Bun?: { version: string };
    process?: { version: string };
  };
  if (g.Deno) return { name: "deno", version: g.Deno.version.deno };
  if (g.Bun) return { name: "bun", version: g.Bun.version };
  return { name: "node", version: g.process?.version ?? "unknown" };
}

/** `--name value` pairs from the command line (Node, Deno 2 and Bun all have `process.argv`). */
export function flags(): Map<string, string> {
  const argv = (globalThis as unknown as { process: { argv: string[] } }).process.argv.slice(2);
  const map = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.startsWith("--")) map.set(arg.slice(2), argv[i + 1] !== undefined && !argv[i + 1]!.startsWith("--") ? argv[++i]! : "true");
  }
  return map;
}

const isMain = (import.meta as { main?: boolean }).main ??
  // Node has no import.meta.main: compare the entry script.
  (globalThis as unknown as { process: { argv: string[] } }).process.argv[1]?.match(/inprocess\.[jt]s$/) !== null;

if (isMain) {
  const f = flags();
  const only = (f.get("only")?.split(",") ?? [...SCENARIOS]) as ScenarioName[];
  for (const name of only) if (!SCENARIOS.includes(name)) throw new Error(`Unknown scenario "${name}"`);
  const results = await runInProcess({
    seconds: Number(f.get("seconds") ?? 3),
    warmup: Number(f.get("warmup") ?? 1),
    rounds: Number(f.get("rounds") ?? 2),
    only,
  });
  console.log(JSON.stringify({ runtime: runtime(), results }));
}
