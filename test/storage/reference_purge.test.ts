// Storage stays bounded under steady load: the reference app purges expired records on its own timer, on the
// memory store and on SQLite (the runtime's own driver: node:sqlite on Node and Deno, bun:sqlite on Bun).
import { expect, test } from "vitest";
import { bunDrivers, nodeDrivers } from "../../lib/cli/drivers.ts";
import { createReferenceApp } from "../../lib/reference/app.ts";
import type { ReferenceConfig } from "../../lib/reference/config.ts";
import { openStore, type SqliteDatabase, type StoreDrivers } from "../../lib/reference/store.ts";
import { MemoryStorage } from "../../lib/storage/memory.ts";
import type { Storage } from "../../lib/storage/types.ts";

const SECRET = "backend-secret-0123456789abcdef";
const CONFIG: ReferenceConfig = {
  users: [],
  scopes: [{ name: "export", description: "Run exports" }],
  clients: [{ client_id: "backend", client_secret: SECRET, name: "Backend", redirect_uris: [], scopes: ["export"], grant_types: ["client_credentials"] }],
};
const PURGE_EVERY = 20;
const ROUNDS = 12;
const PER_ROUND = 40;
/** Each round moves the clock 20 minutes: tokens live an hour, so about three rounds of them are live. */
const STEP = 20 * 60_000;

async function steadyLoad(storage: Storage, count: () => number): Promise<number[]> {
  let now = Date.now();
  const app = await createReferenceApp({ issuer: "https://as.example", config: CONFIG, storage, clock: () => now, purgeInterval: PURGE_EVERY });
  const sizes: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < PER_ROUND; i++) {
        const response = await app.fetch(new Request("https://as.example/index.php?module=OAuth2&action=token", {
          method: "POST",
          body: new URLSearchParams({ grant_type: "client_credentials", client_id: "backend", client_secret: SECRET, scope: "export" }),
        }));
        expect(response.status).toBe(200);
      }
      now += STEP;
      // Let the purge timer run a few times.
      await new Promise((resolve) => setTimeout(resolve, PURGE_EVERY * 4));
      sizes.push(count());
    }
  } finally {
    app.close();
  }
  return sizes;
}

test("the memory store stays bounded under steady load", async () => {
  const storage = new MemoryStorage();
  const sizes = await steadyLoad(storage, () => storage.size().access);
  expect(Math.max(...sizes)).toBeLessThanOrEqual(3 * PER_ROUND);
});

test("a SQLite store stays bounded under steady load: the app purges it", async () => {
  const base = (globalThis as { Bun?: unknown }).Bun ? bunDrivers : nodeDrivers;
  let db!: SqliteDatabase;
  const drivers: StoreDrivers = { ...base, openSqlite: async (path) => (db = await base.openSqlite(path)) };
  const store = await openStore("sqlite::memory:", { drivers });
  // Every row of every table, whatever the SQL store names them.
  const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name);
  const rows = (): number =>
    tables.reduce((sum, name) => sum + Number((db.prepare(`SELECT count(*) AS n FROM "${name}"`).all()[0] as { n: number }).n), 0);
  try {
    const sizes = await steadyLoad(store.storage, rows);
    const baseline = sizes[0]!;
    // Without a purge, rows would grow by PER_ROUND each round, to ROUNDS * PER_ROUND.
    expect(Math.max(...sizes)).toBeLessThanOrEqual(baseline + 3 * PER_ROUND);
    expect(sizes.at(-1)!).toBeLessThan(ROUNDS * PER_ROUND / 2);
  } finally {
    await store.close();
  }
});
