// Races (issue "Adversarial testing", part 2), against every store there is: the in-memory store as the server
// makes it by default, the same store passed as `storage` (so behind the storageTimeout wrapper), and that store
// behind a jittery asynchronous layer that makes every call yield a random number of times before and after its
// work, as a networked store would, so the server's multi-step grant logic interleaves in many orders.
//
// N concurrent redemptions of one code give exactly one token response; N concurrent refreshes of one refresh
// token give exactly one success; the losers' reuse then revokes the grant. Concurrent registration, pausing
// and resuming of a client leave a record that some sequential order of those calls would have produced.
import fc from "fast-check";
import { afterAll, describe, expect, test } from "vitest";
import {
  type AuthorizationServer, type AuthorizationServerOptions, type ClientRecord, memoryStorage, type Storage,
} from "../../mod.ts";
import { codeRequest, consent, fixture, ISSUER, pkce, postToken, REDIRECT, SECRETS } from "../helpers.ts";
import { envInt, figures, oauthErrorProblems, see, sha256 } from "./support.ts";

/** Concurrent requests per race, and rounds of each race per store. */
const N = envInt("RACE_CONCURRENCY", 32);
const ROUNDS = envInt("RACE_ROUNDS", 8);

const tally = { races: 0, requests: 0, doubleSpends: 0, survivors: 0, schedules: 0 };
afterAll(() => {
  figures(
    `races: ${tally.races} races (${tally.requests} concurrent requests, ${tally.schedules} interleavings of ` +
      `registration and pausing), ${tally.doubleSpends} double spends, ${tally.survivors} tokens outliving a reuse`,
  );
});

/** Every call yields a random number of times (micro- and macrotasks) before and after the store does its work. */
function jittery(inner: Storage, seed: number): Storage {
  let state = seed >>> 0 || 1;
  const random = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  const pause = async () => {
    const turns = Math.floor(random() * 4);
    for (let i = 0; i < turns; i++) {
      if (random() < 0.5) await Promise.resolve();
      else await new Promise((resolve) => setTimeout(resolve, 0));
    }
  };
  const wrapped: Record<string, unknown> = {};
  for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(inner)) as (keyof Storage)[]) {
    const method = inner[name];
    if (typeof method !== "function" || (name as string) === "constructor") continue;
    wrapped[name] = async (...args: unknown[]) => {
      await pause();
      const result = await (method as (...a: unknown[]) => Promise<unknown>).apply(inner, args);
      await pause();
      return result;
    };
  }
  return wrapped as unknown as Storage;
}

const STORES: { name: string; options: () => Partial<AuthorizationServerOptions> }[] = [
  // No `storage`: the server makes its own memory store, with no deadline wrapper around it.
  { name: "the default memory store", options: () => ({ storage: undefined }) as unknown as Partial<AuthorizationServerOptions> },
  { name: "a memory store given as options.storage", options: () => ({}) },
  { name: "a memory store behind a jittery async layer", options: () => ({ storage: jittery(memoryStorage(), 0x9e3779b9) }) },
];

type Server = AuthorizationServer;

const exchangeFields = (code: string, verifier: string): Record<string, string> =>
  ({ grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier });

async function spaGrant(server: Server): Promise<{ access_token: string; refresh_token: string }> {
  const { verifier, challenge } = await pkce();
  const url = await consent(server, codeRequest("spa", { code_challenge: challenge, code_challenge_method: "S256" }));
  const response = await postToken(server, exchangeFields(url.searchParams.get("code")!, verifier));
  expect(response.status).toBe(200);
  return response.json();
}

/** Sends all requests at once; returns status and parsed body of each. */
async function race(requests: (() => Promise<Response>)[]): Promise<{ status: number; body: Record<string, string> }[]> {
  tally.races++;
  tally.requests += requests.length;
  const responses = await Promise.all(requests.map((send) => send()));
  return Promise.all(responses.map(async (response) => {
    const seen = await see(response);
    if (seen.status !== 200) expect(oauthErrorProblems(seen), seen.body).toEqual([]);
    return { status: seen.status, body: JSON.parse(seen.body || "{}") as Record<string, string> };
  }));
}

