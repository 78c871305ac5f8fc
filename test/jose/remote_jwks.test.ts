// Remote JWK Sets against a hostile key-set server on 127.0.0.1: cached within Cache-Control bounds, one
// refetch on an unknown kid per cooldown (concurrent misses share it), the last good set kept when the
// server fails, and slow, huge, compressed, redirecting, secret-leaking and changing sets handled.
import type { Socket } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { generateSigningKey, type SigningKeyPair } from "../../lib/jose/jwk.ts";
import { signJwt, verifyJwt } from "../../lib/jose/jwt.ts";
import { remoteJwks, type RemoteJwksOptions } from "../../lib/jose/remote_jwks.ts";
import { OutboundError } from "../../lib/outbound.ts";
import { BROTLI_BOMB_256_MIB, respond, startServer, type TestServer, trickle } from "./fixtures/http_server.ts";

const A = await generateSigningKey("ES256");
const B = await generateSigningKey("ES256");
const C = await generateSigningKey("EdDSA");

/** What the key-set server does with the next request. */
type Answer = (socket: Socket) => void;
const json = (body: unknown, headers: Record<string, string> = {}): Answer => (socket) =>
  respond(socket, 200, { "content-type": "application/json", ...headers }, JSON.stringify(body));
const set = (...pairs: SigningKeyPair[]) => ({ keys: pairs.map((pair) => pair.publicJwk) });

let server: TestServer | undefined;
let answer: Answer = json(set(A));
/** Delay before answering, in ms, to let concurrent requests pile up. */
let delay = 0;
afterEach(async () => {
  await server?.close();
  server = undefined;
  answer = json(set(A));
  delay = 0;
});

/** A clock the test moves by hand, so cooldowns and lifetimes need no waiting. */
let clock = 1_000_000_000;

async function keySource(options: RemoteJwksOptions = {}) {
  server = await startServer((_request, socket) => {
    const current = answer;
    if (delay) setTimeout(() => current(socket), delay);
    else current(socket);
  });
  clock = 1_000_000_000;
  const keys = remoteJwks(`${server.origin}/jwks`, { allowOrigins: [server.origin], now: () => clock, timeout: 1000, ...options });
  return { keys, fetches: () => server!.requests.length };
}

const token = (pair: SigningKeyPair) =>
  signJwt({ sub: "s" }, { alg: pair.publicJwk.alg as "ES256", key: pair.privateJwk, kid: pair.publicJwk.kid!, typ: "at+jwt" });
const verify = async (keys: ReturnType<typeof remoteJwks>, pair: SigningKeyPair) =>
  verifyJwt(await token(pair), { algorithms: ["ES256", "EdDSA"], key: keys, typ: "at+jwt" });
async function failure(promise: Promise<unknown>): Promise<{ code: string; cause?: unknown }> {
  const error = await promise.then(() => undefined, (e: { code: string }) => e);
  expect(error, "it was accepted").toBeDefined();
  return error as { code: string; cause?: unknown };
}
const causeReason = (error: { cause?: unknown }) => (error.cause as OutboundError | { code: string }) instanceof OutboundError
  ? (error.cause as OutboundError).reason
  : (error.cause as { code: string }).code;
/** Waits until the server has seen `n` requests (a background refresh), up to 2 s. */
async function until(fetches: () => number, n: number) {
  for (let i = 0; i < 200 && fetches() < n; i++) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 20));
}

