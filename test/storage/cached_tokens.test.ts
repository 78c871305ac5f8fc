// The access-token cache (lib/storage/cached_tokens.ts): two server instances on one shared store, each with its
// own cache, as two processes on one database. Repeated Bearer checks read the store once per bound; a
// revocation takes effect at once on the instance that made it and within the bound on the other; a cached
// record never outlives its token; misses and failures are never cached. Node, Deno and Bun.
import { describe, expect, test } from "vitest";
import { createAuthorizationServer, memoryStorage, type Storage, storageContract } from "../../mod.ts";
import { cachedTokens } from "../../lib/storage/cached_tokens.ts";

const SECRET = "cache-test-secret-0123456789abcdef";
const BODY = new URLSearchParams({ grant_type: "client_credentials", client_id: "backend", client_secret: SECRET, scope: "read" });

describe("storage contract: cachedTokens over memoryStorage", () => {
  for (const check of storageContract(() => cachedTokens(memoryStorage()))) test(check.name, check.run);
});

/** Counts the shared store's findAccessToken calls (the reads that reached "the database"); can make them fail. */
function counted(store: Storage) {
  let reads = 0;
  let failing = false;
  const counting = Object.create(store) as Storage;
  counting.findAccessToken = (hash, now) => {
    reads++;
    return failing ? Promise.reject(new Error("database down")) : store.findAccessToken(hash, now);
  };
  return { store: counting, reads: () => reads, fail: (on: boolean) => void (failing = on) };
}

async function twoInstances(maxAgeMs = 5000, accessTokenSeconds = 3600) {
  let now = Date.now();
  const clock = () => now;
  const shared = counted(memoryStorage({ clock }));
  const open = () => {
    const storage = cachedTokens(shared.store, { maxAgeMs, clock });
    const server = createAuthorizationServer({
      issuer: "https://as.example",
      scopes: { read: "Read" },
      storage,
      clock,
      lifetimes: { accessToken: accessTokenSeconds },
    });
    return Object.assign(server, { storage });
  };
  const a = open();
  const b = open();
  await a.clients.register({ client_id: "backend", client_secret: SECRET, name: "Backend", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] });
  const issue = async (server = a) => {
    const response = await server.fetch(new Request("https://as.example/token", { method: "POST", body: BODY }));
    return ((await response.json()) as { access_token: string }).access_token;
  };
  const issued = await issue();
  const check = (server: typeof a, token = issued) =>
    server.verifyAuthorization(`Bearer ${token}`).then(() => 200, (e: { status?: number }) => e.status ?? "failed");
  const revoke = async (server: typeof a, token = issued) => {
    const body = new URLSearchParams({ token, client_id: "backend", client_secret: SECRET });
    expect((await server.fetch(new Request("https://as.example/revoke", { method: "POST", body }))).status).toBe(200);
  };
  return { a, b, issue, check, revoke, shared, advance: (ms: number) => (now += ms) };
}

test("Bearer checks with one token read the store once per bound once it comes back, not once per call", async () => {
  const { b, check, shared, advance } = await twoInstances(1000);
  const before = shared.reads();
  expect(await check(b)).toBe(200);
  expect(shared.reads() - before).toBe(1); // a first check is read and not kept
  for (let i = 0; i < 20; i++) expect(await check(b)).toBe(200);
  expect(shared.reads() - before).toBe(2); // back within the bound: kept
  advance(1000);
  for (let i = 0; i < 20; i++) expect(await check(b)).toBe(200);
  expect(shared.reads() - before).toBe(3); // kept before: kept again at once
});

test("tokens checked once per bound are read every time and not kept", async () => {
  const { b, issue, check, shared, advance } = await twoInstances(1000);
  const tokens = [];
  for (let i = 0; i < 5; i++) tokens.push(await issue());
  const before = shared.reads();
  for (const token of tokens) expect(await check(b, token)).toBe(200);
  advance(1000); // past the bound: a token that comes back now counts as a first check again
  for (const token of tokens) expect(await check(b, token)).toBe(200);
  expect(shared.reads() - before).toBe(10);
  // Back within the bound: had the last checks kept them, these would read nothing.
  for (const token of tokens) expect(await check(b, token)).toBe(200);
  expect(shared.reads() - before).toBe(15);
});

test("a revocation takes effect at once on the instance that made it, and within the bound on the other", async () => {
  const { a, b, check, revoke, advance } = await twoInstances(5000);
  for (const server of [a, a, b, b]) expect(await check(server)).toBe(200); // both keep the record now
  await revoke(a);
  expect(await check(a)).toBe(401);
  advance(4999);
  expect(await check(b)).toBe(200); // inside the bound: b's cached record
  advance(1);
  expect(await check(b)).toBe(401); // the bound has passed
});

