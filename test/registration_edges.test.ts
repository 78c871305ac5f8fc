// Edges of the registration endpoint (RFC 7591) found by mutation testing (item 12 of issue 15): the per-address
// ceiling, the media type, bodies that are not JSON, its audit event, and the hourly clean-up. Through the
// handler only, so the same file runs under vitest, bun test and deno test.
import { describe, expect, test } from "vitest";
import type { AuthorizationServer } from "../mod.ts";
import { Clock, ISSUER } from "./helpers.ts";
import { mcpFixture } from "./mcp_helpers.ts";
import { memoryStorage } from "../lib/storage/memory.ts";

const PUBLIC = { client_name: "Tool", redirect_uris: ["http://127.0.0.1/callback"], token_endpoint_auth_method: "none" };
const register = (server: AuthorizationServer, body: unknown = PUBLIC, headers: Record<string, string> = {}, address = "192.0.2.1") =>
  server.fetch(new Request(`${ISSUER}/register`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  }), { remoteAddr: { hostname: address } });

describe("the per-address ceiling", () => {
  test("counts each address apart, and Retry-After says the seconds left", async () => {
    const { server, clock } = await mcpFixture({ registration: { enabled: true, maxPerHour: 2 } });
    expect((await register(server)).status).toBe(201);
    expect((await register(server)).status).toBe(201);
    const blocked = await register(server);
    expect(blocked.status).toBe(429);
    expect(blocked.headers.get("retry-after")).toBe("600");
    expect((await register(server, PUBLIC, {}, "192.0.2.2")).status, "another address").toBe(201);
    clock.advance(100.5);
    expect((await register(server)).headers.get("retry-after")).toBe("500");
  });
});

describe("the body", () => {
  test.each([
    ["text/plain", 400],
    ["x-application/json", 400],
    ["application/jsonx", 400],
    ["application/json", 201],
    ["Application/JSON; charset=utf-8", 201],
    ["application/json ; charset=utf-8", 201],
  ])("Content-Type %s: %i", async (type, status) => {
    const { server } = await mcpFixture({ registration: { enabled: true } });
    const response = await register(server, PUBLIC, { "content-type": type });
    expect(response.status).toBe(status);
    if (status === 400) {
      expect(await response.json()).toEqual({ error: "invalid_client_metadata", error_description: expect.stringContaining("application/json") });
    }
  });

  test("a body that is not JSON is invalid_client_metadata that says so", async () => {
    const { server } = await mcpFixture({ registration: { enabled: true } });
    const response = await register(server, "{not json");
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: "invalid_client_metadata", error_description: expect.stringContaining("JSON") });
  });

  test("a body over the limit stays a 413, not a metadata error", async () => {
    const { server } = await mcpFixture({ registration: { enabled: true }, limits: { maxBodyBytes: 1024 } });
    const response = await register(server, { ...PUBLIC, client_name: "x".repeat(4096) });
    expect(response.status).toBe(413);
  });
});

test("a registration is an audit event that names the new client", async () => {
  const events: Record<string, unknown>[] = [];
  const { server } = await mcpFixture({ registration: { enabled: true }, onEvent: (event) => void events.push({ ...event }) });
  const { client_id } = await (await register(server)).json() as { client_id: string };
  expect(events.filter((e) => e.type === "client.registered" && e.client_id === client_id)).toEqual([
    expect.objectContaining({ type: "client.registered", client_id, reason: "registration", address: "192.0.2.1" }),
  ]);
});

describe("the clean-up of unused registered clients", () => {
  const DAY = 24 * 3600;
  /** A registration server that removes clients unused for a day, on a store that counts its full listings. */
  async function reaping(removeUnusedAfterDays: number | undefined) {
    const clock = new Clock();
    const storage = memoryStorage({ clock: clock.read });
    let listings = 0;
    const { listClients } = storage;
    storage.listClients = () => (listings++, listClients.call(storage));
    const { server } = await mcpFixture({
      storage, clock: clock.read,
      registration: { enabled: true, maxPerHour: 1000, ...(removeUnusedAfterDays === undefined ? {} : { removeUnusedAfterDays }) },
    });
    const id = async () => ((await (await register(server)).json()) as { client_id: string }).client_id;
    return { server, clock, storage, id, listings: () => listings };
  }

  test("runs at most once an hour: a client that falls due in between waits for the next hour", async () => {
    const { clock, storage, id, listings } = await reaping(1);
    const due = await id(); // at 0, the first clean-up; `due` falls due at 24 h
    expect(listings()).toBe(1);
    clock.advance(DAY - 1800);
    await id(); // 23.5 h: a clean-up; nothing is due yet
    expect(listings()).toBe(2);
    clock.advance(1860); // 24 h + 1 min: `due` is due, but the last clean-up was 31 minutes ago
    await id();
    expect(listings()).toBe(2);
    expect(await storage.getClient(due)).not.toBeNull();
    clock.advance(3600 - 1860); // exactly an hour after the last clean-up
    await id();
    expect(listings()).toBe(3);
    expect(await storage.getClient(due)).toBeNull();
  });

  test("is not run at all when no idle time is configured", async () => {
    const { clock, id, listings } = await reaping(undefined);
    await id();
    clock.advance(400 * DAY);
    await id();
    expect(listings()).toBe(0);
  });

  test("a clean-up that fails is reported and the registration still succeeds", async () => {
    const clock = new Clock();
    const storage = memoryStorage({ clock: clock.read });
    storage.listClients = () => Promise.reject(new Error("store down"));
    const reported: [unknown, unknown][] = [];
    const { server } = await mcpFixture({
      storage, clock: clock.read, registration: { enabled: true, removeUnusedAfterDays: 1 },
      onError: (error, where) => void reported.push([error, where]),
    });
    expect((await register(server)).status).toBe(201);
    expect(reported).toEqual([[new Error("store down"), { endpoint: "register", method: "POST", path: "/register" }]]);
  });
});
