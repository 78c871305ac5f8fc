/**
 * One racer of test/storage/races.test.ts, as its own OS process with its own connection:
 *   node --import tsx test/support/racer.ts DRIVER TARGET
 * Prints "ready" (after migrating, with RACER_MIGRATE set), then for each stdin line {round, verb, hash, grant, now} it redeems the code (or rotates the
 * refresh token, with a 10 s grace window and a sealed successor for "grace") with fresh token hashes and prints {round,
 * won, access, first, sealed, successor, refresh}; for
 * "setting" it swaps the setting named `hash` from `expected` to a value of its own, printed as `access`; the
 * "device-*" verbs decide, poll or redeem a device authorization (won: decided, in time, redeemed).
 *
 * @module
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { type Driver, openStore } from "./stores.ts";

const [driver, target] = process.argv.slice(2) as [Driver, string];
const { store, close } = await openStore(driver, target);
// RACER_MIGRATE: create the schema at start, as every instance of a server does (the migration race).
if (process.env.RACER_MIGRATE) await (store as unknown as { migrate(): Promise<number> }).migrate();
const random = () => crypto.randomUUID();

const lines = createInterface({ input: process.stdin });
process.stdout.write("ready\n");
for await (const line of lines) {
  const task = JSON.parse(line) as {
    round: number;
    verb: "code" | "refresh" | "grace" | "setting" | "device-decide" | "device-poll" | "device-redeem";
    hash: string;
    grant: string;
    now: number;
    expected?: string | null;
  };
  const access = `at-${random()}`;
  if (task.verb === "setting") {
    // A compare-and-set of the setting named `hash` from `expected`; `access` doubles as this racer's value.
    const won = await store.swapSetting(task.hash, task.expected ?? null, access).catch((error: unknown) => {
      process.stderr.write(`racer error: ${String(error)}\n`);
      return false;
    });
    process.stdout.write(`${JSON.stringify({ round: task.round, won, access })}\n`);
    continue;
  }
  const tokens = {
    access: { hash: access, client_id: "race", user_id: "u", scope: "read", grant_id: task.grant, expires_at: task.now + 3_600_000 },
    refresh: { hash: `rt-${random()}`, client_id: "race", user_id: "u", scope: "read", grant_id: task.grant, expires_at: task.now + 7_200_000 },
  };
  // With a grace window the successor is sealed (here: a label of this racer's); a retry gets the first one's.
  const sealed = task.verb === "grace" ? `sealed-${access}` : undefined;
  let won = false;
  let first = false;
  let successor: string | undefined;
  try {
    // Device authorizations (test/storage/device_races.test.ts): `hash` is the user code hash for a decision.
    if (task.verb === "device-decide") won = (await store.decideDeviceAuthorization(task.hash, { approved: true, user_id: access }, task.now)) !== null;
    else if (task.verb === "device-poll") won = (await store.pollDeviceAuthorization(task.hash, task.now))?.slow_down === false;
    else if (task.verb === "device-redeem") won = (await store.redeemDeviceAuthorization(task.hash, tokens, task.now)) !== null;
    else if (task.verb === "code") won = (await store.redeemCode(task.hash, tokens, task.now)) !== null;
    else {
      const old = await store.rotateRefreshToken(task.hash, sealed ? { ...tokens, sealed } : tokens, task.now, sealed ? 10_000 : 0);
      won = old !== null;
      first = old !== null && old.rotated_at === undefined;
      successor = old?.successor;
    }
  } catch (error) {
    process.stderr.write(`racer error: ${String(error)} ${String((error as { cause?: unknown }).cause)}\n`);
  }
  process.stdout.write(`${JSON.stringify({ round: task.round, won, access, first, sealed, successor, refresh: tokens.refresh.hash })}\n`);
}
await close();
