/**
 * One instance of an authorization server with DPoP on, as its own OS process on a shared store, for
 * test/storage/dpop.test.ts:
 *   node --import tsx test/support/dpop_racer.ts DRIVER TARGET
 * Prints "ready", then for each stdin line {round, proof} it sends one client_credentials request carrying that
 * DPoP proof to its own server and prints {round, status}. The clients are the ones the test stored.
 *
 * @module
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { createAuthorizationServer } from "../../mod.ts";
import { DPOP_RACE } from "./dpop_race.ts";
import { type Driver, openStore } from "./stores.ts";

const [driver, target] = process.argv.slice(2) as [Driver, string];
const { store, close } = await openStore(driver, target);
const server = createAuthorizationServer({ ...DPOP_RACE.options, storage: store });

const lines = createInterface({ input: process.stdin });
process.stdout.write("ready\n");
for await (const line of lines) {
  const task = JSON.parse(line) as { round: number; proof: string };
  const response = await server.fetch(DPOP_RACE.request(task.proof));
  await response.body?.cancel();
  process.stdout.write(`${JSON.stringify({ round: task.round, status: response.status })}\n`);
}
await close();
