// Client authentication (RFC 6749 §2.3): one method per request, each method's own check, and the throttle.
import { describe, expect, test } from "vitest";
import {
  errorOf, fixture, type Fixture, ISSUER, postToken, REDIRECT, SECRETS, spaTokens, TOKEN_URL, webCode,
} from "../helpers.ts";
import { basic, expectError, expectTokens, failure, formEncode, token } from "../token_helpers.ts";
import type { AuditEvent } from "../../mod.ts";
import type { Throttle } from "../../lib/throttle.ts";
import { createAuthorizationServer } from "../../mod.ts";

const CC = { grant_type: "client_credentials", scope: "export" } as const;

const BACKEND = { client_id: "backend", scope: "export", refresh: false };

const DENIED = failure(401, "invalid_client", true);

const BAD_REQUEST = failure(400, "invalid_request");

describe("HTTP Basic (RFC 6749 §2.3.1)", () => {
  test("backend: client_credentials with Basic and no client_id or client_secret in the body", async () => {
    const f = await fixture();
    await expectTokens(f.server, await token(f.server, { ...CC }, { authorization: basic("backend", SECRETS.backend) }), BACKEND);
  });

  test("web: code exchange and refresh with Basic", async () => {
    const f = await fixture();
    const auth = { authorization: basic("web", SECRETS.web) };
    const code = await webCode(f.server);
    const issued = await expectTokens(f.server, await token(f.server, { grant_type: "authorization_code", redirect_uri: REDIRECT, code }, auth),
      { client_id: "web", scope: "read", refresh: true });
    await expectTokens(f.server, await token(f.server, { grant_type: "refresh_token", refresh_token: issued.refresh_token! }, auth),
      { client_id: "web", scope: "read", refresh: true });
  });

  test("Basic plus the same client_id in the body is accepted", async () => {
    const f = await fixture();
    await expectTokens(f.server, await token(f.server, { ...CC, client_id: "backend" }, { authorization: basic("backend", SECRETS.backend) }), BACKEND);
  });

  test("the scheme name is case-insensitive (RFC 9110 §11.1)", async () => {
    const f = await fixture();
    for (const scheme of ["basic", "BASIC"]) {
      const authorization = basic("backend", SECRETS.backend).replace(/^Basic/, scheme);
      await expectTokens(f.server, await token(f.server, { ...CC }, { authorization }), BACKEND, scheme);
    }
  });

  // RFC 6749 §2.3.1: "The client identifier is encoded using the application/x-www-form-urlencoded encoding
  // algorithm per Appendix B, and the encoded value is used as the username; the client password is encoded
  // using the same algorithm and used as the password."
  const SPECIAL_SECRET = "p%25 + : x%zz/é&=0123456789";

  async function registerSpecial(f: Fixture, clientId: string): Promise<void> {
    await f.server.clients.register({
      client_id: clientId, client_secret: SPECIAL_SECRET, name: "Special", type: "confidential",
      scopes: ["export"], grant_types: ["client_credentials"],
    });
  }

  test("an id and secret that need form-urlencoding (':', '+', '%', space, non-ASCII) work with Basic and in the body", async () => {
    const f = await fixture();
    const id = "a:b+c%20d";
    await registerSpecial(f, id);
    expect(formEncode(id)).toBe("a%3Ab%2Bc%2520d");
    const expected = { client_id: id, scope: "export", refresh: false };
    await expectTokens(f.server, await token(f.server, { ...CC }, { authorization: basic(id, SPECIAL_SECRET) }), expected, "Basic:");
    await expectTokens(f.server, await token(f.server, { ...CC, client_id: id, client_secret: SPECIAL_SECRET }), expected, "body:");
    // The same credentials not urlencoded first are a different id and password, so they fail.
    await expectError(await token(f.server, { ...CC }, { authorization: `Basic ${btoa(String.fromCharCode(...new TextEncoder().encode(`${id}:${SPECIAL_SECRET}`)))}` }), DENIED);
  });

  // RFC 6749 Appendix A.1: client-id = *VSCHAR, VSCHAR = %x20-7E, so a space is a legal client_id character,
  // and §2.3.1 says how to carry it in Basic (form-urlencoded: "a%3Ab+c"). lib/clients.ts refuses it at
  // registration (CLIENT_ID = /^[\x21-\x7e]{1,255}$/), so such a client can never authenticate.
  test("a client_id with a space ('a:b c', RFC 6749 A.1 VSCHAR) can register and authenticate with Basic", async () => {
    const f = await fixture();
    await registerSpecial(f, "a:b c");
    expect(atob(basic("a:b c", "x").slice("Basic ".length))).toBe("a%3Ab+c:x");
    await expectTokens(f.server, await token(f.server, { ...CC }, { authorization: basic("a:b c", SPECIAL_SECRET) }),
      { client_id: "a:b c", scope: "export", refresh: false });
  });

  test("Basic plus client_secret in the body (two methods, RFC 6749 §2.3) → 400 invalid_request", async () => {
    const f = await fixture();
    const auth = { authorization: basic("backend", SECRETS.backend) };
    await expectError(await token(f.server, { ...CC, client_secret: SECRETS.backend }, auth), BAD_REQUEST);
    await expectError(await token(f.server, { ...CC, client_id: "backend", client_secret: SECRETS.backend }, auth), BAD_REQUEST);
  });

  test("Basic with a different client_id in the body → 400 invalid_request", async () => {
    const f = await fixture();
    await expectError(await token(f.server, { ...CC, client_id: "backend-refresh" }, { authorization: basic("backend", SECRETS.backend) }), BAD_REQUEST);
  });

  const malformed: [string, string][] = [
    ["not base64", "Basic !!!not-base64!!!"],
    ["no colon", `Basic ${btoa(`backend${SECRETS.backend}`)}`],
    ["an empty client_id", `Basic ${btoa(`:${SECRETS.backend}`)}`],
    ["a bad percent-escape", `Basic ${btoa(`backend:${SECRETS.backend}%zz`)}`],
    ["no credentials after the scheme", "Basic ="],
  ];
  for (const [what, authorization] of malformed) {
    test(`malformed Basic (${what}) → 401 invalid_client with WWW-Authenticate: Basic`, async () => {
      const f = await fixture();
      await expectError(await token(f.server, { ...CC }, { authorization }), DENIED);
    });
  }
});

