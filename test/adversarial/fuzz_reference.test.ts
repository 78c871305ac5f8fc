// Item 13 of issue 15: the fuzz oracles over the reference server's round-2 addresses, in process: /register,
// /.well-known/oauth-protected-resource, /logout, /account/apps (connected apps), /healthz, /readyz, /metrics,
// and CORS preflights on every endpoint. Any method, Origin, cookie and body. The properties: never a 5xx or an
// internal detail; no password, secret, code, token or session in any response, log line or audit event, and no
// query string in the log or the metrics; never a 2xx preflight on the authorization endpoint or an HTML page,
// and no preflight writes to the store; every HTML page refuses framing; no redirect leaves the issuer; and a bad
// request issues and spends nothing: afterwards the session, the grant, an unredeemed code, the access and
// refresh tokens all still work, and only a 201 from /register added a client.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createReferenceApp, type ReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, DEMO_REDIRECT_URI } from "../../lib/reference/config.ts";
import { memoryStorage } from "../../lib/storage/memory.ts";
import { envInt, FaultInjector, figures, internalDetail, type Seen, see } from "./support.ts";

const RUNS = Math.max(200, Math.round(envInt("FUZZ_RUNS", 20_480) / 10));
const ISSUER = "http://127.0.0.1:8080";
const AUTHORIZE = `${ISSUER}/index.php?module=OAuth2&action=authorize`;
const TOKEN = `${ISSUER}/index.php?module=OAuth2&action=token`;
const FORM = { "content-type": "application/x-www-form-urlencoded" };
/** Store verbs that change something: none may run for a preflight. */
const WRITES = new Set([
  "saveClient", "setClientActive", "deleteClient", "revokeClientGrants", "saveCode", "redeemCode", "saveTokens",
  "rotateRefreshToken", "revokeGrant", "revokeAccessToken", "markOnce", "purgeExpired",
]);
/** The endpoint names a metric label may carry (the README's list), whatever the path was. */
const ENDPOINT_NAMES = [
  "authorize", "token", "revoke", "introspect", "register", "metadata", "resource_metadata", "healthz", "readyz", "metrics",
  "connected_apps", "logout", "landing", "api", "jwks", "device_authorization", "device", "other",
];
/** Addresses that are navigated to, not fetched: a preflight there must never succeed. */
const PAGES = new Set(["/index.php", "/authorize", "/account/apps", "/logout", "/"]);

interface World {
  app: ReferenceApp;
  injector: FaultInjector;
  log: string[];
  events: string[];
  /** Everything that must never be shown: passwords, client secrets, the signing secret, live codes and tokens. */
  secrets: string[];
  session: string;
  code: string;
  access: string;
  refresh: string;
  grantId: string;
}

let w: World;
const tally = { requests: 0, preflights: 0, pages: 0, registered: 0 };
/** Markers put in queries and paths: none may reach the log or the metrics. */
const markers: string[] = [];
/** Client secrets handed out by a 201 from /register: once, to the caller, never to the log. */
const issuedSecrets: string[] = [];

