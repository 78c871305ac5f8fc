/**
 * The in-process token scenarios with many calls in flight, as a server under load has them: `inflight`
 * workers call `server.fetch` (or `verifyAccessToken`) back to back, and the rate is completed calls per
 * second of wall time. With one call in flight a database row measures one round trip (latency); here the
 * round trips overlap over the pool's connections, so the row measures throughput. Used by `storage.ts`.
 *
 * Untimed, between timed stretches: issuing codes for the code exchange (a batch of 8 per worker, then the
 * workers drain it). Each refresh worker rotates its own grant; reading the next token out of an answer is timed.
 *
 * @module
 */
import type { AuthorizationServer } from "../../mod.ts";
import { CLIENT_CREDENTIALS_BODY, codeExchangeBody, FORM_HEADERS, ISSUER, issueCodes, refreshBody, TOKEN_PATH } from "./fixture.ts";
import { type Measurement, round, Samples } from "./stats.ts";

/** The scenarios this file runs. */
export type InflightScenario = "client_credentials" | "authorization_code" | "refresh_token" | "bearer";

const post = (body: string): Request =>
  new Request(ISSUER + TOKEN_PATH, {
    method: "POST",
    headers: { "content-type": FORM_HEADERS["content-type"]!, "content-length": String(body.length) },
    body,
  });

/** A load: an untimed refill, and the next call of a worker (undefined once the batch is drained). */
interface Load {
  refill?(): Promise<void>;
  call(worker: number): (() => Promise<boolean>) | undefined;
}

async function loads(server: AuthorizationServer, inflight: number): Promise<Record<InflightScenario, Load>> {
  let codes: string[] = [];
  // One grant per refresh worker, each rotated again and again.
  const refreshTokens: string[] = [];
  for (const code of await issueCodes(server, inflight)) {
    const response = await server.fetch(post(codeExchangeBody(code)));
    refreshTokens.push(((await response.json()) as { refresh_token: string }).refresh_token);
  }
  const issued = await server.fetch(post(CLIENT_CREDENTIALS_BODY));
  const accessToken = ((await issued.json()) as { access_token: string }).access_token;
  const bearerRequest = new Request(`${ISSUER}/api/reports`, { headers: { authorization: `Bearer ${accessToken}` } });
  const ok = async (response: Response): Promise<boolean> => (await response.text(), response.status === 200);
  return {
    client_credentials: { call: () => async () => ok(await server.fetch(post(CLIENT_CREDENTIALS_BODY))) },
    authorization_code: {
      async refill() {
        codes = await issueCodes(server, 8 * inflight);
      },
      call() {
        const code = codes.pop();
        return code === undefined ? undefined : async () => ok(await server.fetch(post(codeExchangeBody(code))));
      },
    },
    refresh_token: {
      call: (worker) => async () => {
        const response = await server.fetch(post(refreshBody(refreshTokens[worker]!)));
        if (response.status !== 200) return (await response.text(), false);
        refreshTokens[worker] = ((await response.json()) as { refresh_token: string }).refresh_token;
        return true;
      },
    },
    bearer: {
      call: () => async () => (await server.verifyAccessToken(bearerRequest, "read")).client_id === "bench-backend",
    },
  };
}

/** Runs `load` with `inflight` workers for `seconds` of wall time; timed wall time excludes refills. */
async function drive(load: Load, inflight: number, seconds: number, samples: Samples): Promise<{ timed: number; errors: number }> {
  let timed = 0;
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    if (load.refill) await load.refill();
    const start = performance.now();
    let stop = false;
    const worker = async (w: number): Promise<void> => {
      while (!stop) {
        const call = load.call(w);
        if (call === undefined) return;
        const t = performance.now();
        let ok: boolean;
        try {
          ok = await call();
        } catch {
          ok = false;
        }
        const done = performance.now();
        samples.add(done - t);
        if (!ok) errors++;
        if (done >= end) stop = true;
      }
    };
    await Promise.all(Array.from({ length: inflight }, (_, w) => worker(w)));
    timed += performance.now() - start;
  }
  return { timed, errors };
}

/** Runs the chosen scenarios in turn, each with `inflight` calls in flight; rates are calls per timed second. */
export async function runInflight(options: {
  server: AuthorizationServer;
  inflight: number;
  seconds: number;
  warmup: number;
  only: readonly InflightScenario[];
}): Promise<Record<string, Measurement>> {
  const all = await loads(options.server, options.inflight);
  const results: Record<string, Measurement> = {};
  for (const name of options.only) {
    if (options.warmup > 0) await drive(all[name], options.inflight, options.warmup, new Samples());
    const samples = new Samples();
    const { timed, errors } = await drive(all[name], options.inflight, options.seconds, samples);
    results[name] = {
      rate: Math.round(samples.length / (timed / 1000)),
      // Latency of one call, queueing behind the others included.
      p50: round(samples.percentile(50)),
      p99: round(samples.percentile(99)),
      count: samples.length,
      errors,
      seconds: round(timed / 1000, 2),
    };
  }
  return results;
}
