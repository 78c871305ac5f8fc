// Dynamic Client Registration (RFC 7591; issue 11 item 6): off by default; 201 echoing the metadata; a secret
// returned once and stored hashed; redirect URI rules; an initial access token; a per-address ceiling; reaping.
import { describe, expect, test } from "vitest";
import { Clock, ISSUER } from "../helpers.ts";
import { codeFlow, mcpFixture, post } from "../mcp_helpers.ts";
import type { AuthorizationServer } from "../../mod.ts";
import { memoryStorage } from "../../lib/storage/memory.ts";

const register = (server: { fetch: (r: Request) => Promise<Response> }, body: unknown, headers: Record<string, string> = {}) =>
  server.fetch(new Request(`${ISSUER}/register`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  }));

const PUBLIC = {
  client_name: "MCP Inspector",
  redirect_uris: ["http://127.0.0.1/callback"],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
  logo_uri: "https://inspector.example/logo.png",
  application_type: "native",
};

test("off by default: no endpoint, nothing in the metadata", async () => {
  const { server } = await mcpFixture();
  expect((await register(server, PUBLIC)).status).toBe(404);
  expect(server.metadata().registration_endpoint).toBeUndefined();
});

describe("enabled", () => {
  test("a public client: 201 echoing its metadata; it can then run the code flow", async () => {
    const { server, storage } = await mcpFixture({ registration: { enabled: true }, defaultScope: "read" });
    expect(server.metadata().registration_endpoint).toBe(`${ISSUER}/register`);
    const response = await register(server, PUBLIC);
    expect(response.status).toBe(201);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const body = await response.json() as Record<string, unknown>;
    expect(body).toMatchObject({ ...PUBLIC, scope: "read" });
    expect(body.client_secret).toBeUndefined();
    const stored = await storage.getClient(String(body.client_id));
    expect(stored).toMatchObject({ type: "public", origin: "registration" });
    const flow = await codeFlow(server, { client_id: String(body.client_id), redirect_uri: "http://127.0.0.1:33333/callback", scope: "read" });
    expect(flow.status).toBe(200);
    expect(flow.body.scope).toBe("read");
  });

  test("a confidential client: the secret is in the answer once and only its hash is stored", async () => {
    const { server, storage } = await mcpFixture({ defaultScope: "read", registration: { enabled: true } });
    const body = await (await register(server, { ...PUBLIC, token_endpoint_auth_method: "client_secret_post", scope: "read" })).json() as Record<string, string>;
    expect(body.client_secret).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(body.client_secret_expires_at).toBe(0);
    const stored = await storage.getClient(body.client_id!);
    expect(JSON.stringify(stored)).not.toContain(body.client_secret);
    const refused = await post(server, "/introspect", { token: "x", client_id: body.client_id!, client_secret: "wrong-secret-xxxxxxxxxx" });
    expect(refused.status).toBe(401);
    const accepted = await post(server, "/introspect", { token: "x", client_id: body.client_id!, client_secret: body.client_secret! });
    expect(accepted.status).toBe(200);
  });

  test.each([
    ["plain http off loopback", { redirect_uris: ["http://app.example/cb"] }, "invalid_redirect_uri"],
    ["a fragment", { redirect_uris: ["https://app.example/cb#x"] }, "invalid_redirect_uri"],
    ["javascript:", { redirect_uris: ["javascript:alert(1)"] }, "invalid_redirect_uri"],
    ["a scheme that is not a reverse domain", { redirect_uris: ["myapp:/cb"] }, "invalid_redirect_uri"],
    ["no redirect URI for the code flow", { redirect_uris: [] }, "invalid_redirect_uri"],
    ["an unknown auth method", { token_endpoint_auth_method: "private_key_jwt" }, "invalid_client_metadata"],
    ["an unknown grant", { grant_types: ["password"] }, "invalid_client_metadata"],
    ["client_credentials without a secret", { grant_types: ["client_credentials"], response_types: [] }, "invalid_client_metadata"],
    ["an unknown scope", { scope: "read root" }, "invalid_client_metadata"],
    ["a logo over http", { logo_uri: "http://inspector.example/logo.png" }, "invalid_client_metadata"],
  ])("refuses %s", async (_, change, error) => {
    const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true } });
    const response = await register(server, { ...PUBLIC, ...change });
    expect(response.status).toBe(400);
    expect((await response.json() as { error: string }).error).toBe(error);
  });

  test("accepts https, loopback and private-use scheme redirect URIs", async () => {
    const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true } });
    const uris = ["https://app.example/cb", "http://[::1]:8080/cb", "http://localhost/cb", "com.example.app:/oauth"];
    expect((await register(server, { ...PUBLIC, redirect_uris: uris })).status).toBe(201);
  });

  test("bad JSON or the wrong content type is invalid_client_metadata", async () => {
    const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true } });
    expect((await (await register(server, "{")).json() as { error: string }).error).toBe("invalid_client_metadata");
    const form = await server.fetch(new Request(`${ISSUER}/register`, { method: "POST", body: new URLSearchParams({ a: "b" }) }));
    expect(form.status).toBe(400);
  });

  test("with an initial access token, registering needs it", async () => {
    const token = "initial-access-token-0123456789";
    const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true, initialAccessToken: token } });
    expect((await register(server, PUBLIC)).status).toBe(401);
    expect((await register(server, PUBLIC, { authorization: "Bearer wrong-token-0123456789" })).status).toBe(401);
    expect((await register(server, PUBLIC, { authorization: `Bearer ${token}` })).status).toBe(201);
  });

  test("a per-address ceiling: past it, 429 with Retry-After", async () => {
    const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true, maxPerHour: 3 } });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await register(server, PUBLIC)).status);
    expect(statuses.slice(0, 3)).toEqual([201, 201, 201]);
    const blocked = await register(server, PUBLIC);
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  test("registered clients without live grants, unused for the configured days, are removed", async () => {
    const { server, clock, storage } = await mcpFixture({ defaultScope: "read", registration: { enabled: true, removeUnusedAfterDays: 2 }, lifetimes: { refreshToken: 5 * 24 * 3600 } });
    const idle = await (await register(server, PUBLIC)).json() as { client_id: string };
    const used = await (await register(server, PUBLIC)).json() as { client_id: string };
    clock.advance(36 * 3600);
    const flow = await codeFlow(server, { client_id: used.client_id, redirect_uri: "http://127.0.0.1:4000/callback", scope: "read" });
    expect(flow.status).toBe(200);
    clock.advance(36 * 3600);
    await register(server, PUBLIC); // reaping runs on a registration, at most hourly
    expect(await storage.getClient(idle.client_id)).toBeNull();
    // Unused for 3 days, but its refresh token lives 5 days from the authorization: kept.
    clock.advance(36 * 3600);
    await register(server, PUBLIC);
    expect(await storage.getClient(used.client_id)).not.toBeNull();
    expect((await post(server, "/token", { grant_type: "refresh_token", client_id: used.client_id, refresh_token: String(flow.body.refresh_token) })).status).toBe(200);
    // Past every grant's lifetime after the last use: removed, and its tokens die with it.
    clock.advance(6 * 24 * 3600);
    await register(server, PUBLIC);
    expect(await storage.getClient(used.client_id)).toBeNull();
    expect(await storage.getClient("cli")).not.toBeNull(); // configured clients are never reaped
  });
});