async function setup(): Promise<World> {
  const injector = new FaultInjector(memoryStorage());
  const config = structuredClone(DEMO_CONFIG);
  config.registration = { enabled: true };
  config.metrics = { enabled: true };
  const log: string[] = [];
  const events: string[] = [];
  const app = await createReferenceApp({
    issuer: ISSUER, config, storage: injector.storage, passwordIterations: 1000, purgeInterval: 0,
    log: (line) => log.push(line), onEvent: (event) => events.push(JSON.stringify(event)),
  });
  // Sign in through the connected-apps page, then a code flow for demo-web: one code redeemed, one kept.
  const page = await app.fetch(new Request(`${ISSUER}/account/apps`));
  const nonce = page.headers.getSetCookie().map((c) => c.split(";")[0]!).join("; ");
  const loginCsrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const login = await app.fetch(new Request(`${ISSUER}/account/apps`, {
    method: "POST", headers: { ...FORM, cookie: nonce }, body: new URLSearchParams({ username: "demo", password: "demo-password", csrf: loginCsrf }),
  }));
  expect(login.status).toBe(303);
  const session = login.headers.getSetCookie().find((c) => c.startsWith("oauth2_session="))!.split(";")[0]!;
  const params = new URLSearchParams({ response_type: "code", client_id: "demo-web", redirect_uri: DEMO_REDIRECT_URI, scope: "reports.read", state: "s" });
  const codeOnce = async () => {
    const consent = await app.fetch(new Request(`${AUTHORIZE}&${params}`, { headers: { cookie: session } }));
    const csrf = /name="csrf" value="([^"]+)"/.exec(await consent.text())![1]!;
    const allowed = await app.fetch(new Request(`${AUTHORIZE}&${params}`, { method: "POST", headers: { ...FORM, cookie: session }, body: new URLSearchParams({ decision: "allow", csrf }) }));
    expect(allowed.status).toBe(303);
    return new URL(allowed.headers.get("location")!).searchParams.get("code")!;
  };
  const redeemed = await exchange(app, { grant_type: "authorization_code", code: await codeOnce(), redirect_uri: DEMO_REDIRECT_URI });
  const code = await codeOnce();
  const grants = await injector.inner.listGrants("demo", Date.now());
  const signing = await injector.inner.initSetting("reference.signing_secret", "unused");
  const secrets = [
    ...config.users.map((u) => u.password!), ...config.clients.flatMap((c) => (c.client_secret ? [c.client_secret] : [])), signing,
    session.split("=")[1]!, code, redeemed.access_token!, redeemed.refresh_token!,
  ];
  return { app, injector, log, events, secrets, session, code, access: redeemed.access_token!, refresh: redeemed.refresh_token!, grantId: grants[0]!.grant_id };
}

async function exchange(app: ReferenceApp, fields: Record<string, string>): Promise<Record<string, string>> {
  const response = await app.fetch(new Request(TOKEN, {
    method: "POST", headers: FORM, body: new URLSearchParams({ client_id: "demo-web", client_secret: "demo-web-secret-change-me", ...fields }),
  }));
  const body = await response.json() as Record<string, string>;
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body;
}

// ---------------------------------------------------------------------------------------------------------------
// Generated requests.

interface Input {
  path: string;
  query: [string, string][];
  method: string;
  origin: string | undefined;
  preflightMethod: string | undefined;
  preflightHeaders: string | undefined;
  cookie: "session" | "garbage" | "twice" | "none";
  contentType: string | undefined;
  fields: [string, "code" | "access" | "refresh" | "grant" | "marker" | string][];
  json: boolean;
}

