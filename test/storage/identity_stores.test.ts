// The machine-identity flows (private_key_jwt, ID-JAG, workload JWT, token exchange with act) on the memory store
// and on SQLite through the runtime's own driver, on every runtime. PostgreSQL and Redis: identity_databases.test.ts.
import { describe } from "vitest";
import { memoryStorage, sqlStorage } from "../../mod.ts";
import { openSqlite } from "../support/sqlite.ts";
import { identityFlows } from "./identity_flows.ts";

describe("identity flows on the memory store", () => identityFlows(() => Promise.resolve(memoryStorage({ clock: () => 1_800_000_000_000 })), true));

// act and auth_time of token records: persisted on SQLite by migration 4 (not yet on this branch).
describe(`identity flows on SQLite (${openSqlite.driver})`, () => identityFlows(() => Promise.resolve(sqlStorage(openSqlite(":memory:"))), false));
