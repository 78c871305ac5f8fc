/**
 * The JWT access-token rows, in process, on whichever runtime runs this file (Node with tsx, Deno, Bun): issuing
 * JWTs against issuing opaque tokens (client_credentials), and verifying a JWT locally against today's Bearer
 * check of an opaque token in the store. Each row with one call in flight and with `--inflight N`; rounds
 * alternate the order of the rows. Every row counts the store calls it makes. Prints one line of JSON; `jwt.ts`
 * runs it on each runtime and on PostgreSQL.
 *
 *   tsx test/bench/jwt_rows.ts [--seconds 2] [--rounds 2] [--warmup 1] [--inflight 32]
 *
 * @module
 */
import {
  type AuthorizationServer,
  createAuthorizationServer,
  jwtTokenVerifier,
  memoryStorage,
  protectedResource,
  type Storage,
  STORAGE_METHODS,
} from "../../mod.ts";
import { CLIENT_CREDENTIALS_BODY, FORM_HEADERS, ISSUER, registerBackend, TOKEN_PATH } from "./fixture.ts";
import { flags, runtime } from "./inprocess.ts";
import { round, Samples } from "./stats.ts";

/** The rows, in the order they run. */
export const JWT_ROWS = [
  "cc_opaque",
  "cc_jwt",
  "cc_jwt_eddsa",
  "bearer_opaque",
  "bearer_jwt",
  "local_jwt",
  "local_jwt_uncached",
] as const;
export type JwtRow = typeof JWT_ROWS[number];

/** What each row does, for the table. */
export const ROW_TITLES: Record<JwtRow, string> = {
  cc_opaque: "client_credentials, opaque token (server.fetch)",
  cc_jwt: "client_credentials, JWT access token, ES256 (server.fetch)",
  cc_jwt_eddsa: "client_credentials, JWT access token, EdDSA (server.fetch)",
  bearer_opaque: "Bearer check of an opaque token in the store (server.verifyAccessToken)",
  bearer_jwt: "Bearer check of a JWT by its stored record (server.verifyAccessToken)",
  local_jwt: "local JWT verification, keys in memory (protectedResource + jwtTokenVerifier({ server }))",
  local_jwt_uncached: "the same, every token's signature checked (cacheSize: 0)",
};

/** One row's figures. */
export interface RowResult {
  rate: number;
  p50?: number;
  p99?: number;
  count: number;
  errors: number;
  /** Store calls per operation, over the measured operations. */
  store_calls: number;
}

const SECRET = "bench-jwt-secret-0123456789abcdef-0123";
const AUDIENCE = `${ISSUER}/api`;

const post = (body: string): Request =>
  new Request(ISSUER + TOKEN_PATH, {
    method: "POST",
    headers: { "content-type": FORM_HEADERS["content-type"]!, "content-length": String(body.length) },
    body,
  });