describe("caching", () => {
  test("one fetch serves many verifications while the set is fresh", async () => {
    const { keys, fetches } = await keySource();
    for (let i = 0; i < 5; i++) await verify(keys, A);
    expect(fetches()).toBe(1);
  });

  test("Cache-Control max-age sets the lifetime; past it the set is refreshed in the background and served meanwhile", async () => {
    answer = json(set(A), { "cache-control": "public, max-age=120" });
    const { keys, fetches } = await keySource();
    await verify(keys, A);
    clock += 119_000;
    await verify(keys, A);
    expect(fetches()).toBe(1);
    clock += 1_000;
    await verify(keys, A);
    await until(fetches, 2);
    expect(fetches()).toBe(2);
  });

  test.each([
    ["max-age=0", "no-store"],
    ["max-age=1", "a second"],
    ["no-cache", "no-cache"],
  ])("%s is raised to the minimum lifetime", async (cacheControl) => {
    answer = json(set(A), { "cache-control": cacheControl });
    const { keys, fetches } = await keySource({ minTtl: 60_000 });
    await verify(keys, A);
    clock += 59_000;
    await verify(keys, A);
    expect(fetches()).toBe(1);
  });

  test("a year of max-age is cut to the maximum lifetime; none gives the default", async () => {
    answer = json(set(A), { "cache-control": "max-age=31536000" });
    const { keys, fetches } = await keySource({ maxTtl: 3_600_000, defaultTtl: 600_000 });
    await verify(keys, A);
    answer = json(set(A));
    clock += 3_599_000;
    await verify(keys, A);
    expect(fetches()).toBe(1);
    clock += 1_000;
    await verify(keys, A);
    await until(fetches, 2);
    expect(fetches()).toBe(2);
    clock += 599_000;
    await verify(keys, A);
    expect(fetches()).toBe(2);
    clock += 1_000;
    await verify(keys, A);
    await until(fetches, 3);
    expect(fetches()).toBe(3);
  });
});

describe("an unknown kid (a key rotated in)", () => {
  test("refetches once and finds the new key", async () => {
    const { keys, fetches } = await keySource();
    await verify(keys, A);
    answer = json(set(A, B));
    clock += 31_000;
    await verify(keys, B);
    expect(fetches()).toBe(2);
  });

  test("at most once per cooldown: a second unknown kid within it fetches nothing", async () => {
    const { keys, fetches } = await keySource({ cooldown: 30_000 });
    await verify(keys, A);
    clock += 30_000;
    expect((await failure(verify(keys, B))).code).toBe("ERR_JWKS_NO_MATCHING_KEY");
    expect(fetches()).toBe(2);
    answer = json(set(A, B));
    clock += 29_999;
    expect((await failure(verify(keys, B))).code).toBe("ERR_JWKS_NO_MATCHING_KEY");
    expect(fetches()).toBe(2);
    clock += 1;
    await verify(keys, B);
    expect(fetches()).toBe(3);
  });

  test("the first fetch counts: a kid unknown right after it waits for the cooldown", async () => {
    const { keys, fetches } = await keySource();
    await verify(keys, A);
    answer = json(set(A, B));
    expect((await failure(verify(keys, B))).code).toBe("ERR_JWKS_NO_MATCHING_KEY");
    expect(fetches()).toBe(1);
  });

  test("concurrent misses share one fetch", async () => {
    const { keys, fetches } = await keySource();
    await verify(keys, A);
    answer = json(set(A, B, C));
    delay = 100;
    clock += 31_000;
    const results = await Promise.allSettled([...Array.from({ length: 10 }, () => verify(keys, B)), ...Array.from({ length: 10 }, () => verify(keys, C))]);
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect(fetches()).toBe(2);
  });

  test("a key removed from the set stops verifying once the set is refetched", async () => {
    const { keys } = await keySource();
    await verify(keys, A);
    answer = json(set(B));
    clock += 31_000;
    await verify(keys, B);
    expect((await failure(verify(keys, A))).code).toBe("ERR_JWKS_NO_MATCHING_KEY");
  });
});