/** The round-2 addresses take any method; the round-1 endpoints only preflights here (fuzz.test.ts has them). */
const ROUND2 = [
  "/register", "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/api",
  "/.well-known/oauth-protected-resource/x/../api", "/logout", "/logout/", "/account/apps", "/account/apps/x",
  "/healthz", "/readyz", "/metrics", "/metrics/", "/",
];
const ROUND1 = [
  "/index.php", "/authorize", "/token", "/revoke", "/introspect", "/.well-known/oauth-authorization-server", "/api/reports",
];
const SPECIAL = new Set(["code", "access", "refresh", "grant", "marker"]);
const value = fc.oneof(
  fc.constantFrom("code", "access", "refresh", "grant", "marker", "", "allow", "demo", "wrong-password", "javascript:alert(1)", "https://evil.example/"),
  fc.string({ maxLength: 40 }),
);
const anyInput: fc.Arbitrary<Input> = fc.record({
  round1: fc.boolean(),
  path: fc.nat(),
  query: fc.array(fc.tuple(fc.constantFrom("module", "action", "next", "return_to", "client_id", "code", "state", "redirect_uri", "m"), value), { maxLength: 4 }),
  method: fc.constantFrom("GET", "HEAD", "POST", "POST", "OPTIONS", "OPTIONS", "PUT", "DELETE", "PATCH", "PROPFIND"),
  origin: fc.option(fc.constantFrom("https://evil.example", "null", ISSUER, "https://app.example", `${ISSUER}.evil.example`), { nil: undefined }),
  preflightMethod: fc.option(fc.constantFrom("POST", "GET", "DELETE", "PUT", "x y"), { nil: undefined }),
  preflightHeaders: fc.option(fc.constantFrom("authorization", "content-type, x-evil", "mcp-protocol-version", "cookie"), { nil: undefined }),
  cookie: fc.constantFrom("session", "session", "garbage", "twice", "none"),
  contentType: fc.option(fc.constantFrom("application/x-www-form-urlencoded", "application/json", "text/plain", "multipart/form-data; boundary=x"), { nil: undefined }),
  fields: fc.array(fc.tuple(fc.constantFrom(
    "csrf", "grant_id", "token", "code", "refresh_token", "decision", "username", "password", "client_id", "client_secret",
    "redirect_uris", "client_name", "grant_type", "action", "__proto__",
  ), value), { maxLength: 6 }),
  json: fc.boolean(),
}).map(({ round1, path, ...rest }): Input => {
  const paths = round1 ? ROUND1 : ROUND2;
  const method = round1 ? "OPTIONS" : rest.method;
  return { ...rest, path: paths[path % paths.length]!, method };
});

/** The values each request carried in its query and body. */
const sentBody = new WeakMap<Request, string>();

/** Forms aimed at the state-changing pages: a revoke of the user's real grant, a logout, with a forged token. */
const formInput: fc.Arbitrary<Input> = fc.record({
  path: fc.constantFrom("/account/apps", "/logout"),
  origin: fc.option(fc.constantFrom("null", ISSUER, "https://evil.example"), { nil: undefined }),
  cookie: fc.constantFrom("session", "session", "twice", "garbage"),
  csrf: fc.option(value, { nil: undefined }),
  extra: fc.array(fc.tuple(fc.constantFrom("decision", "username", "password", "grant_id"), value), { maxLength: 2 }),
}).map(({ path, origin, cookie, csrf, extra }): Input => ({
  path, query: [], method: "POST", origin, preflightMethod: undefined, preflightHeaders: undefined, cookie,
  contentType: "application/x-www-form-urlencoded", json: false,
  fields: [["grant_id", "grant"], ...(csrf === undefined ? [] : [["csrf", csrf] as [string, string]]), ...extra],
}));
const input: fc.Arbitrary<Input> = fc.oneof({ weight: 4, arbitrary: anyInput }, { weight: 1, arbitrary: formInput });

