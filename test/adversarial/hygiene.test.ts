// Secrets hygiene (issue "Adversarial testing", part 6). Runs many flows, successful and failing, throttled and
// faulted, with distinctive secrets, and keeps every output the library produces: each response (status,
// headers, body), each onError argument (message, stack, own properties, the whole cause chain, the context),
// each console line, each exception the API throws, and what the Node adapter logs. The last test greps all of it
// for every secret used: client secrets and wrong guesses, the password and wrong guesses, signing keys, PKCE
// verifiers, codes, access and refresh tokens, and the SHA-256 of each (what the store keeps; not of a verifier,
// whose SHA-256 is the public code_challenge). The only
// exceptions: a successful token response may hold the tokens it issues, and a success redirect the code.
import { format } from "node:util";
import { afterAll, expect, test } from "vitest";
import { serveNode } from "../../lib/adapters/node.ts";
import {
  type AuthorizationServer, ConfigurationError, createAuthorizationServer, memoryStorage, passwordLogin,
} from "../../mod.ts";
import { Clock, ISSUER, pkce, REDIRECT } from "../helpers.ts";
import { basicHeader } from "./arbitraries.ts";
import { FaultInjector, figures, sha256 } from "./support.ts";

const MARK = "HYGIENE";
const SECRET = {
  web: `${MARK}-web-secret-7f3a9c21d4e8`,
  backend: `${MARK}-backend-secret-0b9d6e5f1a2c`,
  password: `${MARK}-password-alice-K9xQ2mZ`,
  loginKey: `${MARK}-login-signing-key-0123456789abcdef`,
  csrfKey: `${MARK}-csrf-signing-key-0123456789abcdef`,
} as const;

/** Every secret the flows use, by kind; codes and tokens are added as they are issued. */
const secrets = new Map<string, string>(Object.entries(SECRET).map(([k, v]) => [v, k]));
const keep = (value: string | undefined | null, kind: string) => {
  if (typeof value === "string" && value.length >= 12) secrets.set(value, kind);
};

/** Everything the library wrote, with the exact values that output may legitimately carry. */
const outputs: { where: string; text: string; allowed: string[] }[] = [];
const tally = { responses: 0, onError: 0, console: 0, exceptions: 0 };

// Console output, wherever it comes from (the library, the Node adapter's default logger).
const CONSOLE = ["log", "info", "warn", "error", "debug"] as const;
const originals = new Map(CONSOLE.map((name) => [name, console[name]]));
for (const name of CONSOLE) {
  console[name] = (...args: unknown[]) => {
    tally.console++;
    outputs.push({ where: `console.${name}`, text: format(...args), allowed: [] });
  };
}
const restoreConsole = () => {
  for (const name of CONSOLE) console[name] = originals.get(name)!;
};
afterAll(restoreConsole);

/** An error as a log line would show it, and more: message, stack, own properties, causes, recursively. */
function describeError(error: unknown, depth = 0): string {
  if (depth > 5) return "";
  if (!(error instanceof Error)) {
    try {
      return `${String(error)} ${JSON.stringify(error)}`;
    } catch {
      return String(error);
    }
  }
  const own: Record<string, unknown> = {};
  for (const key of Object.getOwnPropertyNames(error)) own[key] = (error as unknown as Record<string, unknown>)[key];
  let props = "";
  try {
    props = JSON.stringify(own);
  } catch {
    props = Object.keys(own).join(",");
  }
  return [error.name, error.message, error.stack ?? "", props, format(error), "cause:", describeError(error.cause, depth + 1)].join("\n");
}

function onError(error: unknown, context: unknown): void {
  tally.onError++;
  outputs.push({ where: "onError", text: `${describeError(error)}\n${JSON.stringify(context)}`, allowed: [] });
}

