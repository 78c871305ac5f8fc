// Item 9 of issue 15: trusted proxies. The client's address comes from X-Forwarded-For / Forwarded only when the
// socket's peer is a trusted proxy, and then it is the rightmost address that is not a trusted proxy.
import { describe, expect, test } from "vitest";
import { ConfigurationError, createAuthorizationServer } from "../mod.ts";
import { memoryThrottle } from "../lib/throttle.ts";
import { trustedProxies } from "../lib/proxy.ts";
import { fixture, SECRETS, TOKEN_URL } from "./helpers.ts";

const attempt = (server: Awaited<ReturnType<typeof fixture>>["server"], secret: string, peer: string, headers: Record<string, string> = {}) =>
  server.fetch(new Request(TOKEN_URL, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: "backend", client_secret: secret, scope: "export" }),
  }), { remoteAddr: { hostname: peer } });

describe("behind a trusted proxy", () => {
  test("one attacker's failures do not lock out other clients of the same proxy", async () => {
    const { server } = await fixture({ trustProxy: ["10.0.0.0/8"], throttle: memoryThrottle({ maxFailures: 5 }) });
    for (let i = 0; i < 20; i++) await attempt(server, `wrong-${i}-0123456789`, "10.1.2.3", { "x-forwarded-for": "203.0.113.9" });
    expect((await attempt(server, SECRETS.backend, "10.1.2.3", { "x-forwarded-for": "203.0.113.9" })).status).toBe(429);
    expect((await attempt(server, SECRETS.backend, "10.1.2.3", { "x-forwarded-for": "198.51.100.7" })).status).toBe(200);
    // The same through a second proxy hop, and with RFC 7239 Forwarded.
    expect((await attempt(server, SECRETS.backend, "10.1.2.3", { "x-forwarded-for": "198.51.100.8, 10.9.9.9" })).status).toBe(200);
    expect((await attempt(server, SECRETS.backend, "10.1.2.3", { forwarded: 'for="[2001:db8::7]:4711";proto=https' })).status).toBe(200);
  });

  test("an address the attacker writes left of its own is never read", async () => {
    const { server } = await fixture({ trustProxy: ["10.0.0.0/8"], throttle: memoryThrottle({ maxFailures: 5 }) });
    for (let i = 0; i < 20; i++) {
      await attempt(server, `wrong-${i}-0123456789`, "10.1.2.3", { "x-forwarded-for": `192.0.2.${i}, 203.0.113.9` });
    }
    expect((await attempt(server, SECRETS.backend, "10.1.2.3", { "x-forwarded-for": "192.0.2.200, 203.0.113.9" })).status).toBe(429);
  });

  test("from an untrusted peer the headers are ignored: rotating X-Forwarded-For does not escape the throttle", async () => {
    const { server } = await fixture({ trustProxy: ["10.0.0.0/8"], throttle: memoryThrottle({ maxFailures: 5 }) });
    for (let i = 0; i < 20; i++) await attempt(server, `wrong-${i}-0123456789`, "203.0.113.9", { "x-forwarded-for": `198.51.100.${i}` });
    expect((await attempt(server, SECRETS.backend, "203.0.113.9", { "x-forwarded-for": "198.51.100.77" })).status).toBe(429);
  });

  test("without trustProxy every client of a proxy shares its throttle, as before", async () => {
    const { server } = await fixture({ throttle: memoryThrottle({ maxFailures: 5 }) });
    for (let i = 0; i < 20; i++) await attempt(server, `wrong-${i}-0123456789`, "10.1.2.3", { "x-forwarded-for": "203.0.113.9" });
    expect((await attempt(server, SECRETS.backend, "10.1.2.3", { "x-forwarded-for": "198.51.100.7" })).status).toBe(429);
  });
});

describe("trustedProxies", () => {
  const resolve = trustedProxies(["10.0.0.0/8", "2001:db8:1::/48", "127.0.0.1"]);
  const headers = (values: Record<string, string>) => (name: string) => values[name] ?? null;
  test.each([
    ["203.0.113.1", { "x-forwarded-for": "1.2.3.4" }, "203.0.113.1"],
    ["10.0.0.1", { "x-forwarded-for": "1.2.3.4" }, "1.2.3.4"],
    ["::ffff:10.0.0.1", { "x-forwarded-for": "1.2.3.4" }, "1.2.3.4"],
    ["10.0.0.1", { "x-forwarded-for": "1.2.3.4, 10.2.2.2, 127.0.0.1" }, "1.2.3.4"],
    ["10.0.0.1", { "x-forwarded-for": "10.2.2.2" }, "10.2.2.2"],
    ["10.0.0.1", {}, "10.0.0.1"],
    ["10.0.0.1", { "x-forwarded-for": "garbage" }, "10.0.0.1"],
    ["10.0.0.1", { "x-forwarded-for": "1.2.3.4, not-an-ip" }, "10.0.0.1"],
    ["2001:db8:1:ff::1", { forwarded: 'for=192.0.2.60;proto=http, for="[2001:db8:cafe::17]:4711"' }, "2001:db8:cafe::17"],
    ["2001:db8:2::1", { "x-forwarded-for": "1.2.3.4" }, "2001:db8:2::1"],
    ["10.0.0.1", { "x-forwarded-for": "1.2.3.4", forwarded: "for=5.6.7.8" }, "1.2.3.4"],
  ])("peer %s with %j is %s", (peer, values, expected) => {
    expect(resolve(peer, headers(values))).toBe(expected);
  });

  test("bad entries are refused at start, naming the value", () => {
    expect(() => createAuthorizationServer({ issuer: "https://a.example", scopes: { r: "R" }, trustProxy: ["10.0.0.0/33"] })).toThrow(ConfigurationError);
    expect(() => createAuthorizationServer({ issuer: "https://a.example", scopes: { r: "R" }, trustProxy: ["proxy.local"] })).toThrow(/"proxy.local"/);
  });
});