describe("a failing key-set server", () => {
  test("a 500 on refetch: the last good set keeps serving", async () => {
    const { keys, fetches } = await keySource();
    await verify(keys, A);
    answer = (socket) => respond(socket, 500, {}, "down");
    clock += 700_000;
    await verify(keys, A);
    await until(fetches, 2);
    await verify(keys, A);
    expect((await failure(verify(keys, B))).code).toBe("ERR_JWKS_NO_MATCHING_KEY");
    expect(fetches()).toBe(2);
  });

  test("a 500 on the first fetch: ERR_JWKS_FETCH_FAILED with the status as cause, retried only after the cooldown", async () => {
    answer = (socket) => respond(socket, 500, {}, "down");
    const { keys, fetches } = await keySource();
    const error = await failure(verify(keys, A));
    expect(error.code).toBe("ERR_JWKS_FETCH_FAILED");
    expect(causeReason(error)).toBe("status");
    await failure(verify(keys, A));
    expect(fetches()).toBe(1);
    answer = json(set(A));
    clock += 30_000;
    await verify(keys, A);
    expect(fetches()).toBe(2);
  });

  test.each([
    ["slow: it never answers", (socket: Socket) => void socket, "timeout"],
    ["trickling: a byte every 100 ms", (socket: Socket) => trickle(socket, 100), "timeout"],
    ["redirecting", (socket: Socket) => respond(socket, 302, { location: "https://evil.example/jwks" }), "redirect"],
    ["huge: a 100 KiB set", (socket: Socket) => json({ keys: [], pad: "x".repeat(100 * 1024) })(socket), "too_large"],
    ["lying about its size", (socket: Socket) => {
      socket.write("HTTP/1.1 200 OK\r\ncontent-length: 99999999\r\n\r\n{");
    }, "too_large"],
    ["leaking its private keys", (socket: Socket) => json({ keys: [A.privateJwk] })(socket), "ERR_JWKS_INVALID"],
    ["not JSON", (socket: Socket) => respond(socket, 200, {}, "<html>"), "ERR_JWKS_INVALID"],
    ["not a set", (socket: Socket) => json([A.publicJwk])(socket), "ERR_JWKS_INVALID"],
  ])("%s: refused, and a cached set survives it", async (_name, hostile, reason) => {
    answer = hostile;
    const { keys, fetches } = await keySource();
    const started = Date.now();
    const error = await failure(verify(keys, A));
    expect(Date.now() - started).toBeLessThan(2500);
    expect([error.code, causeReason(error)]).toEqual(["ERR_JWKS_FETCH_FAILED", reason]);
    answer = json(set(A));
    clock += 30_000;
    await verify(keys, A);
    answer = hostile;
    clock += 700_000;
    await verify(keys, A);
    await until(fetches, 3);
    await verify(keys, A);
  });

  test("a compression bomb as the set: refused, never inflated past the cap", async () => {
    answer = (socket) => respond(socket, 200, { "content-type": "application/json", "content-encoding": "br" }, BROTLI_BOMB_256_MIB);
    const { keys } = await keySource();
    const error = await failure(verify(keys, A));
    expect(error.code).toBe("ERR_JWKS_FETCH_FAILED");
    // Node decodes and stops at the cap; Deno and Bun hand over the 211 bytes as sent, which are not JSON.
    expect(["too_large", "ERR_JWKS_INVALID"]).toContain(causeReason(error));
  });

  test("reload() fetches now and throws when it cannot", async () => {
    const { keys, fetches } = await keySource();
    await keys.reload();
    expect(fetches()).toBe(1);
    answer = (socket) => respond(socket, 503, {}, "");
    await expect(keys.reload()).rejects.toMatchObject({ code: "ERR_JWKS_FETCH_FAILED" });
    await verify(keys, A);
  });
});

test("the set's URL passes the outbound guard: a private host is refused without a request", async () => {
  const { fetches } = await keySource();
  const keys = remoteJwks(`${server!.origin}/jwks`, { now: () => clock });
  const error = await failure(verify(keys, A));
  expect([error.code, causeReason(error)]).toEqual(["ERR_JWKS_FETCH_FAILED", "private_host"]);
  expect(fetches()).toBe(0);
  // An operator's URL may be trusted as such.
  await verify(remoteJwks(`${server!.origin}/jwks`, { trusted: true }), A);
});
