// Finding 5 of issue 15: failed client authentications with 11 KiB client_ids from 1200 addresses must leave the
// throttle's memory within a few MiB (its keys are hashed to a fixed size). Node only: it reads the heap after GC.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { expect, test } from "vitest";
import { fixture } from "../helpers.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

function heap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

test("1200 addresses x 11 KiB client_ids grow the heap by less than 4 MiB", async () => {
  const { server } = await fixture();
  const longId = "x".repeat(11 * 1024);
  const attempt = (address: string, id: string) =>
    server.fetch(new Request("https://auth.example.com/token", {
      method: "POST",
      // In the Basic header: a form parameter is limited to 4096 characters, a header is not.
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${id}:wrong`)}` },
      body: "grant_type=client_credentials",
    }), { remoteAddr: { hostname: address } });
  // Warm up every code path first, so that only the throttle's state is measured.
  for (let i = 0; i < 20; i++) await (await attempt(`2001:db8:ffff::${i.toString(16)}`, `${longId}${i}`)).arrayBuffer();
  const before = heap();
  for (let i = 0; i < 1200; i++) {
    const response = await attempt(`2001:db8::${i.toString(16)}`, `${longId}${i}`);
    expect(response.status).toBe(401);
    await response.arrayBuffer();
  }
  const grown = heap() - before;
  expect(grown).toBeLessThan(4 * 1024 * 1024);
}, 60_000);
