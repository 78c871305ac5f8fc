// Model-based check of the SQLite store against the memory store (test/support/model.ts); PostgreSQL and Redis
// get the same in postgres.test.ts and redis.test.ts. Vitest on Node (fast-check).
import process from "node:process";
import { test } from "vitest";
import { sqlStorage } from "../../mod.ts";
import { checkAgainstModel } from "../support/model.ts";
import { openSqlite } from "../support/sqlite.ts";

const RUNS = Number(process.env.MODEL_RUNS ?? 60);

test(`random sequences of verbs: SQLite answers as the memory store does (${RUNS} runs)`, async () => {
  await checkAgainstModel((clock) => sqlStorage({ ...openSqlite(":memory:"), clock }), RUNS);
}, 120_000);
