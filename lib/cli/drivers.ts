/**
 * Database drivers for `--store`, from the runtime: SQLite built in (node:sqlite on Node 22.5+ and Deno,
 * bun:sqlite on Bun) and the optional npm drivers (pg, ioredis) imported only when a URL needs one.
 *
 * @module
 */
import process from "node:process";
import type { SqliteDatabase, StoreDrivers } from "../reference/store.ts";

// Specifiers in variables: a bundler or type checker must not try to resolve a driver that is not installed.
const NODE_SQLITE = "node:sqlite";
const BUN_SQLITE = "bun:sqlite";

/** node:sqlite, on Node and Deno. */
async function openNodeSqlite(path: string): Promise<SqliteDatabase> {
  let module: { DatabaseSync: new (path: string) => SqliteDatabase };
  // Node 22 flags node:sqlite as experimental on import; an operator would read that as a problem with the
  // server at every start. Only that one warning is held back, only during the import.
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (String(warning instanceof Error ? warning.message : warning).includes("SQLite")) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    module = await import(NODE_SQLITE);
  } catch {
    throw new Error("SQLite needs Node 22.5 or later (node:sqlite)");
  } finally {
    process.emitWarning = emitWarning;
  }
  return new module.DatabaseSync(path);
}

/** bun:sqlite, on Bun. */
async function openBunSqlite(path: string): Promise<SqliteDatabase> {
  const module = await import(BUN_SQLITE) as { Database: new (path: string) => SqliteDatabase };
  return new module.Database(path);
}

/** The drivers of Node and Deno (Deno resolves npm packages by name from package.json, or as `npm:`). */
export const nodeDrivers: StoreDrivers = {
  openSqlite: openNodeSqlite,
  importPackage: (name) => import(name),
};

/** The drivers of Bun. */
export const bunDrivers: StoreDrivers = {
  openSqlite: openBunSqlite,
  importPackage: (name) => import(name),
};