function concrete(i: Input, marker: string): Request {
  // The request log names the client_id a request sent (README: identifiers are public), so a client_id is never
  // one of the values the log must not show.
  const fill = (k: string, v: string) => k === "client_id" && SPECIAL.has(v) ? "demo-web" :
    v === "code" ? w.code : v === "access" ? w.access : v === "refresh" ? w.refresh : v === "grant" ? w.grantId : v === "marker" ? marker : v;
  const query = new URLSearchParams(i.query.map(([k, v]) => [k, fill(k, v)]));
  query.append("m", marker);
  const headers = new Headers();
  if (i.origin !== undefined) headers.set("origin", i.origin);
  if (i.preflightMethod !== undefined) headers.set("access-control-request-method", i.preflightMethod);
  if (i.preflightHeaders !== undefined) headers.set("access-control-request-headers", i.preflightHeaders);
  if (i.cookie === "session") headers.set("cookie", w.session);
  if (i.cookie === "garbage") headers.set("cookie", "oauth2_session=AAAA.BBBB; other=1");
  if (i.cookie === "twice") headers.set("cookie", `oauth2_session=x; ${w.session}`);
  if (i.contentType !== undefined) headers.set("content-type", i.contentType);
  // Bearer credentials on some requests too: a preflight or a metadata read must not spend or echo them.
  if (i.fields.length % 3 === 1) headers.set("authorization", `Bearer ${w.access}`);
  const pairs = i.fields.map(([k, v]): [string, string] => [k, fill(k, v)]);
  const hasBody = !["GET", "HEAD"].includes(i.method);
  // Now and then a valid registration, so that the 201 path (and its secret, never to be logged) is reached.
  const valid = i.path === "/register" && i.method === "POST" && i.contentType === "application/json" && i.fields.length < 2;
  const body = valid ? JSON.stringify({ redirect_uris: ["https://app.example/cb"], client_name: "Fuzz app", token_endpoint_auth_method: i.json ? "client_secret_basic" : "none" }) : i.json ? JSON.stringify(Object.fromEntries(pairs.map(([k, v]) => [k, k === "redirect_uris" ? [v] : v]))) : new URLSearchParams(pairs).toString();
  const path = i.path === "/index.php" ? "/index.php" : i.path;
  const request = new Request(`${ISSUER}${path}?${query}`, { method: i.method, headers, ...(hasBody ? { body } : {}) });
  sentBody.set(request, [...query.values(), ...(hasBody ? pairs.map(([, v]) => v) : [])].join("\n"));
  return request;
}

function problemsOf(i: Input, request: Request, seen: Seen, writes: string[]): string[] {
  const problems: string[] = [];
  if (seen.status >= 500) problems.push(`status ${seen.status}: ${seen.body.slice(0, 200)}`);
  const leak = internalDetail(seen.body);
  if (leak !== undefined) problems.push(`internal detail: ${leak}`);
  const headerText = [...seen.headers].filter(([name]) => name !== "set-cookie").map(([n, v]) => `${n}: ${v}`).join("\n");
  // What the request itself carried in its URL or body may come back (a form's action); nothing else may.
  const sent = sentBody.get(request)!;
  for (const secret of w.secrets.filter((x) => !sent.includes(x))) {
    if (seen.body.includes(secret) || headerText.includes(secret)) problems.push(`a secret in the response (${secret.slice(0, 4)}…)`);
  }
  const type = seen.headers.get("content-type") ?? "";
  const html = /^text\/html/i.test(type);
  if (html) {
    tally.pages++;
    // Both: X-Frame-Options for older browsers, CSP frame-ancestors for the rest (clickjacking, RFC 6749 §10.13).
    const framing = seen.headers.get("x-frame-options") === "DENY" && /frame-ancestors 'none'/.test(seen.headers.get("content-security-policy") ?? "");
    if (!framing) problems.push("an HTML page that may be framed");
  }
  if (seen.headers.has("access-control-allow-credentials")) problems.push("CORS with credentials");
  const location = seen.headers.get("location");
  if (location !== null && !(location.startsWith(`${ISSUER}/`) || /^\/(?![/\\])/.test(location))) problems.push(`a redirect off the issuer: ${location}`);
  const path = new URL(request.url).pathname;
  if (i.method === "OPTIONS") {
    tally.preflights++;
    if (PAGES.has(path) && seen.status >= 200 && seen.status < 300) problems.push(`a ${seen.status} preflight on the page ${path}`);
    if ((PAGES.has(path) || html) && seen.headers.has("access-control-allow-origin")) problems.push(`CORS on the page ${path}`);
    if (writes.length > 0) problems.push(`a preflight wrote to the store: ${writes.join(", ")}`);
  }
  if (path === "/readyz" && (i.method === "GET" || i.method === "HEAD") && seen.status !== 200) problems.push(`readyz ${seen.status} with a healthy store`);
  return problems;
}