describe("failed authentication", () => {
  test("wrong secret → 401 invalid_client + WWW-Authenticate: Basic, in the body and with Basic", async () => {
    const f = await fixture();
    await expectError(await token(f.server, { ...CC, client_id: "backend", client_secret: "wrong-secret-0123456789" }), DENIED, "body:");
    await expectError(await token(f.server, { ...CC }, { authorization: basic("backend", "wrong-secret-0123456789") }), DENIED, "Basic:");
    // Another client's (valid) secret is a wrong secret too.
    await expectError(await token(f.server, { ...CC, client_id: "backend", client_secret: SECRETS.backendRefresh }), DENIED, "other's secret:");
  });

  test("a secret that differs only in case or by a trailing character → 401", async () => {
    const f = await fixture();
    for (const secret of [SECRETS.backend.toUpperCase(), `${SECRETS.backend}x`, SECRETS.backend.slice(0, -1)]) {
      await expectError(await token(f.server, { ...CC, client_id: "backend", client_secret: secret }), DENIED, secret);
    }
  });

  test("unknown client → 401 invalid_client, in the body and with Basic", async () => {
    const f = await fixture();
    await expectError(await token(f.server, { ...CC, client_id: "nobody", client_secret: "some-secret-0123456789" }), DENIED, "body:");
    await expectError(await token(f.server, { ...CC }, { authorization: basic("nobody", "some-secret-0123456789") }), DENIED, "Basic:");
    await expectError(await token(f.server, { grant_type: "refresh_token", client_id: "nobody", refresh_token: "x" }), DENIED, "no secret:");
  });

  test("a public client presenting any secret (body or Basic) → 401 invalid_client, and its refresh token is not spent", async () => {
    const f = await fixture();
    const { refresh_token } = await spaTokens(f.server);
    const fields = { grant_type: "refresh_token", refresh_token };
    await expectError(await token(f.server, { ...fields, client_id: "spa", client_secret: "x" }), DENIED, "body:");
    await expectError(await token(f.server, fields, { authorization: basic("spa", "") }), DENIED, "Basic, empty password:");
    await expectError(await token(f.server, fields, { authorization: basic("spa", "anything") }), DENIED, "Basic:");
    await expectTokens(f.server, await token(f.server, { ...fields, client_id: "spa" }), { client_id: "spa", scope: "read", refresh: true });
  });

  test("a paused client with Basic → 401 invalid_client", async () => {
    const f = await fixture();
    await f.server.clients.pause("backend");
    await expectError(await token(f.server, { ...CC }, { authorization: basic("backend", SECRETS.backend) }), DENIED);
  });

  test("error responses never contain the presented secret (plain, form-encoded or base64)", async () => {
    const f = await fixture();
    const secret = "Sup3r+Secret/Value:0123456789%";
    const forms: string[] = [secret, formEncode(secret), encodeURIComponent(secret), btoa(`backend:${formEncode(secret)}`), btoa(secret)];
    const tries: [string, Record<string, string>, Record<string, string>][] = [
      ["wrong secret, body", { ...CC, client_id: "backend", client_secret: secret }, {}],
      ["wrong secret, Basic", { ...CC }, { authorization: basic("backend", secret) }],
      ["unknown client, body", { ...CC, client_id: "nobody", client_secret: secret }, {}],
      ["unknown client, Basic", { ...CC }, { authorization: basic("nobody", secret) }],
      ["Basic and body secret", { ...CC, client_secret: secret }, { authorization: basic("backend", secret) }],
      ["public client with secret", { grant_type: "refresh_token", refresh_token: "x", client_id: "spa", client_secret: secret }, {}],
      ["malformed Basic", { ...CC }, { authorization: `Basic ${btoa(secret)}` }],
      ["unauthorized grant", { grant_type: "client_credentials", client_id: "web", client_secret: secret, scope: "read" }, {}],
      ["bad scope", { ...CC, scope: secret, client_id: "backend", client_secret: SECRETS.backend }, {}],
    ];
    for (const [what, fields, headers] of tries) {
      const response = await token(f.server, fields, headers);
      expect(response.status, what).toBeGreaterThanOrEqual(400);
      const text = await response.text();
      const head = [...response.headers].map(([name, value]) => `${name}: ${value}`).join("\n");
      for (const form of forms) {
        expect(text.includes(form), `${what}: body ${text} holds the secret`).toBe(false);
        expect(head.includes(form), `${what}: headers hold the secret`).toBe(false);
      }
    }
    expect(JSON.stringify(f.errors.map(String))).not.toContain(secret);
  });
});

describe("the edges of client authentication", () => {
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
});

describe("an unknown client_id with a secret is refused like a wrong secret", () => {
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

  test("an unknown client_id with a secret is refused like a wrong secret", async () => {
    const server = createAuthorizationServer({ issuer: ISSUER, scopes: { read: "Read" } });
    const response = await postToken(server, { grant_type: "client_credentials" }, basic("nobody", "some-secret-0123456789"));
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toMatch(/^Basic /);
  });
});

describe("throttle keys have a fixed size", () => {
  test("an 11 KiB client_id reaches the throttle as a key of at most 64 characters", async () => {
    const keys: string[] = [];
    const recording: Throttle = { retryAfter: (key) => (keys.push(key), 0), fail: (key) => void keys.push(key) };
    const { server } = await fixture({ throttle: recording });
    const response = await server.fetch(new Request("https://auth.example.com/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${"x".repeat(11 * 1024)}:wrong`)}` },
      body: "grant_type=client_credentials",
    }), { remoteAddr: { hostname: "2001:db8::1" } });
    expect(response.status).toBe(401);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key.length).toBeLessThanOrEqual(64);
  });
});
