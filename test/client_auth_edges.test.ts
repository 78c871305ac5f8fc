// Client authentication edges that mutation testing (issue 15 item 12) showed no test held: each test here fails
// when its rule is removed from lib/client_auth. Through `server.fetch` only, so vitest, bun and deno run it.
import { describe, expect, test } from "vitest";
import type { AuditEvent } from "../mod.ts";
import type { Throttle } from "../lib/throttle.ts";
import { basic } from "./token_helpers.ts";
import { errorOf, fixture, ISSUER, SECRETS, spaTokens, TOKEN_URL } from "./helpers.ts";

/** A token request, optionally from a socket peer (the `info` Deno.serve passes). */
const post = (server: Awaited<ReturnType<typeof fixture>>["server"], fields: Record<string, string>, headers: Record<string, string> = {}, peer?: string) =>
  server.fetch(new Request(TOKEN_URL, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  }), peer === undefined ? undefined : { remoteAddr: { hostname: peer } });

/** A throttle that blocks nothing and records the keys of each failure. */
function recording(): Throttle & { failed: string[] } {
  const failed: string[] = [];
  return { failed, retryAfter: () => 0, fail: (key) => void failed.push(key) };
}

const CC = { grant_type: "client_credentials", scope: "export" } as const;

describe("the dummy hash (an unknown client_id costs what a wrong secret costs)", () => {
  // A secret so long that hashing it dominates the request: without the dummy hash, an unknown client_id is
  // answered before any hashing, and the difference is a timing oracle that tells which client_ids exist.
  test("an unknown client_id with a long secret takes about as long as a known one with a wrong secret", async () => {
    const { server } = await fixture();
    const secret = "s".repeat(1_500_000);
    const headers = { backend: basic("backend", secret), nobody: basic("nobody", secret) };
    // Built before the clock starts, so only the server's work is timed.
    const requests = (clientId: keyof typeof headers) => Array.from({ length: 5 }, () => new Request(TOKEN_URL, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: headers[clientId] },
      body: new URLSearchParams(CC).toString(),
    }));
    const time = async (request: Request): Promise<number> => {
      const start = performance.now();
      const response = await server.fetch(request);
      const elapsed = performance.now() - start;
      expect(response.status).toBe(401);
      return elapsed;
    };
    for (const request of requests("backend")) await time(request); // warm-up
    // Known and unknown alternate, and each side keeps its fastest of five: a pause of the machine's other work
    // slows both sides alike and never decides it.
    const [knownBatch, unknownBatch] = [requests("backend"), requests("nobody")];
    let known = Infinity;
    let unknown = Infinity;
    for (let i = 0; i < knownBatch.length; i++) {
      known = Math.min(known, await time(knownBatch[i]!));
      unknown = Math.min(unknown, await time(unknownBatch[i]!));
    }
    expect(unknown).toBeGreaterThan(known / 2);
  });
});

describe("malformed Basic credentials are not a failed authentication", () => {
  test.each([
    ["no colon", `Basic ${btoa("backend")}`],
    ["a bad percent-escape in the id", `Basic ${btoa("back%zzend:secret")}`],
    ["a bad percent-escape in the secret", `Basic ${btoa("backend:sec%zz")}`],
  ])("%s: invalid_client saying the header is malformed, and the throttle counts nothing", async (_, authorization) => {
    const throttle = recording();
    const { server } = await fixture({ throttle });
    const response = await post(server, { ...CC }, { authorization });
    expect(response.headers.get("www-authenticate")).toMatch(/^Basic /);
    expect(await errorOf(response)).toEqual({ status: 401, error: "invalid_client", description: "The Authorization header is malformed" });
    expect(throttle.failed).toEqual([]);
  });

  test("a wrong secret is counted, and says so", async () => {
    const throttle = recording();
    const { server } = await fixture({ throttle });
    const response = await post(server, { ...CC }, { authorization: basic("backend", "wrong-secret-0123456789") });
    expect(await errorOf(response)).toEqual({ status: 401, error: "invalid_client", description: "Client authentication failed" });
    expect(throttle.failed).toHaveLength(1);
  });
});