/** Records a response (status line, every header, body) and returns its body. */
async function capture(label: string, response: Response, allowed: (body: string, headers: Headers) => string[] = () => []): Promise<{ status: number; headers: Headers; body: string }> {
  tally.responses++;
  const body = await response.text();
  const headers = [...response.headers].map(([k, v]) => `${k}: ${v}`).join("\n");
  outputs.push({ where: `response to ${label}`, text: `${response.status}\n${headers}\n\n${body}`, allowed: allowed(body, response.headers) });
  return { status: response.status, headers: response.headers, body };
}

/** Records an exception thrown (or a rejection) by the API. */
async function thrown(label: string, run: () => unknown): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    tally.exceptions++;
    outputs.push({ where: `exception from ${label}`, text: describeError(error), allowed: [] });
    return error;
  }
  throw new Error(`${label} did not throw`);
}

/** The tokens of a successful token response: the one place they may appear. */
const ownTokens = (body: string): string[] => {
  try {
    const parsed = JSON.parse(body) as Record<string, string>;
    keep(parsed.access_token, "access token");
    keep(parsed.refresh_token, "refresh token");
    return [parsed.access_token, parsed.refresh_token].filter((t): t is string => typeof t === "string");
  } catch {
    return [];
  }
};

// ---------------------------------------------------------------------------------------------------------------

const clock = new Clock();
const form = { "content-type": "application/x-www-form-urlencoded" };

async function makeServer(storage?: FaultInjector): Promise<AuthorizationServer> {
  const server = createAuthorizationServer({
    issuer: ISSUER,
    clock: clock.read,
    secret: SECRET.csrfKey,
    scopes: { read: "Read your reports", export: "Run exports" },
    ...(storage ? { storage: storage.storage, storageTimeout: 50 } : {}),
    authenticateUser: passwordLogin({
      secret: SECRET.loginKey,
      clock: clock.read,
      verify: (username, password) => (username === "alice" && password === SECRET.password ? { id: "alice", name: "Alice" } : null),
    }),
    onError,
  });
  await server.clients.register({ client_id: "spa", name: "SPA", type: "public", redirect_uris: [REDIRECT], scopes: ["read"] });
  await server.clients.register({ client_id: "web", client_secret: SECRET.web, name: "Web", type: "confidential", redirect_uris: [REDIRECT], scopes: ["read"] });
  await server.clients.register({
    client_id: "backend", client_secret: SECRET.backend, name: "Backend", type: "confidential", scopes: ["export"],
    grant_types: ["client_credentials", "refresh_token"], client_credentials_refresh_token: true,
  });
  return server;
}