/** Whether the resource guard still accepts an access token. */
async function works(server: Server, accessToken: string): Promise<boolean> {
  return server.verifyAuthorization(`Bearer ${accessToken}`).then(() => true, () => false);
}

describe.each(STORES)("$name", ({ options }) => {
  test(`${N} concurrent redemptions of one code: exactly one token response, and the replays revoke it`, async () => {
    const { server } = await fixture(options());
    for (let round = 0; round < ROUNDS; round++) {
      const { verifier, challenge } = await pkce();
      const thief = await pkce();
      const url = await consent(server, codeRequest("spa", { code_challenge: challenge, code_challenge_method: "S256" }));
      const code = url.searchParams.get("code")!;
      // A quarter of the racers are an attacker with the code but not the verifier, or under another client.
      const results = await race(Array.from({ length: N }, (_, i) => () =>
        i % 4 === 1
          ? postToken(server, exchangeFields(code, thief.verifier))
          : i % 4 === 3 && round % 2 === 1
          ? postToken(server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code })
          : postToken(server, exchangeFields(code, verifier))
      ));
      const winners = results.filter((r) => r.status === 200);
      if (winners.length > 1) tally.doubleSpends += winners.length - 1;
      expect(winners.length, "token responses").toBe(1);
      const winner = results.findIndex((r) => r.status === 200);
      expect(winner % 4 === 1 || (winner % 4 === 3 && round % 2 === 1), "the winner had the verifier and the client").toBe(false);
      expect(results.filter((r) => r.status !== 200).every((r) => r.status === 400 && r.body.error === "invalid_grant")).toBe(true);
      // RFC 6749 §4.1.2: a code used more than once revokes what it issued.
      const tokens = winners[0]!.body;
      if (await works(server, tokens.access_token!)) tally.survivors++;
      expect(await works(server, tokens.access_token!), "the winner's access token after the replays").toBe(false);
      const refresh = await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: tokens.refresh_token! });
      expect((await refresh.json()).error).toBe("invalid_grant");
    }
  }, 30_000);

  test(`${N} concurrent refreshes of one refresh token: exactly one success, and the reuse revokes the grant`, async () => {
    const { server } = await fixture(options());
    for (let round = 0; round < ROUNDS; round++) {
      const first = await spaGrant(server);
      const results = await race(Array.from({ length: N }, () => () =>
        postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: first.refresh_token })
      ));
      const winners = results.filter((r) => r.status === 200);
      if (winners.length > 1) tally.doubleSpends += winners.length - 1;
      expect(winners.length, "successful refreshes").toBe(1);
      expect(results.filter((r) => r.status !== 200).every((r) => r.status === 400 && r.body.error === "invalid_grant")).toBe(true);
      // RFC 9700 §4.14.2: reuse of a rotated refresh token revokes the whole grant, the new pair included.
      const next = winners[0]!.body;
      for (const access of [first.access_token, next.access_token!]) {
        if (await works(server, access)) tally.survivors++;
        expect(await works(server, access), "an access token of the grant after the reuse").toBe(false);
      }
      const again = await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: next.refresh_token! });
      expect(await again.json()).toMatchObject({ error: "invalid_grant" });
    }
  }, 30_000);

  test("a refresh racing the revocation of its token (RFC 7009) never outlives the revocation", async () => {
    const { server } = await fixture(options());
    const revoke = (token: string) => server.fetch(new Request(`${ISSUER}/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token, client_id: "spa" }).toString(),
    }));
    for (let round = 0; round < ROUNDS * 2; round++) {
      const first = await spaGrant(server);
      const refresh = () => postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: first.refresh_token });
      // The revocation goes first, last, or in the middle of a few refreshes.
      const order = [refresh, refresh, refresh];
      order.splice(round % 4, 0, () => revoke(first.refresh_token));
      const results = await race(order);
      expect(results.filter((r) => r.status === 200).length).toBeLessThanOrEqual(2); // the revocation + at most one refresh
      for (const r of results) {
        if (r.body.access_token === undefined) continue;
        if (await works(server, r.body.access_token)) tally.survivors++;
        expect(await works(server, r.body.access_token), "a token from a refresh that raced its revocation").toBe(false);
      }
      expect(await works(server, first.access_token)).toBe(false);
    }
  }, 30_000);

  test(`${N * 2} concurrent registrations of distinct clients are all stored, each with only its own secret`, async () => {
    const { server } = await fixture(options());
    tally.races++;
    tally.requests += N * 2;
    const ids = Array.from({ length: N * 2 }, (_, i) => `bulk-${i}`);
    const registered = await Promise.all(ids.map((id, i) =>
      server.clients.register({ client_id: id, name: `Bulk ${i}`, type: "confidential", scopes: i % 2 ? ["read"] : ["export"], grant_types: ["client_credentials"] })
    ));
    const results = await Promise.all(ids.map((id, i) =>
      postToken(server, { grant_type: "client_credentials", client_id: id, client_secret: registered[i]!.client_secret!, scope: i % 2 ? "read" : "export" })
    ));
    expect(results.map((r) => r.status)).toEqual(ids.map(() => 200));
    const crossed = await postToken(server, { grant_type: "client_credentials", client_id: ids[0]!, client_secret: registered[1]!.client_secret!, scope: "export" });
    expect(crossed.status).toBe(401);
  }, 30_000);

  test("pausing a client while its token requests are in flight: nothing issued after the pause works", async () => {
    const { server } = await fixture({ ...options(), throttle: false });
    for (let round = 0; round < ROUNDS; round++) {
      const cc = () => postToken(server, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" });
      const inFlight = Array.from({ length: N }, () => cc());
      const paused = server.clients.pause("backend");
      tally.races++;
      tally.requests += N;
      const responses = await Promise.all(inFlight);
      await paused;
      for (const response of responses) {
        if (response.status !== 200) {
          expect(response.status).toBe(401);
          continue;
        }
        const { access_token } = await response.json();
        // Issued before the pause took effect, but a paused client's tokens stop working (RFC 7009 spirit).
        expect(await works(server, access_token), "a token of a paused client").toBe(false);
      }
      expect((await cc()).status, "a request after the pause").toBe(401);
      await server.clients.resume("backend");
      expect((await cc()).status, "a request after resuming").toBe(200);
    }
  }, 30_000);
});

// -------------------------------------------------------------------------------------------------------------
// Registration, pausing and resuming of one client, by several actors at once, each calling in sequence, and
// the store calls released in whatever order fast-check's scheduler picks. The outcome must be linearizable:
// some interleaving of the actors' calls, each taking effect at one instant and in each actor's own order,
// explains the stored record, what every pause and resume returned, and which token requests succeeded.

/** Three registrations of one client id: each a whole, recognisable configuration. */
const VARIANTS = [0, 1, 2].map((v) => ({
  client_id: "racer",
  client_secret: `racer-secret-${v}-0123456789abcdef`,
  name: `Racer v${v}`,
  type: "confidential" as const,
  scopes: v === 1 ? ["read"] : ["export"],
  grant_types: ["client_credentials" as const],
}));

type Op = { kind: "register"; variant: number } | { kind: "pause" } | { kind: "resume" } | { kind: "token"; variant: number };

// Weighted toward the calls that write, where the conflicts are.
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("register" as const), variant: fc.integer({ min: 0, max: 2 }) }) },
  { weight: 2, arbitrary: fc.constant<Op>({ kind: "pause" }) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: "resume" }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("token" as const), variant: fc.integer({ min: 0, max: 2 }) }) },
);

/** The client as the sequential model sees it: which registration, and whether active; null before any. */
type ModelState = { variant: number; active: boolean } | null;
/** What an operation observed: a token request's success, a pause's or resume's returned record. */
type Observed = { kind: "token"; ok: boolean } | { kind: "pause" | "resume"; record: ModelState } | { kind: "register" };

/** Applies one operation to the model; returns the new state and what a correct server would have answered. */
function step(state: ModelState, o: Op): [ModelState, Observed] {
  if (o.kind === "register") return [{ variant: o.variant, active: true }, { kind: "register" }];
  if (o.kind === "token") return [state, { kind: "token", ok: state !== null && state.active && state.variant === o.variant }];
  const next = state === null ? null : { ...state, active: o.kind === "resume" };
  return [next, { kind: o.kind, record: next }];
}

/** Whether some interleaving of the actors' sequences explains every observation and the final state. */
function linearizable(actors: Op[][], observed: Observed[][], final: ModelState): boolean {
  const same = (a: Observed, b: Observed) => JSON.stringify(a) === JSON.stringify(b);
  const search = (positions: number[], state: ModelState): boolean => {
    if (positions.every((p, a) => p === actors[a]!.length)) return JSON.stringify(state) === JSON.stringify(final);
    for (let a = 0; a < actors.length; a++) {
      const p = positions[a]!;
      if (p === actors[a]!.length) continue;
      const [next, expected] = step(state, actors[a]![p]!);
      if (!same(expected, observed[a]![p]!)) continue;
      if (search(positions.map((x, i) => (i === a ? x + 1 : x)), next)) return true;
    }
    return false;
  };
  return search(actors.map(() => 0), null);
}

test("concurrent registration, pausing and resuming are linearizable, in every interleaving", async () => {
  const runs = envInt("RACE_SCHEDULES", 1_000);
  const actors = fc.array(fc.array(op, { minLength: 1, maxLength: 3 }), { minLength: 2, maxLength: 3 });
  await fc.assert(fc.asyncProperty(fc.scheduler(), actors, async (s, plan) => {
    tally.schedules++;
    const inner = memoryStorage();
    // Once the fixture stands, each of these calls waits until the scheduler releases it, in the order it picks.
    let live = false;
    const scheduled: Record<string, unknown> = {};
    for (const name of ["getClient", "saveClient", "setClientActive", "saveTokens"] as const) {
      const call = (...args: unknown[]) => (inner[name] as (...a: unknown[]) => Promise<unknown>).apply(inner, args);
      const held = s.scheduleFunction(call);
      scheduled[name] = (...args: unknown[]) => (live ? held(...args) : call(...args));
    }
    const { server } = await fixture({ storage: Object.assign(Object.create(inner) as Storage, scheduled), throttle: false });
    const hashes = await Promise.all(VARIANTS.map((v) => sha256(v.client_secret)));
    const variantOf = (record: ClientRecord | null): ModelState => {
      if (record === null) return null;
      const v = VARIANTS.findIndex((x) => x.name === record.name);
      // Never a mix of two registrations: name, scopes and secret all come from one.
      expect(v >= 0 && record.secret_hash === hashes[v] && JSON.stringify(record.scopes) === JSON.stringify(VARIANTS[v]!.scopes), `a whole registration: ${JSON.stringify(record)}`).toBe(true);
      return { variant: v, active: record.active };
    };
    const issued: string[] = [];
    const perform = async (o: Op): Promise<Observed> => {
      if (o.kind === "register") {
        await server.clients.register(VARIANTS[o.variant]!);
        return { kind: "register" };
      }
      if (o.kind === "pause" || o.kind === "resume") {
        return { kind: o.kind, record: variantOf(await server.clients[o.kind]("racer")) };
      }
      const v = VARIANTS[o.variant]!;
      const response = await postToken(server, { grant_type: "client_credentials", client_id: "racer", client_secret: v.client_secret, scope: v.scopes[0]! });
      expect([200, 401]).toContain(response.status);
      if (response.status === 200) issued.push((await response.json()).access_token);
      return { kind: "token", ok: response.status === 200 };
    };

    live = true;
    const observed = await s.waitFor(Promise.all(plan.map(async (sequence) => {
      const seen: Observed[] = [];
      for (const o of sequence) seen.push(await perform(o));
      return seen;
    })));
    live = false;

    const final = variantOf(await inner.getClient("racer"));
    expect(linearizable(plan, observed, final), `no sequential order explains ${JSON.stringify({ plan, observed, final })}`).toBe(true);
    // A paused client's tokens stop working, whenever they were issued.
    if (final !== null && !final.active) for (const t of issued) expect(await works(server, t)).toBe(false);
    // And afterwards the record answers as it reads.
    if (final !== null) {
      const v = VARIANTS[final.variant]!;
      const plain = await postToken(server, { grant_type: "client_credentials", client_id: "racer", client_secret: v.client_secret, scope: v.scopes[0]! });
      expect(plain.status).toBe(final.active ? 200 : 401);
    }
  }), { numRuns: runs });
}, 60_000);
