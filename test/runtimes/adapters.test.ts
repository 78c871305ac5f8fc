// serveDeno under `deno test` and serveBun under `bun test`, over real HTTP on 127.0.0.1: the authorization
// server served as it is, the client address reaching it, a generic 500 for a throwing app, and a graceful
// close that lets a request in flight finish. Each block is skipped on the other runtimes (vitest on Node
// included: the Node adapter has its own tests in test/adapters/).
import { afterEach, describe, expect, test } from "vitest";
import { serveBun } from "../../lib/adapters/bun.ts";
import { serveDeno } from "../../lib/adapters/deno.ts";
import type { FetchApp } from "../../lib/adapters/fetch.ts";
import { fixture, SECRETS } from "../helpers.ts";

const g = globalThis as { Deno?: unknown; Bun?: unknown };
const runtime = g.Deno ? "deno" : g.Bun ? "bun" : "node";

interface Running {
  url: string;
  port: number;
  close(): Promise<void>;
}

const ADAPTERS: [string, (app: FetchApp, options: { port: number; signal?: AbortSignal; onError?: (e: unknown) => void }) => Promise<Running>][] = [
  ["deno", serveDeno],
  ["bun", serveBun],
];

const open = new Set<Running>();
afterEach(async () => {
  for (const running of open) await running.close();
  open.clear();
});

const delay = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Resolves true once the port refuses connections, false if it still answers after 2 s. */
async function refused(url: string): Promise<boolean> {
  for (let i = 0; i < 20; i++) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(1_000) }).then(async (r) => (await r.arrayBuffer(), true), () => false);
    if (!ok) return true;
    await delay(100);
  }
  return false;
}

for (const [name, serve] of ADAPTERS) {
  describe.skipIf(runtime !== name)(`serve${name === "deno" ? "Deno" : "Bun"} on ${name}`, () => {
    const start = async (app: FetchApp, options: { signal?: AbortSignal; onError?: (e: unknown) => void } = {}) => {
      const running = await serve(app, { port: 0, ...options });
      open.add(running);
      return running;
    };

    test("serves the authorization server as it is: client_credentials, then its token on protect()", async () => {
      const { server } = await fixture();
      const protectedApi = server.protect("export", (_request, token) => Response.json({ client: token.client_id }));
      const running = await start({
        fetch: (request, info) => new URL(request.url).pathname === "/api" ? protectedApi(request) : server.fetch(request, info),
      });
      expect(running.url).toBe(`http://127.0.0.1:${running.port}`);
      const response = await fetch(`${running.url}/index.php?module=OAuth2&action=token`, {
        method: "POST",
        headers: { authorization: `Basic ${btoa(`backend:${SECRETS.backend}`)}` },
        body: new URLSearchParams({ grant_type: "client_credentials", scope: "export" }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toBe("no-store");
      const { access_token } = await response.json() as { access_token: string };
      const api = await fetch(`${running.url}/api`, { headers: { authorization: `Bearer ${access_token}` } });
      expect(await api.json()).toEqual({ client: "backend" });
    }, 20_000);

    test("passes the runtime's second argument on, so the server can read the client's address", async () => {
      let address: string | undefined;
      const running = await start({
        fetch: (request, info) => {
          // Read during the request: Deno's info is only valid while the request is open.
          address = name === "deno"
            ? (info as { remoteAddr: { hostname: string } }).remoteAddr.hostname
            : (info as { requestIP(r: Request): { address: string } | null }).requestIP(request)?.address;
          return new Response("ok");
        },
      });
      await (await fetch(running.url)).text();
      expect(address).toMatch(/^(127\.0\.0\.1|::ffff:127\.0\.0\.1)$/);
    }, 20_000);

    test("an app that throws gets a generic 500 server_error, and onError gets the error", async () => {
      const errors: unknown[] = [];
      const running = await start({
        fetch: () => {
          throw new Error("secret detail");
        },
      }, { onError: (error) => errors.push(error) });
      const response = await fetch(running.url);
      expect(response.status).toBe(500);
      const body = await response.text();
      expect(JSON.parse(body)).toEqual({ error: "server_error" });
      expect(body).not.toContain("secret detail");
      expect(errors).toHaveLength(1);
      expect((errors[0] as Error).message).toBe("secret detail");
    }, 20_000);

    test("close() lets a request in flight finish, then the port refuses connections; twice is fine", async () => {
      let arrived!: () => void;
      const inFlight = new Promise<void>((done) => (arrived = done));
      const running = await start({
        fetch: async () => {
          arrived();
          await delay(300);
          return new Response("finished");
        },
      });
      const pending = fetch(running.url).then(async (r) => [r.status, await r.text()]);
      await inFlight;
      const closing = running.close();
      expect(running.close()).toBe(closing);
      expect(await pending).toEqual([200, "finished"]);
      await closing;
      expect(await refused(running.url)).toBe(true);
    }, 20_000);

    test("an aborted signal closes the server", async () => {
      const controller = new AbortController();
      const running = await start({ fetch: () => new Response("ok") }, { signal: controller.signal });
      expect((await fetch(running.url)).status).toBe(200);
      controller.abort();
      expect(await refused(running.url)).toBe(true);
    }, 20_000);
  });
}

test.skipIf(runtime === "node")("on the other runtime, its serve helper refuses with a clear message", async () => {
  const other = ADAPTERS.find(([name]) => name !== runtime)!;
  await expect(other[1]({ fetch: () => new Response() }, { port: 0 })).rejects.toThrow(`needs the ${other[0] === "deno" ? "Deno" : "Bun"} runtime`);
});