describe("which credentials a request carries", () => {
  test.each(["Bearer abc", "Digest basic realm=x", "Negotiate YmFzaWMgeDp5"])(
    "an Authorization header of another scheme (%s) is not Basic: the body's credentials count",
    async (authorization) => {
      const { server } = await fixture();
      const response = await post(server, { ...CC, client_id: "backend", client_secret: SECRETS.backend }, { authorization });
      expect(response.status).toBe(200);
    },
  );

  test.each([
    ["no credentials at all", {}],
    ["a client_secret without client_id", { client_secret: SECRETS.backend }],
  ])("%s: invalid_request, the client_id parameter is required", async (_, fields) => {
    const { server } = await fixture();
    expect(await errorOf(await post(server, { ...CC, ...fields }))).toEqual({ status: 400, error: "invalid_request", description: "The client_id parameter is required" });
  });

  test("Basic with another client_id in the body: invalid_request saying so", async () => {
    const { server } = await fixture();
    const response = await post(server, { ...CC, client_id: "backend-refresh" }, { authorization: basic("backend", SECRETS.backend) });
    expect(await errorOf(response)).toEqual({ status: 400, error: "invalid_request", description: "client_id differs from the Authorization header" });
  });

  test("a confidential client stored without a secret hash (a broken or migrated record) never authenticates", async () => {
    const { server } = await fixture();
    const record = (await server.clients.get("backend"))!;
    delete record.secret_hash;
    await server.storage.saveClient(record);
    for (const secret of [SECRETS.backend, ""]) {
      expect(await errorOf(await post(server, { ...CC }, { authorization: basic("backend", secret) }))).toMatchObject({ status: 401, error: "invalid_client" });
    }
  });
});

describe("the throttle's keys and its audit event", () => {
  test("a failure from a known address counts against the address and the client there; without one, the client", async () => {
    const throttle = recording();
    const { server } = await fixture({ throttle });
    await post(server, { ...CC }, { authorization: basic("backend", "wrong-secret-0123456789") }, "192.0.2.7");
    await post(server, { ...CC }, { authorization: basic("backend", "wrong-secret-0123456789") });
    expect(throttle.failed.map((key) => key.split(":")[0])).toEqual(["addr", "client", "client"]);
    // Each key is its own: the client's key from an address is not its key without one.
    expect(new Set(throttle.failed).size).toBe(3);
    // Hashed, never the raw client_id or address (finding 5 of issue 15).
    for (const key of throttle.failed) expect(key).not.toMatch(/backend|192\.0\.2\.7/);
  });

  test("a throttled request is reported with its client_id (at most 255 characters) and the reason", async () => {
    const events: AuditEvent[] = [];
    const blocked: Throttle = { retryAfter: () => 1000, fail: () => {} };
    const { server } = await fixture({ throttle: blocked, onEvent: (event) => events.push(event) });
    const long = "c".repeat(300);
    expect((await post(server, { ...CC, client_id: long, client_secret: "x" }, {}, "192.0.2.7")).status).toBe(429);
    expect(events.filter((e) => e.type === "request.throttled")).toEqual([
      { type: "request.throttled", time: expect.any(Number), client_id: "c".repeat(255), reason: "client_auth", address: "192.0.2.7" },
    ]);
  });
});

test("a public client cannot introspect, even its own token: introspection needs a secret", async () => {
  const { server } = await fixture();
  const { access_token } = await spaTokens(server);
  const response = await server.fetch(new Request(`${ISSUER}/introspect`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ client_id: "spa", token: access_token }).toString(),
  }));
  expect(await errorOf(response)).toMatchObject({ status: 401, error: "invalid_client" });
});