describe("the reference server's round-2 addresses", () => {
  beforeAll(async () => {
    w = await setup();
  });

  afterAll(() => {
    figures(`fuzz (reference, round 2): ${tally.requests} requests, ${tally.preflights} preflights, ${tally.pages} HTML pages, ${tally.registered} clients registered`);
  });

  test("never a 5xx, a leak, a framable page, a 2xx preflight on a page, a preflight write or an off-site redirect", async () => {
    const clientsBefore = (await w.injector.inner.listClients()).length;
    let n = 0;
    await fc.assert(fc.asyncProperty(input, async (i) => {
      const marker = `mk${(n++).toString(36)}zq`;
      markers.push(marker);
      const request = concrete(i, marker);
      const before = w.injector.calls.length;
      let response: Response;
      try {
        response = await w.app.fetch(request);
      } catch (error) {
        throw new Error(`fetch threw ${String(error)} for ${JSON.stringify(i)}`);
      }
      const seen = await see(response);
      tally.requests++;
      const writes = w.injector.calls.slice(before).map((c) => c.method).filter((m) => WRITES.has(m));
      if (seen.status === 201 && new URL(request.url).pathname === "/register") {
        tally.registered++;
        const secret = (JSON.parse(seen.body) as { client_secret?: string }).client_secret;
        if (secret !== undefined) issuedSecrets.push(secret);
      }
      const problems = problemsOf(i, request, seen, writes);
      if (problems.length > 0) throw new Error(`${problems.join("; ")}\n  request: ${i.method} ${request.url} ${JSON.stringify(i)}`);
    }), { numRuns: RUNS });

    // Only a 201 from /register added a client.
    expect((await w.injector.inner.listClients()).length, "clients added by refused registrations").toBe(clientsBefore + tally.registered);
  }, 120_000);

  test("afterwards: nothing in the log, the audit trail or the metrics that must not be there", async () => {
    const metrics = await (await w.app.fetch(new Request(`${ISSUER}/metrics`))).text();
    // Label values come from closed lists, however many addresses were tried: a client cannot grow the series.
    const endpoints = new Set([...metrics.matchAll(/endpoint="([^"]*)"/g)].map((m) => m[1]!));
    expect([...endpoints].filter((e) => !ENDPOINT_NAMES.includes(e)), "endpoint labels off the closed list").toEqual([]);
    const statuses = [...metrics.matchAll(/status="([^"]*)"/g)].map((m) => m[1]!);
    expect(statuses.filter((s) => !/^[1-5][0-9]{2}$/.test(s)), "status labels").toEqual([]);
    const sinks = { log: w.log.join("\n"), audit: w.events.join("\n"), metrics };
    for (const [name, text] of Object.entries(sinks)) {
      for (const secret of [...w.secrets, ...issuedSecrets]) expect(text.includes(secret), `${name}: a secret (${secret.slice(0, 4)}…)`).toBe(false);
      const seenMarkers = markers.filter((m) => text.includes(m));
      expect(seenMarkers, `${name}: query strings or generated values`).toEqual([]);
    }
    expect(w.log.length).toBeGreaterThanOrEqual(tally.requests);
  });

  test("afterwards: nothing was spent by a bad request: the session, the grant, the code and both tokens still work", async () => {
    const apps = await (await w.app.fetch(new Request(`${ISSUER}/account/apps`, { headers: { cookie: w.session } }))).text();
    expect(apps, "the session is still signed in and lists its grant").toContain(`value="${w.grantId}"`);
    const me = await w.app.fetch(new Request(`${ISSUER}/api/me`, { headers: { authorization: `Bearer ${w.access}` } }));
    expect(me.status, "the access token").toBe(200);
    await exchange(w.app, { grant_type: "refresh_token", refresh_token: w.refresh });
    await exchange(w.app, { grant_type: "authorization_code", code: w.code, redirect_uri: DEMO_REDIRECT_URI });
  });
});

// CORS with a list of origins (the library option): any endpoint, any method, any Origin.
describe("CORS with a list of origins", () => {
  const LISTED_ORIGIN = "https://app.example";
  const CORS_PATHS = [
    "/token", "/revoke", "/introspect", "/register", "/.well-known/oauth-authorization-server",
    "/index.php?module=OAuth2&action=token",
  ];
  const PAGE_PATHS = ["/authorize?client_id=spa", "/index.php?module=OAuth2&action=authorize&client_id=spa"];

  test("only a listed origin is ever allowed, exactly, with Vary; never on the authorization endpoint; preflights write nothing", async () => {
    const { fixture: makeFixture, ISSUER: LIB_ISSUER } = await import("../helpers.ts");
    const injector = new FaultInjector(memoryStorage());
    const { server } = await makeFixture({ storage: injector.storage, cors: { origins: [LISTED_ORIGIN] }, registration: { enabled: true } });
    const arbitrary = fc.record({
      path: fc.constantFrom(...CORS_PATHS, ...PAGE_PATHS, "/nowhere"),
      method: fc.constantFrom("OPTIONS", "OPTIONS", "POST", "GET"),
      origin: fc.option(fc.constantFrom(
        LISTED_ORIGIN, LISTED_ORIGIN, `${LISTED_ORIGIN}.evil.example`, "https://APP.example", `${LISTED_ORIGIN}:443`, "http://app.example",
        "null", `${LISTED_ORIGIN}/`, "*",
      ), { nil: undefined }),
      requestMethod: fc.option(fc.constantFrom("POST", "GET", "PUT"), { nil: undefined }),
    });
    let allowed = 0;
    await fc.assert(fc.asyncProperty(arbitrary, async (i) => {
      const headers = new Headers();
      if (i.origin !== undefined) headers.set("origin", i.origin);
      if (i.requestMethod !== undefined) headers.set("access-control-request-method", i.requestMethod);
      const before = injector.calls.length;
      const seen = await see(await server.fetch(new Request(`${LIB_ISSUER}${i.path}`, {
        method: i.method, headers, ...(i.method === "POST" ? { body: "grant_type=client_credentials" } : {}),
      })));
      const problems: string[] = [];
      if (seen.status >= 500) problems.push(`status ${seen.status}`);
      const acao = seen.headers.get("access-control-allow-origin");
      const page = PAGE_PATHS.includes(i.path);
      if (acao !== null) {
        allowed++;
        if (i.origin !== LISTED_ORIGIN || acao !== LISTED_ORIGIN) problems.push(`Access-Control-Allow-Origin ${acao} for Origin ${i.origin}`);
        if (!/\borigin\b/i.test(seen.headers.get("vary") ?? "")) problems.push("an echoed origin without Vary: Origin");
        if (page) problems.push("CORS on the authorization endpoint");
      }
      if (seen.headers.has("access-control-allow-credentials")) problems.push("CORS with credentials");
      if (i.method === "OPTIONS") {
        if (page && seen.status >= 200 && seen.status < 300) problems.push(`a ${seen.status} preflight on the authorization endpoint`);
        const writes = injector.calls.slice(before).map((c) => c.method).filter((m) => WRITES.has(m));
        if (writes.length > 0) problems.push(`a preflight wrote to the store: ${writes.join(", ")}`);
        if (!page && i.path !== "/nowhere" && i.origin === LISTED_ORIGIN && (seen.status !== 204 || acao === null)) {
          problems.push(`the listed origin's preflight got ${seen.status} without CORS`);
        }
      }
      if (problems.length > 0) throw new Error(`${problems.join("; ")}\n  request: ${JSON.stringify(i)}`);
    }), { numRuns: Math.max(200, Math.round(RUNS / 2)) });
    expect(allowed, "the listed origin was allowed somewhere").toBeGreaterThan(0);
  }, 60_000);
});