test("client_name and logo_uri are escaped on the consent page", async () => {
  const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true } });
  const body = await (await register(server, { ...PUBLIC, client_name: `"><script>alert(1)</script>` })).json() as { client_id: string };
  const page = await server.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams({
    response_type: "code", client_id: body.client_id, redirect_uri: "http://127.0.0.1:9/callback", scope: "read",
    code_challenge: "x".repeat(43), code_challenge_method: "S256",
  })}`));
  const html = await page.text();
  expect(html).not.toContain("<script>");
  expect(html).toContain("&lt;script&gt;");
});

describe("the edges of registration", () => {
  const PUBLIC = { client_name: "Tool", redirect_uris: ["http://127.0.0.1/callback"], token_endpoint_auth_method: "none" };

  const register = (server: AuthorizationServer, body: unknown = PUBLIC, headers: Record<string, string> = {}, address = "192.0.2.1") =>
    server.fetch(new Request(`${ISSUER}/register`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    }), { remoteAddr: { hostname: address } });

  describe("the per-address ceiling", () => {
    test("counts each address apart, and Retry-After says the seconds left", async () => {
      const { server, clock } = await mcpFixture({ defaultScope: "read", registration: { enabled: true, maxPerHour: 2 } });
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
      const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true } });
      const response = await register(server, PUBLIC, { "content-type": type });
      expect(response.status).toBe(status);
      if (status === 400) {
        expect(await response.json()).toEqual({ error: "invalid_client_metadata", error_description: expect.stringContaining("application/json") });
      }
    });

    test("a body that is not JSON is invalid_client_metadata that says so", async () => {
      const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true } });
      const response = await register(server, "{not json");
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: "invalid_client_metadata", error_description: expect.stringContaining("JSON") });
    });

    test("a body over the limit stays a 413, not a metadata error", async () => {
      const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true }, limits: { maxBodyBytes: 1024 } });
      const response = await register(server, { ...PUBLIC, client_name: "x".repeat(4096) });
      expect(response.status).toBe(413);
    });
  });

  test("a registration is an audit event that names the new client", async () => {
    const events: Record<string, unknown>[] = [];
    const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true }, onEvent: (event) => void events.push({ ...event }) });
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
        storage, clock: clock.read, defaultScope: "read",
        registration: { enabled: true, maxPerHour: 1000, ...(removeUnusedAfterDays === undefined ? {} : { removeUnusedAfterDays }) },
      });
      const id = async () => ((await (await register(server)).json()) as { client_id: string }).client_id;
      return { server, clock, storage, id, listings: () => listings };
    }

    // Each registration also reads the operator's client names, at most every 5 minutes (one listing).
    test("runs at most once an hour: a client that falls due in between waits for the next hour", async () => {
      const { clock, storage, id, listings } = await reaping(1);
      const due = await id(); // at 0, the first clean-up; `due` falls due at 24 h
      expect(listings()).toBe(2);
      clock.advance(DAY - 1800);
      await id(); // 23.5 h: a clean-up; nothing is due yet
      expect(listings()).toBe(4);
      clock.advance(1860); // 24 h + 1 min: `due` is due, but the last clean-up was 31 minutes ago
      await id();
      expect(listings()).toBe(5);
      expect(await storage.getClient(due)).not.toBeNull();
      clock.advance(3600 - 1860); // exactly an hour after the last clean-up
      await id();
      expect(listings()).toBe(7);
      expect(await storage.getClient(due)).toBeNull();
    });

    test("is not run at all when no idle time is configured", async () => {
      const { clock, storage, id, listings } = await reaping(undefined);
      const kept = await id();
      clock.advance(400 * DAY);
      await id();
      expect(listings()).toBe(2); // the names, twice; no clean-up
      expect(await storage.getClient(kept)).not.toBeNull();
    });

    test("a clean-up that fails is reported and the registration still succeeds", async () => {
      const clock = new Clock();
      const storage = memoryStorage({ clock: clock.read });
      storage.listClients = () => Promise.reject(new Error("store down"));
      const reported: [unknown, unknown][] = [];
      const { server } = await mcpFixture({
        storage, clock: clock.read, defaultScope: "read", registration: { enabled: true, removeUnusedAfterDays: 1 },
        onError: (error, where) => void reported.push([error, where]),
      });
      expect((await register(server)).status).toBe(201);
      expect(reported).toEqual([[new Error("store down"), { endpoint: "register", method: "POST", path: "/register" }]]);
    });
  });
});

describe("open registration admits only what a user approves", () => {
  const MACHINE = { client_name: "Exporter", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic", response_types: [] };

  test("client_credentials without the initial access token: invalid_client_metadata, nothing stored, no token", async () => {
    const { server, storage } = await mcpFixture({ defaultScope: "read", registration: { enabled: true } });
    const before = (await storage.listClients()).length;
    for (const grants of [["client_credentials"], ["authorization_code", "refresh_token", "client_credentials"]]) {
      const response = await register(server, { ...MACHINE, grant_types: grants, redirect_uris: ["https://app.example/cb"], scope: "read write admin" });
      expect(response.status).toBe(400);
      const body = await response.json() as { error: string; error_description: string };
      expect(body.error).toBe("invalid_client_metadata");
      expect(body.error_description).toContain("client_credentials");
    }
    expect((await storage.listClients()).length).toBe(before);
  });

  test("with the initial access token, or from an operator, client_credentials is admitted", async () => {
    const token = "initial-access-token-0123456789";
    const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true, initialAccessToken: token } });
    const response = await register(server, { ...MACHINE, scope: "export" }, { authorization: `Bearer ${token}` });
    expect(response.status).toBe(201);
    const { client_id, client_secret } = await response.json() as { client_id: string; client_secret: string };
    expect((await post(server, "/token", { grant_type: "client_credentials", client_id, client_secret, scope: "export" })).status).toBe(200);
    await expect(server.clients.register({ name: "Operator's job", type: "confidential", scopes: ["export"] })).resolves.toBeTruthy();
  });

  test("a client that asks for no scope gets the server's default scope, never every scope", async () => {
    const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true } });
    const body = await (await register(server, { ...PUBLIC, application_type: "native" })).json() as { client_id: string; scope: string };
    expect(body.scope).toBe("read");
    const flow = await codeFlow(server, { client_id: body.client_id, scope: "admin" });
    expect(flow.status).toBe(0); // refused: admin is not among its scopes
    expect(flow.authorize.headers.get("location")).toContain("error=invalid_scope");
  });

  test("without a server default scope, a registration must name its scopes", async () => {
    const { server } = await mcpFixture({ registration: { enabled: true } });
    const refused = await register(server, PUBLIC);
    expect([refused.status, (await refused.json() as { error: string }).error]).toEqual([400, "invalid_client_metadata"]);
    expect((await register(server, { ...PUBLIC, scope: "read write" })).status).toBe(201);
  });
});

describe("application_type (OpenID DCR §2; MCP 2026-07-28, SEP-837)", () => {
  const registered = async (body: Record<string, unknown>) => {
    const { server } = await mcpFixture({ defaultScope: "read", registration: { enabled: true } });
    const response = await register(server, { ...PUBLIC, ...body });
    return { status: response.status, body: await response.json() as Record<string, unknown>, server };
  };

  test.each([
    ["native", ["http://127.0.0.1/callback", "http://[::1]:8080/cb"]],
    ["native", ["com.example.app:/oauth"]],
    ["native", ["https://app.example/claimed"]],
    ["web", ["https://app.example/cb"]],
  ])("%s with %j is stored and echoed", async (type, uris) => {
    const { status, body, server } = await registered({ application_type: type, redirect_uris: uris });
    expect(status).toBe(201);
    expect(body.application_type).toBe(type);
    expect((await server.clients.get(String(body.client_id)))?.metadata?.application_type).toBe(type);
  });

  test.each([
    ["web", ["http://127.0.0.1/callback"]],
    ["web", ["http://localhost:3000/cb"]],
    ["web", ["https://localhost/cb"]],
    ["web", ["com.example.app:/oauth"]],
  ])("%s with %j is refused with invalid_redirect_uri", async (type, uris) => {
    const { status, body } = await registered({ application_type: type, redirect_uris: uris });
    expect([status, body.error]).toEqual([400, "invalid_redirect_uri"]);
    expect(String(body.error_description)).toContain("native");
  });

  test("an unknown type is invalid_client_metadata", async () => {
    const { status, body } = await registered({ application_type: "desktop" });
    expect([status, body.error]).toEqual([400, "invalid_client_metadata"]);
  });

  test("omitted: the type its redirect URIs imply, web when they allow it", async () => {
    const { application_type: _, ...withoutType } = PUBLIC;
    expect((await registered({ ...withoutType, application_type: undefined })).body.application_type).toBe("native");
    expect((await registered({ application_type: undefined, redirect_uris: ["https://app.example/cb"] })).body.application_type).toBe("web");
    expect((await registered({ application_type: undefined, redirect_uris: ["https://app.example/cb", "http://127.0.0.1/cb"] })).body.application_type).toBe("native");
  });

  test("shown on the consent page, with the unverified mark", async () => {
    const { body, server } = await registered({ application_type: "native" });
    const page = await server.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams({
      response_type: "code", client_id: String(body.client_id), redirect_uri: "http://127.0.0.1:9/callback", scope: "read",
      code_challenge: "x".repeat(43), code_challenge_method: "S256",
    })}`));
    const html = await page.text();
    expect(html).toContain("an app on your device");
    expect(html).toMatch(/MCP Inspector<\/span> <span class="tag">unverified<\/span>/);
  });
});
