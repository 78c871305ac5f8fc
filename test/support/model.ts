/**
 * Model-based checking of a store: random sequences of storage verbs, as the server issues them, must give the
 * same answers on the store under test as on the memory store, the model every store is measured against.
 * Where the contract checks chosen cases, this explores their combinations: redemption after revocation,
 * rotation in and out of the grace window, expiry as time moves on, the code cap, once-marks.
 *
 * @module
 */
import fc from "fast-check";
import { type IssuedTokens, memoryStorage, type Storage } from "../../mod.ts";

/** Opens the store under test on the given clock (the memory store gets the same one). */
export type OpenStore = (clock: () => number) => Storage | Promise<Storage>;

let runs = 0;

type Step =
  | { op: "saveCode"; ttl: number; limit: boolean }
  | { op: "redeem"; code: number }
  | { op: "saveTokens"; refresh: boolean; ttl: number }
  | { op: "rotate"; token: number; grace: boolean }
  | { op: "revokeGrant"; grant: number }
  | { op: "revokeAccess"; token: number }
  | { op: "find"; token: number }
  | { op: "mark"; key: number; ttl: number }
  | { op: "listGrants" }
  | { op: "tick"; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant("saveCode" as const), ttl: fc.integer({ min: 1, max: 20_000 }), limit: fc.boolean() }),
  fc.record({ op: fc.constant("redeem" as const), code: fc.nat(9) }),
  fc.record({ op: fc.constant("saveTokens" as const), refresh: fc.boolean(), ttl: fc.integer({ min: 1, max: 20_000 }) }),
  fc.record({ op: fc.constant("rotate" as const), token: fc.nat(9), grace: fc.boolean() }),
  fc.record({ op: fc.constant("revokeGrant" as const), grant: fc.nat(9) }),
  fc.record({ op: fc.constant("revokeAccess" as const), token: fc.nat(9) }),
  fc.record({ op: fc.constant("find" as const), token: fc.nat(9) }),
  fc.record({ op: fc.constant("mark" as const), key: fc.nat(2), ttl: fc.integer({ min: 1, max: 10_000 }) }),
  fc.record({ op: fc.constant("listGrants" as const) }),
  fc.record({ op: fc.constant("tick" as const), ms: fc.integer({ min: 1, max: 8_000 }) }),
);

/** JSON with object keys sorted, so that two stores' records compare by content. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([x], [y]) => x.localeCompare(y)))
      : v);

/** Runs the steps on both stores; returns the first step whose answers differ, or undefined. */
async function compare(steps: Step[], open: OpenStore): Promise<string | undefined> {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const stores: Storage[] = [memoryStorage({ clock }), await open(clock)];
  // Every id of a run is new, so that runs may share one database.
  const u = `${++runs}-${Math.random().toString(36).slice(2, 8)}-`;
  // What the server would know: each code's grant, and each issued token's grant and refresh expiry.
  // Hashes and grant ids are never reused (the server mints them at random): every code and every
  // client_credentials refresh token starts a grant of its own; later steps pick among those.
  const codes: string[] = [];
  const grants: string[] = [];
  const pickGrant = (n: number): string => grants[n % Math.max(grants.length, 1)] ?? "none";
  const codeGrant = new Map<string, string>();
  const issued: { access: string; refresh?: string; grant: string; refreshExpires: number }[] = [];
  let serial = 0;
  const mint = (grant: string | undefined, ttl: number, refresh: boolean, refreshExpires?: number): IssuedTokens => {
    const n = ++serial;
    const tokens: IssuedTokens = { access: { hash: `${u}at${n}`, client_id: "c", user_id: `${u}u`, scope: "read", expires_at: now + ttl } };
    if (grant !== undefined) tokens.access.grant_id = grant;
    const expires = refreshExpires ?? now + 2 * ttl;
    if (refresh && grant !== undefined) {
      tokens.refresh = { hash: `${u}rt${n}`, grant_id: grant, client_id: "c", user_id: `${u}u`, scope: "read", expires_at: expires };
    }
    issued.push({ access: `${u}at${n}`, ...(tokens.refresh ? { refresh: `${u}rt${n}` } : {}), grant: grant ?? "none", refreshExpires: expires });
    return tokens;
  };
  for (const [i, s] of steps.entries()) {
    let tokens: IssuedTokens | undefined;
    const run = async (store: Storage): Promise<unknown> => {
      switch (s.op) {
        case "saveCode": {
          const hash = `${u}code${codes.length}`;
          const grant = `${u}g${grants.length}`;
          codeGrant.set(hash, grant);
          await store.saveCode({ hash, grant_id: grant, client_id: "c", user_id: `${u}u`, redirect_uri: "https://a/cb", scope: "read", expires_at: now + s.ttl }, s.limit ? 2 : undefined);
          return null;
        }
        case "redeem": {
          const hash = codes[s.code % Math.max(codes.length, 1)] ?? "none";
          return await store.redeemCode(hash, tokens ??= mint(codeGrant.get(hash) ?? `${u}g0`, 10_000, true), now);
        }
        case "saveTokens":
          // client_credentials: a new grant when there is a refresh token, none otherwise.
          await store.saveTokens(tokens ??= mint(s.refresh ? `${u}g${grants.length}` : undefined, s.ttl, s.refresh), now);
          return null;
        case "rotate": {
          const target = issued[s.token];
          if (!target?.refresh) return "no token";
          // With a grace window the caller seals its successor; a retry gets the first rotation's seal back.
          tokens ??= { ...mint(target.grant, 10_000, true, target.refreshExpires), ...(s.grace ? { sealed: `${u}seal${serial}` } : {}) };
          return await store.rotateRefreshToken(target.refresh, tokens, now, s.grace ? 5_000 : 0);
        }
        case "revokeGrant":
          await store.revokeGrant(pickGrant(s.grant));
          return null;
        case "revokeAccess":
          await store.revokeAccessToken(issued[s.token]?.access ?? "none");
          return null;
        case "find": {
          const t = issued[s.token];
          return [await store.findAccessToken(t?.access ?? "none", now), await store.findRefreshToken(t?.refresh ?? "none", now),
            ...await Promise.all(codes.map((c) => store.findCode(c, now)))];
        }
        case "mark":
          return [await store.markOnce(`${u}k${s.key}`, now + s.ttl, now), await store.isMarked(`${u}k${s.key}`, now)];
        case "listGrants":
          return (await store.listGrants(`${u}u`, now)).sort((a, b) => a.grant_id.localeCompare(b.grant_id));
        case "tick":
          now += s.ms;
          return null;
      }
    };
    const memory = await run(stores[0]!);
    if (s.op === "tick") continue;
    const sql = await run(stores[1]!);
    if (s.op === "saveCode") codes.push(`${u}code${codes.length}`);
    if (s.op === "saveCode" || (s.op === "saveTokens" && s.refresh)) grants.push(`${u}g${grants.length}`);
    const [a, b] = [canonical(memory), canonical(sql)];
    if (a !== b) return `step ${i} ${JSON.stringify(s)}: memory ${a}, sql ${b}`;
  }
  return undefined;
}


/** Checks `runs` random sequences; throws fast-check's shrunk counterexample on the first difference. */
export async function checkAgainstModel(open: OpenStore, runs: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 40 }), async (steps) => {
      const difference = await compare(steps, open);
      if (difference !== undefined) throw new Error(difference);
    }),
    { numRuns: runs },
  );
}