test("revoking a client's grants or deleting the client empties this instance's cache at once", async () => {
  const { a, issue, check } = await twoInstances(60_000);
  const second = await issue();
  for (let i = 0; i < 2; i++) {
    expect(await check(a)).toBe(200);
    expect(await check(a, second)).toBe(200); // kept from the second check
  }
  await a.storage.revokeClientGrants("backend");
  expect(await check(a)).toBe(401);
  expect(await check(a, second)).toBe(401);
});

test("a cached record is never served past its token's expiry", async () => {
  const { b, check, advance } = await twoInstances(10 * 60_000, 60);
  expect(await check(b)).toBe(200);
  advance(59_999);
  expect(await check(b)).toBe(200);
  advance(1);
  expect(await check(b)).toBe(401);
});

test("a check that joins a read still in flight is judged at its own time, not the read's", async () => {
  let now = Date.now();
  const inner = memoryStorage({ clock: () => now });
  let answer: () => void = () => {};
  const slow = Object.create(inner) as Storage;
  slow.findAccessToken = async (hash, at) => {
    await new Promise<void>((resolve) => (answer = resolve));
    return inner.findAccessToken(hash, at);
  };
  const storage = cachedTokens(slow, { maxAgeMs: 60_000, clock: () => now });
  await inner.saveTokens({ access: { hash: "h", client_id: "c", scope: "read", expires_at: now + 1_000 } }, now);
  const once = storage.findAccessToken("h", now); // a first check: read, not kept
  answer();
  await once;
  const first = storage.findAccessToken("h", now); // back: kept, and live at its time
  const second = storage.findAccessToken("h", now + 1_000); // joins that read: expired at its time
  answer();
  expect(await first).toMatchObject({ hash: "h" });
  expect(await second).toBeNull();
});

test("an unknown token and a failed read are not cached", async () => {
  const { b, check, shared } = await twoInstances();
  const before = shared.reads();
  expect(await check(b, "no-such-token-0123456789abcdefghijklmnopq")).toBe(401);
  expect(await check(b, "no-such-token-0123456789abcdefghijklmnopq")).toBe(401);
  expect(shared.reads() - before).toBe(2);
  shared.fail(true);
  expect(await check(b)).toBe("failed");
  shared.fail(false);
  expect(await check(b)).toBe(200); // the store is back: read again, not the failure
  expect(shared.reads() - before).toBe(4);
});

test("a read that raced a revocation on the same instance is not served afterwards", async () => {
  const inner = memoryStorage();
  let commit: () => void = () => {};
  const slow = Object.create(inner) as Storage;
  slow.revokeAccessToken = async (hash) => {
    await new Promise<void>((resolve) => (commit = resolve));
    return inner.revokeAccessToken(hash);
  };
  const server = createAuthorizationServer({ issuer: "https://as.example", scopes: { read: "Read" }, storage: cachedTokens(slow) });
  await server.clients.register({ client_id: "backend", client_secret: SECRET, name: "Backend", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] });
  const token = ((await (await server.fetch(new Request("https://as.example/token", { method: "POST", body: BODY }))).json()) as { access_token: string }).access_token;
  const check = () => server.verifyAuthorization(`Bearer ${token}`).then(() => 200, (e: { status: number }) => e.status);
  expect(await check()).toBe(200); // seen once: the next read is kept
  const revoking = server.fetch(new Request("https://as.example/revoke", {
    method: "POST",
    body: new URLSearchParams({ token, client_id: "backend", client_secret: SECRET }),
  }));
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(await check()).toBe(200); // read while the revocation is being written
  commit();
  expect((await revoking).status).toBe(200);
  expect(await check()).toBe(401);
});

test("every caller of a kept record gets the same frozen copy, not the store's own object", async () => {
  // A store that hands out its own record object (as an in-process store may): it must stay the store's.
  const now = Date.now();
  const own = { hash: "h1", client_id: "c", scope: "read", resource: ["https://api.example"], expires_at: now + 60_000 };
  const store = Object.create(memoryStorage()) as Storage;
  store.findAccessToken = () => Promise.resolve(own);
  const cached = cachedTokens(store);
  const once = (await cached.findAccessToken("h1", now))!; // a first check: read, not kept
  const first = (await cached.findAccessToken("h1", now))!;
  const second = (await cached.findAccessToken("h1", now))!;
  expect(second).toBe(first);
  expect(once).toBe(own); // its one caller gets what the store gave, as without the cache
  expect(Object.isFrozen(first) && Object.isFrozen(first.resource)).toBe(true);
  expect(() => first.resource!.push("https://evil.example")).toThrow();
  expect(Object.isFrozen(own) || Object.isFrozen(own.resource)).toBe(false);
});

test("maxAgeMs 0 is no cache at all", () => {
  const store = memoryStorage();
  expect(cachedTokens(store, { maxAgeMs: 0 })).toBe(store);
});
