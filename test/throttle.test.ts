// Brute force against client secrets is slowed per address, while the real client keeps working.
import { describe, expect, test } from "vitest";
import { createAuthorizationServer, memoryStorage } from "../mod.ts";
import { memoryThrottle } from "../lib/throttle.ts";
import { fixture, postToken, SECRETS, TOKEN_URL } from "./helpers.ts";
import type { Throttle } from "../lib/throttle.ts";

const attempt = (server: Awaited<ReturnType<typeof fixture>>["server"], secret: string, address: string) =>
  server.fetch(new Request(TOKEN_URL, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: "backend", client_secret: secret, scope: "export" }),
  }), { remoteAddr: { hostname: address } });

test("a brute-force run of wrong secrets is throttled; the legitimate client still gets through", async () => {
  const { server, clock } = await fixture({ throttle: memoryThrottle({ maxFailures: 5, blockSeconds: 30 }) });
  const statuses: number[] = [];
  for (let i = 0; i < 50; i++) statuses.push((await attempt(server, `guess-${i}-0123456789`, "203.0.113.9")).status);
  expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
  expect(statuses.slice(5).every((s) => s === 429)).toBe(true);
  // Even the right secret from the attacking address waits: a block gives no oracle.
  const blocked = await attempt(server, SECRETS.backend, "203.0.113.9");
  expect(blocked.status).toBe(429);
  expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
  expect((await blocked.json()).error).toBe("slow_down");
  // The real client, from its own address, is not locked out.
  expect((await attempt(server, SECRETS.backend, "198.51.100.7")).status).toBe(200);
  // The block grows while the attacker keeps trying, and ends once they stop.
  clock.advance(3600);
  expect((await attempt(server, SECRETS.backend, "203.0.113.9")).status).toBe(200);
});

test("only 10 guesses a minute per address get through with the defaults", async () => {
  const { server, clock } = await fixture();
  let answered = 0;
  for (let second = 0; second < 300; second++) {
    if ((await attempt(server, `guess-${second}-0123456789`, "203.0.113.9")).status === 401) answered++;
    clock.advance(1);
  }
  // 300 tries over five minutes: 10, then one per block of 30, 60, 120 s... (13 in all).
  expect(answered).toBe(13);
});

test("throttle: false switches it off", async () => {
  const { server } = await fixture({ throttle: false });
  for (let i = 0; i < 30; i++) expect((await attempt(server, `guess-${i}-0123456789`, "203.0.113.9")).status).toBe(401);
});

test("a hung store fails the request with 503 temporarily_unavailable after storageTimeout", async () => {
  const store = memoryStorage();
  const hanging = Object.assign(Object.create(store), { getClient: () => new Promise(() => {}) });
  const server = createAuthorizationServer({ issuer: "https://a.example", scopes: { read: "Read" }, storage: hanging, storageTimeout: 50 });
  const started = Date.now();
  const response = await server.fetch(new Request("https://a.example/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials&client_id=x&client_secret=y&scope=read",
  }));
  expect(Date.now() - started).toBeLessThan(2000);
  expect(response.status).toBe(503);
  expect(response.headers.get("retry-after")).toBe("1");
  expect(await response.json()).toMatchObject({ error: "temporarily_unavailable" });
});

test("at its key cap the throttle forgets idle keys, keeps one still in use, and a new key stays cheap", () => {
  const throttle = memoryThrottle({ maxFailures: 1, blockSeconds: 600, maxKeys: 4 });
  throttle.fail("attacker", 0); // blocked at once
  throttle.fail("idle", 0);
  for (let i = 0; i < 10; i++) {
    throttle.fail(`flood-${i}`, 0);
    // The attacker keeps asking: its key is in use, so no flood of new keys pushes it out.
    expect(throttle.retryAfter("attacker", 1000)).toBeGreaterThan(0);
  }
  expect(throttle.retryAfter("idle", 1000)).toBe(0); // forgotten: at most maxKeys are remembered

  // A flood of wrong secrets from many addresses at the cap: each new key must cost O(1), not a scan.
  const big = memoryThrottle({ maxKeys: 100_000 });
  for (let i = 0; i < 100_000; i++) big.fail(`addr:${i}`, 0);
  const started = performance.now();
  for (let i = 100_000; i < 150_000; i++) big.fail(`addr:${i}`, 0);
  expect(performance.now() - started).toBeLessThan(750); // about 90 ms here; evicting key by key took 1.8 s
});

describe("a throttle that answers asynchronously (a shared store) is awaited: its block holds", () => {
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

  test("a throttle that answers asynchronously (a shared store) is awaited: its block holds", async () => {
    const shared: Throttle = { retryAfter: () => Promise.resolve(1500), fail: () => Promise.resolve() };
    const { server } = await fixture({ throttle: shared });
    const response = await postToken(server, { grant_type: "client_credentials" }, basic("backend", SECRETS.backend));
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("2");
  });
});