/** A browser: keeps cookies, follows nothing by itself. */
class Browser {
  cookies = new Map<string, string>();
  readonly server: AuthorizationServer;
  constructor(server: AuthorizationServer) {
    this.server = server;
  }
  async go(label: string, url: string, init: RequestInit = {}, allowed?: (body: string, headers: Headers) => string[]) {
    const headers = new Headers(init.headers);
    if (this.cookies.size && !headers.has("cookie")) headers.set("cookie", [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    const response = await this.server.fetch(new Request(url, { ...init, headers }));
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair!.indexOf("=");
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return capture(label, response, allowed);
  }
}

const csrfIn = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
const authorizeUrl = (params: Record<string, string>) => `${ISSUER}/authorize?${new URLSearchParams(params)}`;
const token = (server: AuthorizationServer, label: string, fields: Record<string, string>, headers: Record<string, string> = {}, info?: unknown) =>
  server.fetch(new Request(`${ISSUER}/token`, { method: "POST", headers: { ...form, ...headers }, body: new URLSearchParams(fields) }), info)
    .then((r) => capture(label, r, (body) => (r.status === 200 ? ownTokens(body) : [])));

/** Signs in (a wrong password first) and approves; returns the code. */
async function authorize(server: AuthorizationServer, client: "spa" | "web", challenge?: string): Promise<string> {
  const params: Record<string, string> = { response_type: "code", client_id: client, redirect_uri: REDIRECT, scope: "read", state: "st-1" };
  if (challenge) Object.assign(params, { code_challenge: challenge, code_challenge_method: "S256" });
  const browser = new Browser(server);
  const url = authorizeUrl(params);
  let page = await browser.go("login page", url);
  const wrong = `${MARK}-wrong-password-${client}`;
  keep(wrong, "wrong password");
  page = await browser.go("wrong password", url, { method: "POST", headers: form, body: new URLSearchParams({ username: "alice", password: wrong, csrf: csrfIn(page.body) }) });
  expect(page.status).toBe(401);
  page = await browser.go("login without the nonce cookie", url, { method: "POST", headers: { ...form, cookie: "" }, body: new URLSearchParams({ username: "alice", password: SECRET.password, csrf: "forged" }) });
  const login = await browser.go("sign in", url, { method: "POST", headers: form, body: new URLSearchParams({ username: "alice", password: SECRET.password, csrf: csrfIn(page.body) }) });
  expect(login.status).toBe(303);
  const consent = await browser.go("consent page", url);
  expect(consent.status).toBe(200);
  await browser.go("forged consent", url, { method: "POST", headers: form, body: new URLSearchParams({ decision: "allow", csrf: "1.forged" }) });
  let code = "";
  await browser.go("consent: allow", url, { method: "POST", headers: form, body: new URLSearchParams({ decision: "allow", csrf: csrfIn(consent.body) }) }, (_, headers) => {
    code = new URL(headers.get("location") ?? "x:").searchParams.get("code") ?? "";
    keep(code, "authorization code");
    return [code];
  });
  expect(code).not.toBe("");
  return code;
}

const protectedApi = (server: AuthorizationServer) => server.protect("read", (_, info) => Response.json({ user: info.user_id }));
const callApi = async (server: AuthorizationServer, label: string, authorization: string) =>
  capture(label, await protectedApi(server)(new Request(`${ISSUER}/api/reports`, { headers: { authorization } })));

test("flows: authorization code with PKCE and with a secret, refresh, reuse, replay, resource calls, revocation", async () => {
  const server = await makeServer();
  // Public client, PKCE: a wrong verifier first, then the right one; a replay revokes the grant.
  const { verifier, challenge } = await pkce();
  keep(verifier, "PKCE verifier");
  const code = await authorize(server, "spa", challenge);
  const otherVerifier = (await pkce()).verifier;
  keep(otherVerifier, "wrong PKCE verifier");
  await token(server, "exchange, wrong verifier", { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: otherVerifier });
  const first = await token(server, "exchange", { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier });
  const tokens = JSON.parse(first.body) as Record<string, string>;
  await callApi(server, "resource call", `Bearer ${tokens.access_token}`);
  await callApi(server, "resource call with the refresh token", `Bearer ${tokens.refresh_token}`);
  await callApi(server, "resource call with the code", `Bearer ${code}`);
  await callApi(server, "resource call, malformed", `Bearer ${tokens.access_token}!`);
  const second = JSON.parse((await token(server, "refresh", { grant_type: "refresh_token", client_id: "spa", refresh_token: tokens.refresh_token! })).body) as Record<string, string>;
  await token(server, "refresh reuse (revokes the grant)", { grant_type: "refresh_token", client_id: "spa", refresh_token: tokens.refresh_token! });
  await callApi(server, "resource call after revocation", `Bearer ${second.access_token}`);
  await token(server, "code replay", { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier });
  await thrown("verifyAccessToken with a revoked token", () =>
    server.verifyAccessToken(new Request(`${ISSUER}/api`, { headers: { authorization: `Bearer ${second.access_token}` } })));
  await thrown("verifyAuthorization with a refresh token", () => server.verifyAuthorization(`Bearer ${second.refresh_token}`, "read"));

  // Password guessing until the login form throttles it.
  const guesser = new Browser(server);
  const loginUrl = authorizeUrl({ response_type: "code", client_id: "web", redirect_uri: REDIRECT, scope: "read" });
  let loginPage = await guesser.go("login page", loginUrl);
  for (let i = 0; i < 7; i++) {
    const wrong = `${MARK}-password-guess-${i}`;
    keep(wrong, "wrong password");
    loginPage = await guesser.go(`password guess ${i}`, loginUrl, { method: "POST", headers: form, body: new URLSearchParams({ username: "bob", password: wrong, csrf: csrfIn(loginPage.body) }) });
  }
  expect(loginPage.status, "password guessing is throttled").toBe(429);

  // Confidential client: wrong secret, two methods, Basic, introspection, revocation.
  const webCode = await authorize(server, "web");
  const guess = `${MARK}-web-secret-guess-1`;
  keep(guess, "wrong client secret");
  await token(server, "exchange, wrong secret", { grant_type: "authorization_code", client_id: "web", client_secret: guess, redirect_uri: REDIRECT, code: webCode });
  await token(server, "exchange, Basic and form", { grant_type: "authorization_code", client_id: "web", client_secret: SECRET.web, redirect_uri: REDIRECT, code: webCode }, { authorization: basicHeader("web", SECRET.web) });
  await token(server, "exchange, malformed Basic", { grant_type: "authorization_code", redirect_uri: REDIRECT, code: webCode }, { authorization: `Basic ${btoa(`web:${SECRET.web}%zz`)}` });
  await token(server, "exchange, Basic without a colon", { grant_type: "authorization_code", redirect_uri: REDIRECT, code: webCode }, { authorization: `Basic ${btoa(`web${SECRET.web}`)}` });
  const web = JSON.parse((await token(server, "exchange, Basic", { grant_type: "authorization_code", redirect_uri: REDIRECT, code: webCode }, { authorization: basicHeader("web", SECRET.web) })).body) as Record<string, string>;
  const introspect = (label: string, t: string, secret: string) =>
    server.fetch(new Request(`${ISSUER}/introspect`, { method: "POST", headers: { ...form, authorization: basicHeader("web", secret) }, body: new URLSearchParams({ token: t }) })).then((r) => capture(label, r));
  await introspect("introspection", web.access_token!, SECRET.web);
  await introspect("introspection, wrong secret", web.access_token!, guess);
  await token(server, "refresh token as a code", { grant_type: "authorization_code", client_id: "web", client_secret: SECRET.web, redirect_uri: REDIRECT, code: web.refresh_token! });
  await token(server, "access token as a refresh token", { grant_type: "refresh_token", client_id: "web", client_secret: SECRET.web, refresh_token: web.access_token! });
  await token(server, "refresh by another client", { grant_type: "refresh_token", client_id: "backend", client_secret: SECRET.backend, refresh_token: web.refresh_token! });
  await capture("revocation", await server.fetch(new Request(`${ISSUER}/revoke`, { method: "POST", headers: form, body: new URLSearchParams({ client_id: "web", client_secret: SECRET.web, token: web.refresh_token! }) })));
  await token(server, "refresh after revocation", { grant_type: "refresh_token", client_id: "web", client_secret: SECRET.web, refresh_token: web.refresh_token! });
});

test("malformed and oversized requests that carry secrets", async () => {
  const server = await makeServer();
  const cc = { grant_type: "client_credentials", client_id: "backend", client_secret: SECRET.backend, scope: "export" };
  const body = new URLSearchParams(cc).toString();
  const send = (label: string, init: RequestInit, url = `${ISSUER}/token`) => server.fetch(new Request(url, init)).then((r) => capture(label, r, (b) => (r.status === 200 ? ownTokens(b) : [])));
  await send("client_credentials", { method: "POST", headers: form, body });
  await send("JSON body", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(cc) });
  await send("no content type", { method: "POST", body: new TextEncoder().encode(body) });
  await send("secret repeated", { method: "POST", headers: form, body: `${body}&client_secret=${SECRET.backend}` });
  await send("secret in the query", { method: "POST", headers: form, body: "grant_type=client_credentials&scope=export" }, `${ISSUER}/token?${body}`);
  await send("GET with the secret in the query", { method: "GET" }, `${ISSUER}/token?${body}`);
  await send("body too large", { method: "POST", headers: form, body: `${body}&pad=${"a".repeat(20_000)}` });
  const long = `${MARK}-long-secret-${"x".repeat(5_000)}`;
  keep(long, "over-long client secret");
  await send("secret too long", { method: "POST", headers: form, body: new URLSearchParams({ ...cc, client_secret: long }).toString() });
  await send("wrong scope", { method: "POST", headers: form, body: new URLSearchParams({ ...cc, scope: "read" }).toString() });
  await send("unknown grant", { method: "POST", headers: form, body: new URLSearchParams({ ...cc, grant_type: "password", username: "alice", password: SECRET.password }).toString() });
  await send("public client with the password in the form", { method: "POST", headers: form, body: new URLSearchParams({ grant_type: "client_credentials", client_id: "spa", password: SECRET.password }).toString() });
  await send("revoke with a wrong secret", { method: "POST", headers: form, body: new URLSearchParams({ client_id: "backend", client_secret: `${SECRET.backend}-x`, token: SECRET.web }).toString() }, `${ISSUER}/revoke`);
  keep(`${SECRET.backend}-x`, "wrong client secret");
  // Brute force until throttled.
  for (let i = 0; i < 14; i++) {
    const guess = `${MARK}-brute-force-guess-${i}`;
    keep(guess, "wrong client secret");
    await token(server, `brute force ${i}`, { ...cc, client_secret: guess }, {}, { remoteAddr: { hostname: "203.0.113.9" } });
  }
});

test("store faults and hangs: the onError reports carry no secret", async () => {
  for (const mode of ["reject", "throw", "hang", "commit-then-reject"] as const) {
    const injector = new FaultInjector(memoryStorage(), 100);
    const server = await makeServer(injector);
    // Real tokens first: a failing store call that carries their hashes must not pass them on.
    const issued = JSON.parse((await token(server, `client_credentials before the faults (${mode})`, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRET.backend, scope: "export" })).body) as Record<string, string>;
    for (let k = 1; k <= 3; k++) {
      injector.arm(k, mode);
      await token(server, `client_credentials, ${mode} at ${k}`, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRET.backend, scope: "export" });
      injector.arm(k, mode);
      await token(server, `refresh, ${mode} at ${k}`, { grant_type: "refresh_token", client_id: "backend", client_secret: SECRET.backend, refresh_token: issued.refresh_token! });
      injector.arm(k, mode);
      await capture(`revocation, ${mode} at ${k}`, await server.fetch(new Request(`${ISSUER}/revoke`, { method: "POST", headers: form, body: new URLSearchParams({ client_id: "backend", client_secret: SECRET.backend, token: issued.access_token! }) })));
      injector.arm(k, mode);
      await callApi(server, `resource call, ${mode} at ${k}`, `Bearer ${issued.access_token}`);
      injector.clear();
      await injector.settled();
    }
  }
});

