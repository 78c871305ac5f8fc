// Item 13 of issue 15: the fuzz properties extended to the endpoints added in round 2: dynamic registration
// (RFC 7591), introspection's own-token policy (RFC 7662), and a protected resource's metadata and guard
// (RFC 9728, RFC 6750). Through `fetch` only. The properties: never a 5xx or an internal detail; registration
// errors are RFC 7591 JSON and a 201 holds only checked metadata; introspection never describes another
// client's token to a client without `introspection: "all"`; the resource guard passes only a live token.
import fc from "fast-check";
import { expect, test } from "vitest";
import { localTokenVerifier, protectedResource } from "../../mod.ts";
import { looksAlike } from "../../lib/core/names.ts";
import { fixture, ISSUER, SECRETS, spaTokens } from "../helpers.ts";
import { envInt } from "./support.ts";

const RUNS = Math.max(50, Math.round(envInt("FUZZ_RUNS", 20_480) / 40));
const STACK = /\n\s+at |TypeError|ReferenceError|node_modules|\.ts:\d+/;

const jsonValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 4 }),
  fc.constantFrom("https://app.example/cb", "http://127.0.0.1:8123/cb", "com.example.app:/cb", "javascript:alert(1)", "http://evil.example/cb", "", "x"),
  // Names: a configured client's, its look-alikes, and ones that would write to an operator's terminal.
  fc.constantFrom("Web app", "W\u0435b app", "WEB  APP", "Web\u200bapp", "Tool\u001b[2K\u001b]0;x\u0007", "Tool\u202egnp.exe", "Tool\u009b31m", "Tool"),
  fc.constantFrom("web", "native", "browser", "none", "client_secret_basic", "client_secret_post"),
  fc.constantFrom(["client_credentials"], ["authorization_code", "client_credentials"], ["authorization_code", "refresh_token"], ["refresh_token"]),
);
const metadataField = fc.constantFrom(
  "redirect_uris", "client_name", "grant_types", "response_types", "token_endpoint_auth_method", "scope", "client_uri",
  "logo_uri", "contacts", "jwks", "jwks_uri", "software_id", "client_id", "client_secret", "__proto__", "constructor",
  "application_type",
);
const UNSAFE_NAME = /[\p{Cc}\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
const CONFIGURED_NAMES = ["Single-page app", "Web app", "Other app", "Backend", "Backend with refresh"];
const fields = fc.dictionary(metadataField, fc.oneof(jsonValue, fc.array(jsonValue, { maxLength: 3 })), { maxKeys: 8 });
// Half start from a registration that would pass, so that the checks on a 201 are reached often.
const SOUND = { client_name: "Tool", redirect_uris: ["http://127.0.0.1/cb"], token_endpoint_auth_method: "none" };
const NAMES = fc.oneof(
  fc.constantFrom("Web app", "W\u0435b app", "WEB  APP", "Web\u200bapp", "\uff37eb app", "Tool\u001b[2K\u001b]0;x\u0007", "Tool\u202egnp.exe", "Tool\u009b31m", "Tool"),
  fc.string({ unit: "binary", maxLength: 24 }),
);
const URIS = fc.array(fc.constantFrom("https://app.example/cb", "http://127.0.0.1:8123/cb", "https://localhost/cb", "com.example.app:/cb"), { minLength: 1, maxLength: 3 });
const named = fc.record({ client_name: NAMES, application_type: fc.constantFrom("web", "native", undefined), redirect_uris: URIS });
const metadata = fc.oneof(fields, fields.map((m) => ({ ...SOUND, ...m })), named.map((m) => ({ ...SOUND, ...m })));

test("registration: never a 5xx; errors are RFC 7591 JSON; a 201 holds only checked redirect URIs, user-approved grants, the default scope, a safe name", async () => {
  const { server } = await fixture({ defaultScope: "read", registration: { enabled: true, maxPerHour: 1_000_000 } });
  let registered = 0;
  await fc.assert(fc.asyncProperty(
    fc.oneof(metadata.map((m) => JSON.stringify(m)), fc.string({ maxLength: 200 })),
    fc.constantFrom("application/json", "application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded"),
    async (body, type) => {
      const response = await server.fetch(new Request(`${ISSUER}/register`, { method: "POST", headers: { "content-type": type }, body }));
      const text = await response.text();
      expect(response.status).toBeLessThan(500);
      expect(text).not.toMatch(STACK);
      const json = JSON.parse(text) as Record<string, unknown>;
      if (response.status === 201) {
        expect(typeof json.client_id).toBe("string");
        registered++;
        // Open registration: only grants a user approves, the default scope when none was asked for, a name
        // that neither writes to a terminal nor passes for a configured client's, a type its redirect URIs fit.
        for (const grant of json.grant_types as string[]) expect(["authorization_code", "refresh_token"]).toContain(grant);
        const asked = (JSON.parse(body) as Record<string, unknown>).scope;
        if (asked === undefined) expect(json.scope).toBe("read");
        expect(String(json.client_name)).not.toMatch(UNSAFE_NAME);
        expect(CONFIGURED_NAMES.filter((name) => looksAlike(name, String(json.client_name)))).toEqual([]);
        expect(["web", "native"]).toContain(json.application_type);
        if (json.application_type === "web") for (const uri of json.redirect_uris as string[]) expect(uri, "web: https on a remote host").toMatch(/^https:\/\/(?!localhost|127\.|\[::1\])/);
        for (const uri of json.redirect_uris as string[]) {
          const url = new URL(uri);
          const ok = url.protocol === "https:" || (url.protocol === "http:" && ["127.0.0.1", "[::1]", "localhost"].includes(url.hostname)) ||
            /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol);
          expect(ok, uri).toBe(true);
          expect(url.protocol).not.toBe("javascript:");
        }
      } else {
        expect(response.status).toBe(400);
        expect(["invalid_client_metadata", "invalid_redirect_uri", "invalid_request"]).toContain(json.error);
      }
    },
  ), { numRuns: RUNS });
  expect(registered, "registrations that passed").toBeGreaterThan(0);
}, 120_000);

