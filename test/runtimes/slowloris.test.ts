// Finding 8 of issue 15 over real sockets: connections that stall are closed, on Node, Deno and Bun. A declared
// body that never arrives gets 408 from the core's deadline on every runtime; stalls in the headers and idle
// keep-alive connections are closed by Node's and Bun's servers; Deno.serve has no such timeouts, so the
// reference server on Deno refuses to listen beyond loopback unless a trusted proxy (which must time out slow
// clients) is in front.
import { afterAll, describe, expect, test } from "vitest";
import { config, killAll, startReference } from "./reference_process.ts";
import { rawRequest, stall } from "./raw_http.ts";

afterAll(killAll);

describe.each(["node", "deno", "bun"])("on %s", (runtime) => {
  test("a declared body that never arrives gets 408 within the body deadline (2 s here)", async () => {
    const server = await startReference(runtime, config({ body_timeout_seconds: 2 }));
    try {
      const host = new URL(server.url).host;
      const started = Date.now();
      const response = await rawRequest(server.url,
        `POST /index.php?module=OAuth2&action=token HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\n` +
        `Content-Length: 100\r\n\r\ngrant_type=cli`, 8_000);
      expect(response.status).toBe(408);
      expect(Date.now() - started).toBeLessThan(6_000);
    } finally {
      await server.stop();
    }
  }, 30_000);

  test("11. clients that disconnect mid-body are not logged as errors with a stack trace", async () => {
    const server = await startReference(runtime, config());
    try {
      const host = new URL(server.url).host;
      await Promise.all(Array.from({ length: 5 }, () => stall(server.url,
        `POST /index.php?module=OAuth2&action=token HTTP/1.1\r\nHost: ${host}\r\n` +
        `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 200\r\n\r\ngrant_type=client`, 200)));
      await new Promise((done) => setTimeout(done, 500));
      expect(server.output()).not.toMatch(/\n\s+at /);
      expect(server.output()).not.toMatch(/error at token/);
    } finally {
      await server.stop();
    }
  }, 30_000);

  if (runtime === "deno") {
    test("refuses to listen beyond loopback without a trusted proxy, and says why", async () => {
      const error = await startReference(runtime, config(), ["--host", "0.0.0.0"]).then(() => "started", (e: Error) => e.message);
      expect(error).toMatch(/exited before listening[\s\S]*Deno[\s\S]*proxy/);
      const behind = await startReference(runtime, config(), ["--host", "0.0.0.0", "--trust-proxy", "127.0.0.1"]);
      await behind.stop();
    }, 30_000);
  } else {
    test("connections that send nothing, drip their headers or sit idle are closed", async () => {
      const server = await startReference(runtime, config());
      try {
        const host = new URL(server.url).host;
        const results = await Promise.all([
          stall(server.url, "", 25_000),
          stall(server.url, "GET /healthz HTTP/1.1\r\n", 25_000, { every: 1_000, text: "X-Slow: aaaa\r\n" }),
          stall(server.url, `GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`, 25_000),
        ]);
        for (const { closedAfter } of results) {
          expect(closedAfter).not.toBeNull();
          expect(closedAfter!).toBeLessThan(22_000);
        }
      } finally {
        await server.stop();
      }
    }, 40_000);
  }
});
