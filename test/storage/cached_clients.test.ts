// The client cache (lib/storage/cached_clients.ts): two server instances on one shared store, each with its own
// cache, as two processes on one database. A pause or delete on one instance takes effect there at once and on
// the other within the bound; reads are served from the cache; a miss is never cached. Node, Deno and Bun.
import { describe, expect, test } from "vitest";
import { createAuthorizationServer, memoryStorage, type Storage, storageContract } from "../../mod.ts";
import { cachedClients } from "../../lib/storage/cached_clients.ts";

const SECRET = "cache-test-secret-0123456789abcdef";
const BODY = new URLSearchParams({ grant_type: "client_credentials", client_id: "backend", client_secret: SECRET, scope: "read" });

describe("storage contract: cachedClients over memoryStorage", () => {
  for (const check of storageContract(() => cachedClients(memoryStorage()))) test(check.name, check.run);
});

/** Counts the shared store's getClient calls: the reads that reached "the database". */
function counted(store: Storage): { store: Storage; reads: () => number } {
  let reads = 0;
  const counting = Object.create(store) as Storage;
  counting.getClient = (id) => (reads++, store.getClient(id));
  return { store: counting, reads: () => reads };
}

async function twoInstances(maxAgeMs = 5000) {
  let now = Date.now();
  const clock = () => now;
  const shared = counted(memoryStorage({ clock }));
  const open = () =>
    createAuthorizationServer({
      issuer: "https://as.example",
      scopes: { read: "Read" },
      storage: cachedClients(shared.store, { maxAgeMs, clock }),
      clock,
    });
  const a = open();
  const b = open();
  await a.clients.register({ client_id: "backend", client_secret: SECRET, name: "Backend", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] });
  const token = async (server: typeof a) => {
    const response = await server.fetch(new Request("https://as.example/token", { method: "POST", body: BODY }));
    return { status: response.status, body: (await response.json()) as { access_token?: string } };
  };
  const issued = (await token(a)).body.access_token!;
  const check = (server: typeof a) => server.verifyAuthorization(`Bearer ${issued}`).then(() => 200, (e: { status: number }) => e.status);
  return { a, b, token, check, reads: shared.reads, advance: (ms: number) => (now += ms) };
}

test("Bearer checks and token requests read the client once per bound, not once per request", async () => {
  const { b, token, check, reads } = await twoInstances();
  const before = reads();
  for (let i = 0; i < 20; i++) expect(await check(b)).toBe(200);
  for (let i = 0; i < 5; i++) expect((await token(b)).status).toBe(200);
  expect(reads() - before).toBe(1);
});

test("a pause takes effect at once on the instance that made it, and within the bound on the other", async () => {
  const { a, b, check, advance } = await twoInstances(5000);
  expect(await check(b)).toBe(200); // b has the active record now
  await a.clients.pause("backend");
  expect(await check(a)).toBe(401);
  advance(4999);
  expect(await check(b)).toBe(200); // inside the bound: b's cached record
  advance(1);
  expect(await check(b)).toBe(401); // the bound has passed
  await b.clients.resume("backend");
  expect(await check(b)).toBe(200);
});

test("a deleted client is refused at once where it was deleted, and a new client is found at once everywhere", async () => {
  const { a, b, token, check, advance } = await twoInstances(5000);
  // b looks up a client that does not exist yet: the miss must not be cached.
  expect((await b.fetch(new Request("https://as.example/token", {
    method: "POST",
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: "later", client_secret: SECRET }),
  }))).status).toBe(401);
  await a.clients.register({ client_id: "later", client_secret: SECRET, name: "Later", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] });
  const later = await b.fetch(new Request("https://as.example/token", {
    method: "POST",
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: "later", client_secret: SECRET, scope: "read" }),
  }));
  expect(later.status).toBe(200);
  expect((await token(b)).status).toBe(200);
  await b.clients.delete("backend");
  expect((await token(b)).status).toBe(401);
  expect(await check(b)).toBe(401);
  advance(5000);
  expect((await token(a)).status).toBe(401);
});

test("a read that raced a pause on the same instance is not served afterwards", async () => {
  // A store whose pause takes a while to commit: a Bearer check in between reads the record before the pause.
  const inner = memoryStorage();
  let commit: () => void = () => {};
  const slow = Object.create(inner) as Storage;
  slow.setClientActive = async (id, active) => {
    await new Promise<void>((resolve) => (commit = resolve));
    return inner.setClientActive(id, active);
  };
  const server = createAuthorizationServer({ issuer: "https://as.example", scopes: { read: "Read" }, storage: cachedClients(slow) });
  await server.clients.register({ client_id: "backend", client_secret: SECRET, name: "Backend", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] });
  const issued = await server.fetch(new Request("https://as.example/token", { method: "POST", body: BODY }));
  const token = ((await issued.json()) as { access_token: string }).access_token;
  const check = () => server.verifyAuthorization(`Bearer ${token}`).then(() => 200, (e: { status: number }) => e.status);
  const pausing = server.clients.pause("backend");
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(await check()).toBe(200); // read while the pause is being written
  commit();
  await pausing;
  expect(await check()).toBe(401);
});

test("maxAgeMs 0 is no cache at all", () => {
  const store = memoryStorage();
  expect(cachedClients(store, { maxAgeMs: 0 })).toBe(store);
});