test("introspection: any client, any token string, any hint: another client's token is never described", async () => {
  const { server } = await fixture();
  const tokens = await spaTokens(server);
  const callers = [["backend", SECRETS.backend], ["web", SECRETS.web], ["other", SECRETS.other], ["backend", "wrong-secret-0123456789"]] as const;
  await fc.assert(fc.asyncProperty(
    fc.constantFrom(...callers),
    fc.oneof(fc.constantFrom(tokens.access_token, tokens.refresh_token), fc.string({ maxLength: 64 })),
    fc.option(fc.constantFrom("access_token", "refresh_token", "junk", ""), { nil: undefined }),
    async ([id, secret], token, hint) => {
      const body = new URLSearchParams({ token, ...(hint === undefined ? {} : { token_type_hint: hint }) });
      const response = await server.fetch(new Request(`${ISSUER}/introspect`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${id}:${secret}`)}` },
        body,
      }));
      const text = await response.text();
      expect(response.status).toBeLessThan(500);
      expect(text).not.toMatch(STACK);
      if (response.status === 200) expect(JSON.parse(text)).toEqual({ active: false });
    },
  ), { numRuns: RUNS });
}, 120_000);

test("protected resource: metadata and guard never 5xx; only a live token reaches the handler", async () => {
  const { server } = await fixture();
  const tokens = await spaTokens(server);
  const resource = protectedResource({
    resource: "https://api.example.com/mcp",
    authorizationServers: [server.issuer],
    verify: localTokenVerifier(server),
    requireAudience: false,
  });
  let reached = 0;
  const handler = resource.protect(undefined, () => {
    reached++;
    return new Response("ok");
  });
  await fc.assert(fc.asyncProperty(
    fc.constantFrom("GET", "POST", "OPTIONS", "HEAD", "DELETE"),
    fc.constantFrom("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp", "/mcp", "/.well-known/oauth-protected-resource/x/../mcp", "/"),
    fc.oneof(fc.constant(`Bearer ${tokens.access_token}`), fc.constant(`bearer ${tokens.refresh_token}`), fc.string({ maxLength: 80 }), fc.constant(undefined)),
    async (method, path, authorization) => {
      const request = new Request(`https://api.example.com${path}`, { method, headers: authorization === undefined ? {} : { authorization } });
      const before = reached;
      const response = resource.metadataResponse(request) ?? (await handler(request));
      expect(response.status).toBeLessThan(500);
      expect(await response.text()).not.toMatch(STACK);
      if (reached > before) expect(authorization).toBe(`Bearer ${tokens.access_token}`);
    },
  ), { numRuns: RUNS });
}, 120_000);