/** A store that adds each call made to it to `counter`. */
export function counted(inner: Storage, counter: { calls: number }): Storage {
  const storage = Object.create(inner) as Storage;
  for (const name of STORAGE_METHODS) {
    const method = (inner[name] as (...args: unknown[]) => unknown).bind(inner);
    (storage as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => (counter.calls++, method(...args));
  }
  return storage;
}

async function server(storage: Storage, format: "opaque" | "ES256" | "EdDSA"): Promise<AuthorizationServer> {
  const s = createAuthorizationServer({
    issuer: ISSUER,
    storage,
    scopes: { read: "Read your reports" },
    secret: SECRET,
    ...(format === "opaque" ? {} : { accessTokenFormat: "jwt" as const, accessTokenAudience: AUDIENCE, signingKeys: { algorithm: format } }),
    onError: (error) => console.error("bench server error:", error),
  });
  await s.keys.ready();
  await registerBackend(s);
  return s;
}

async function issue(s: AuthorizationServer): Promise<string> {
  const response = await s.fetch(post(CLIENT_CREDENTIALS_BODY));
  return ((await response.json()) as { access_token: string }).access_token;
}

/** The rows over two servers on `storage` (one opaque, one JWT), each a call that says whether it succeeded. */
async function rows(storage: Storage, counter: { calls: number }, memory: boolean): Promise<Partial<Record<JwtRow, () => Promise<boolean>>>> {
  const opaque = await server(storage, "opaque");
  const jwt = await server(storage, "ES256");
  // Its own memory store: one store holds one key set (the servers above share theirs). So on memory only.
  const eddsa = memory ? await server(counted(memoryStorage(), counter), "EdDSA") : undefined;
  const bearer = (s: AuthorizationServer, token: string) => {
    const request = new Request(`${ISSUER}/api/reports`, { headers: { authorization: `Bearer ${token}` } });
    return async () => (await s.verifyAccessToken(request, "read")).client_id === "bench-backend";
  };
  const local = (cacheSize: number, token: string) => {
    const resource = protectedResource({
      resource: AUDIENCE,
      authorizationServers: [ISSUER],
      verify: jwtTokenVerifier({ server: jwt, audience: AUDIENCE, cacheSize }),
    });
    const request = new Request(AUDIENCE, { headers: { authorization: `Bearer ${token}` } });
    return async () => (await resource.verify(request, ["read"])).client_id === "bench-backend";
  };
  const issued = async (s: AuthorizationServer) => {
    const response = await s.fetch(post(CLIENT_CREDENTIALS_BODY));
    await response.text();
    return response.status === 200;
  };
  const opaqueToken = await issue(opaque);
  const jwtToken = await issue(jwt);
  return {
    cc_opaque: () => issued(opaque),
    cc_jwt: () => issued(jwt),
    ...(eddsa === undefined ? {} : { cc_jwt_eddsa: () => issued(eddsa) }),
    bearer_opaque: bearer(opaque, opaqueToken),
    bearer_jwt: bearer(jwt, jwtToken),
    local_jwt: local(1000, jwtToken),
    local_jwt_uncached: local(0, jwtToken),
  };
}

/** Runs `call` for `seconds` with `inflight` calls in flight; latency samples with one in flight. */
async function measure(call: () => Promise<boolean>, seconds: number, inflight: number) {
  const samples = new Samples();
  let count = 0;
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const begin = performance.now();
  await Promise.all(Array.from({ length: inflight }, async () => {
    while (performance.now() < end) {
      const start = performance.now();
      const ok = await call().catch(() => false);
      if (inflight === 1) samples.add(performance.now() - start);
      count++;
      if (!ok) errors++;
    }
  }));
  return { count, errors, wall: (performance.now() - begin) / 1000, samples };
}

/** Measures every row on `storage` (default a memory store), alternating the order between rounds. */
export async function runJwtRows(options: {
  seconds: number;
  rounds: number;
  warmup: number;
  inflight: number;
  storage?: Storage;
}): Promise<Record<string, Partial<Record<JwtRow, RowResult>>>> {
  const counter = { calls: 0 };
  const all = await rows(counted(options.storage ?? memoryStorage(), counter), counter, options.storage === undefined);
  const present = JWT_ROWS.filter((row) => all[row] !== undefined);
  const calls = () => counter.calls;
  const modes = options.inflight > 1 ? [1, options.inflight] : [1];
  const out: Record<string, Partial<Record<JwtRow, RowResult>>> = {};
  for (const inflight of modes) {
    const totals = new Map<JwtRow, { count: number; errors: number; wall: number; calls: number; samples: Samples }>();
    for (const row of present) await measure(all[row]!, options.warmup, inflight);
    for (let r = 0; r < options.rounds; r++) {
      for (const row of r % 2 === 0 ? present : [...present].reverse()) {
        const before = calls();
        const m = await measure(all[row]!, options.seconds, inflight);
        const t = totals.get(row) ?? { count: 0, errors: 0, wall: 0, calls: 0, samples: m.samples };
        if (t.samples !== m.samples) m.samples.forEach((ms) => t.samples.add(ms));
        totals.set(row, { ...t, count: t.count + m.count, errors: t.errors + m.errors, wall: t.wall + m.wall, calls: t.calls + calls() - before });
      }
    }
    const results: Partial<Record<JwtRow, RowResult>> = {};
    for (const [row, t] of totals) {
      results[row] = {
        rate: Math.round(t.count / t.wall),
        ...(inflight === 1 ? { p50: round(t.samples.percentile(50)), p99: round(t.samples.percentile(99)) } : {}),
        count: t.count,
        errors: t.errors,
        store_calls: round(t.calls / t.count, 3),
      };
    }
    out[String(inflight)] = results;
  }
  return out;
}

const isMain = (import.meta as { main?: boolean }).main ??
  (globalThis as unknown as { process: { argv: string[] } }).process.argv[1]?.match(/jwt_rows\.[jt]s$/) !== null;

if (isMain) {
  const f = flags();
  const results = await runJwtRows({
    seconds: Number(f.get("seconds") ?? 2),
    rounds: Number(f.get("rounds") ?? 2),
    warmup: Number(f.get("warmup") ?? 1),
    inflight: Number(f.get("inflight") ?? 32),
  });
  console.log(JSON.stringify({ runtime: runtime(), results }));
}