test("configuration errors never quote a secret", async () => {
  const server = await makeServer();
  const short = `${MARK}-short-1`; // 15 characters: too short for a client secret or a signing key
  keep(short, "short secret");
  await thrown("register with a short secret", () => server.clients.register({ client_id: "x", client_secret: short, name: "X", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] }));
  await thrown("register a public client with a secret", () => server.clients.register({ client_id: "y", client_secret: SECRET.web, name: "Y", type: "public", redirect_uris: [REDIRECT], scopes: ["read"] }));
  await thrown("createAuthorizationServer with a short key", () => createAuthorizationServer({ issuer: ISSUER, scopes: { read: "r" }, secret: short }));
  await thrown("passwordLogin with a short key", () => passwordLogin({ secret: short, verify: () => null }));
  const error = await thrown("register with an unknown scope", () => server.clients.register({ client_id: "z", client_secret: SECRET.backend, name: "Z", type: "confidential", scopes: ["nope"], grant_types: ["client_credentials"] }));
  expect(error).toBeInstanceOf(ConfigurationError);
  // A verify hook that returns nonsense: the TypeError names the hook, not the password.
  const broken = createAuthorizationServer({
    issuer: ISSUER, clock: clock.read, scopes: { read: "r" }, onError,
    authenticateUser: passwordLogin({ secret: SECRET.loginKey, throttle: false, verify: () => ({ id: "" }) }),
  });
  await broken.clients.register({ client_id: "spa", name: "SPA", type: "public", redirect_uris: [REDIRECT], scopes: ["read"] });
  const browser = new Browser(broken);
  const url = authorizeUrl({ response_type: "code", client_id: "spa", redirect_uri: REDIRECT, scope: "read", code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", code_challenge_method: "S256" });
  const page = await browser.go("login page", url);
  await browser.go("sign in with a broken verify hook", url, { method: "POST", headers: form, body: new URLSearchParams({ username: "alice", password: SECRET.password, csrf: csrfIn(page.body) }) });
});

test("the Node adapter's own log of a failing handler does not carry the request's token", async () => {
  const server = await makeServer();
  const issued = JSON.parse((await token(server, "client_credentials for the adapter", { grant_type: "client_credentials", client_id: "backend", client_secret: SECRET.backend, scope: "export" })).body) as Record<string, string>;
  // A resource handler that fails; the adapter logs it with its default logger (console.error).
  const failing = server.protect("export", () => {
    throw new Error("Report generation failed");
  });
  const served = await serveNode({ fetch: failing }, { port: 0 });
  try {
    // RFC 6750 §2.3 lets a client send the token as a query parameter too; §5.3 warns that URLs end up in logs.
    const response = await fetch(`${served.url}/api/reports?access_token=${issued.access_token}`, { headers: { authorization: `Bearer ${issued.access_token}` } });
    await capture("resource call through the Node adapter", response);
    expect(response.status).toBe(500);
  } finally {
    await served.close();
  }
});

test("no secret, code, token, verifier, password or hash of one appears in any output", async () => {
  restoreConsole();
  // Not of a verifier: its SHA-256 is the code_challenge, public by design (RFC 7636 §4.2).
  const hashable = [...secrets].filter(([, kind]) => !kind.includes("verifier"));
  const hashes = await Promise.all(hashable.map(async ([value, kind]): Promise<[string, string]> => [await sha256(value), `SHA-256 of a ${kind}`]));
  for (const [hash, kind] of hashes) secrets.set(hash, kind);
  // Any 16 characters of a secret count: a truncated echo is still a leak.
  const WINDOW = 16;
  const windows = new Map<string, string>();
  for (const [value, kind] of secrets) {
    for (let i = 0; i + WINDOW <= value.length; i += 1) {
      const piece = value.slice(i, i + WINDOW);
      windows.set(piece, kind);
    }
  }
  const whole = [...secrets].filter(([value]) => value.length < WINDOW);
  const leaks: string[] = [];
  for (const output of outputs) {
    let text = output.text;
    for (const allowed of output.allowed) text = text.split(allowed).join("<issued here>");
    for (const [value, kind] of whole) if (text.includes(value)) leaks.push(`${kind} in ${output.where}`);
    for (let i = 0; i + WINDOW <= text.length; i++) {
      const kind = windows.get(text.slice(i, i + WINDOW));
      if (kind !== undefined) {
        leaks.push(`${kind} in ${output.where}: …${text.slice(Math.max(0, i - 60), i + 60).replace(/\s+/g, " ")}…`);
        break;
      }
    }
  }
  figures(
    `hygiene: ${tally.responses} responses, ${tally.onError} onError reports, ${tally.console} console lines and ` +
      `${tally.exceptions} exceptions checked for ${secrets.size} secrets and their hashes: ${leaks.length} leaks`,
  );
  expect(leaks).toEqual([]);
  expect(tally.onError, "onError was exercised").toBeGreaterThan(20);
  expect(tally.responses).toBeGreaterThan(80);
});
