// The reference server's Redis client never resends a script after its connection drops: a resent code
// redemption or rotation would lose to its own first run and revoke the grant (lib/reference/store.ts). On a real
// Redis, a script is held by CLIENT PAUSE, its connection is killed, and the pause is lifted: the call fails with
// 503, and after the client has reconnected by itself the script has still not run.
import { Redis } from "ioredis";
import { afterAll, expect, test } from "vitest";
import { nodeDrivers } from "../../lib/cli/drivers.ts";
import { openStore } from "../../lib/reference/store.ts";
import { type Database, started, startRedis } from "../support/databases.ts";

const server = await startRedis();
afterAll(async () => {
  if (started(server)) await server.stop();
});

/** Polls `check` until it holds, for at most `ms`. */
async function until(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

test.skipIf(!started(server))("a script in flight when the connection drops fails with 503 and is never resent", async () => {
  const db = server as Database;
  const opened = await openStore(db.url, { drivers: nodeDrivers, onError: () => {} });
  const admin = new Redis(db.url);
  const now = Date.now();
  const mark = (key: string) => opened.storage.markOnce(key, now + 60_000, now);
  try {
    expect(await mark("before")).toBe(true);
    // Scripts that may write wait while Redis is paused for writes; the admin connection's commands do not.
    await admin.call("CLIENT", "PAUSE", "10000", "WRITE");
    const held = mark("held").then(() => "answered", (error: unknown) => error);
    expect(await until(async () => /blocked_clients:[1-9]/.test(await admin.info("clients")), 2000)).toBe(true);
    await admin.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
    // What the call says while Redis is still paused: a client that keeps the script to resend it has no answer.
    const outcome = await Promise.race([held, new Promise((resolve) => setTimeout(resolve, 2000, "no answer"))]);
    await admin.call("CLIENT", "UNPAUSE");
    // The client reconnects by itself; once it answers again, the held script must not have run meanwhile.
    expect(await until(() => mark(`after-${Date.now()}`).then(() => true, () => false), 5000)).toBe(true);
    await held;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await admin.exists("oauth:once:held")).toBe(0);
    expect(outcome).toMatchObject({ code: "temporarily_unavailable", status: 503 });
    expect(await mark("held")).toBe(true);
  } finally {
    await admin.call("CLIENT", "UNPAUSE").catch(() => {});
    admin.disconnect();
    await opened.close();
  }
}, 20_000);
