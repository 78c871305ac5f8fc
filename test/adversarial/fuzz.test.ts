// Fuzzing (issue "Adversarial testing", part 1): property-based tests of the token endpoint, the authorization
// endpoint and the resource guard, with random and mutated inputs. The properties: never a 5xx, never a thrown
// exception escaping the handler, never a stack trace or internal detail; every token-endpoint error is RFC 6749
// §5.2 JSON; nothing is issued to a request that should fail; no redirect goes to an unregistered URI.
//
// FUZZ_RUNS (default 20 480) is the number of generated requests across all properties, shared out by weight;
// FUZZ_SEED replays a run. A longer run: FUZZ_RUNS=200000 npx vitest run test/adversarial/fuzz.test.ts
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Readable } from "node:stream";
import { type AuthorizationServer, OAuthError } from "../../mod.ts";
import { nodeRequest } from "../../lib/adapters/node_request.ts";
import {
  AUTHORIZE_URL, codeRequest, consent, csrfOf, type Fixture, fixture, getAuthorize, ISSUER, OTHER_REDIRECT, pkce,
  postToken, REDIRECT, SECRETS,
} from "../helpers.ts";
import {
  authorization, bodyOf, contentType, encodePairs, encoding, headerValue, KNOWN_CLIENTS, mayHaveBody, method,
  mutatedPairs, nasty, type Pairs, paramName, paramValue, pick, Q_URIS, randomPairs, remoteAddress, tokenTarget,
} from "./arbitraries.ts";
import { authorizeInput, authorizeRequest, CHALLENGE, isRegistered, redirectProblems } from "./authorize_inputs.ts";
import { env, envInt, figures, internalDetail, oauthErrorProblems, type Seen, see, TOKEN_ERROR_CODES } from "./support.ts";
import { applyMutation, exchange, mutation, SCENARIOS, toRequest } from "./token_mutations.ts";

const TOTAL = envInt("FUZZ_RUNS", 20_480);
const SEED = env("FUZZ_SEED") === undefined ? Math.floor(Math.random() * 2 ** 31) : envInt("FUZZ_SEED", 1);

/** Each property's share of FUZZ_RUNS. */
const SHARES = {
  "token: crash": 0.14,
  "token: §5.2 errors": 0.1,
  "token: nothing issued": 0.1,
  "raw request": 0.1,
  "token: mutations": 0.06,
  "authorize: crash": 0.14,
  "authorize: redirects": 0.1,
  "authorize: consent": 0.06,
  "guard: verifyAuthorization": 0.1,
  "guard: protect()": 0.1,
} as const;
type Property = keyof typeof SHARES;
const runsOf = (name: Property) => Math.max(20, Math.round(TOTAL * SHARES[name]));
/** Generous: a run costs well under a millisecond on one core; this only stops a hang. */
const timeoutOf = (name: Property) => 20_000 + runsOf(name) * 10;

/** Generated requests per property, and the properties that failed. */
const sent = new Map<string, number>();
const failed: string[] = [];
const count = (name: Property, n = 1) => sent.set(name, (sent.get(name) ?? 0) + n);
/** Outcomes worth reporting: how often the deep paths (issuance, redirects, valid tokens) were reached. */
const outcomes = new Map<string, number>();
const saw = (what: string) => outcomes.set(what, (outcomes.get(what) ?? 0) + 1);

/** Runs a property for its share of the budget; counts it, and records a failure for the summary. */
async function check<T>(name: Property, arbitrary: fc.Arbitrary<T>, predicate: (value: T) => Promise<void>): Promise<void> {
  const numRuns = runsOf(name);
  try {
    await fc.assert(fc.asyncProperty(arbitrary, async (value) => {
      count(name);
      await predicate(value);
    }), {
      numRuns,
      seed: SEED,
      interruptAfterTimeLimit: timeoutOf(name) - 5_000,
      markInterruptAsFailure: true,
    });
  } catch (error) {
    failed.push(name);
    // Huge generated values would fill the log: collapse every long run of a repeated unit.
    const message = String(error instanceof Error ? error.message : error).replace(/(.{1,8}?)\1{40,}/gs, (run, unit: string) => `${unit}…(${run.length} chars)`);
    throw new Error(message, { cause: error instanceof Error ? error.cause : undefined });
  }
  expect(sent.get(name) ?? 0).toBeGreaterThanOrEqual(numRuns);
}

afterAll(() => {
  const total = [...sent.values()].reduce((a, b) => a + b, 0);
  const parts = [...sent].map(([name, n]) => `${name} ${n}`).join(", ");
  const reached = [...outcomes].map(([what, n]) => `${n} ${what}`).join(", ");
  figures(
    `fuzz: ${total} requests, ${failed.length} failures` + (failed.length ? ` (${failed.join("; ")})` : "") +
      ` [seed ${SEED}; ${parts}; reached: ${reached}]`,
  );
});

/** A CORS preflight's answer (Fetch standard): 204, no body, so it can issue or spend nothing. */
function isPreflightAnswer(method: string, seen: Seen): boolean {
  return method.toUpperCase() === "OPTIONS" && seen.status === 204 && seen.body === "";
}

/** What must never happen whatever the request: a 5xx, an internal detail in the body. */
function crashProblems(seen: Seen): string[] {
  const problems: string[] = [];
  if (seen.status >= 500) problems.push(`status ${seen.status}: ${seen.body.slice(0, 200)}`);
  const leak = internalDetail(seen.body);
  if (leak !== undefined) problems.push(`internal detail in the body, ${leak}`);
  return problems;
}

function fail(problems: string[], context: unknown): void {
  if (problems.length > 0) throw new Error(`${problems.join("; ")}\n  request: ${show(context)}`);
}

function show(value: unknown): string {
  return JSON.stringify(value, (_, v) => {
    if (typeof v === "string" && v.length > 200) return `${v.slice(0, 80)}…(${v.length} chars)`;
    if (v instanceof Uint8Array) return `bytes[${v.length}]`;
    return v;
  });
}

/** Sends a request, failing on an exception that escapes the handler. */
async function fetchSeen(server: AuthorizationServer, request: Request, info?: unknown): Promise<Seen> {
  let response: Response;
  try {
    response = await server.fetch(request, info);
  } catch (error) {
    throw new Error(`server.fetch threw: ${String(error)}`);
  }
  return see(response);
}

// ---------------------------------------------------------------------------------------------------------------
// The token endpoint (and its form-reading siblings, revocation and introspection).

/** Codes and tokens the token-endpoint server has issued, with what each was issued for. */
interface Issued {
  codes: Map<string, { client_id: string; redirect_uri: string; verifier?: string }>;
  refresh: Map<string, { client_id: string; scope: string }>;
  access: Map<string, { client_id: string; scope: string }>;
}

interface TokenInput {
  url: string;
  method: string;
  contentType: string | undefined;
  body: string | Uint8Array<ArrayBuffer>;
  authorization: string | undefined;
  extra: [string, string][];
  address: string | undefined;
}

describe("token endpoint", () => {
  let f: Fixture;
  const issued: Issued = { codes: new Map(), refresh: new Map(), access: new Map() };
  let words: string[] = [];

  /** Mints codes for both code clients, so that valid code exchanges stay among the templates. */
  async function mint(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const { verifier, challenge } = await pkce();
      const spa = await consent(f.server, codeRequest("spa", { code_challenge: challenge, code_challenge_method: "S256" }));
      issued.codes.set(spa.searchParams.get("code")!, { client_id: "spa", redirect_uri: REDIRECT, verifier });
      const web = await consent(f.server, codeRequest("web", i % 2 ? { redirect_uri: OTHER_REDIRECT } : {}));
      issued.codes.set(web.searchParams.get("code")!, { client_id: "web", redirect_uri: i % 2 ? OTHER_REDIRECT : REDIRECT });
    }
  }

  beforeAll(async () => {
    f = await fixture();
    await mint(30);
    // Spend a third of the codes, so that refresh tokens exist (and replays of spent codes get tried).
    for (const [code, about] of [...issued.codes].slice(0, 20)) {
      const fields: Record<string, string> = { grant_type: "authorization_code", client_id: about.client_id, redirect_uri: about.redirect_uri, code };
      if (about.verifier !== undefined) fields.code_verifier = about.verifier;
      else fields.client_secret = SECRETS.web;
      remember(await (await postToken(f.server, fields)).json(), about.client_id);
    }
    words = [
      "authorization_code", "refresh_token", "client_credentials", "password", "implicit", ...Object.keys(KNOWN_CLIENTS),
      ...Object.values(SECRETS), "wrong-secret-0123456789", REDIRECT, OTHER_REDIRECT, ...Q_URIS, "read", "write", "export",
      "admin", "read write", "S256", "access_token", "refresh_token", "Bearer",
    ];
  });

  function remember(body: Record<string, unknown>, clientId: string): void {
    const scope = String(body.scope);
    if (typeof body.access_token === "string") issued.access.set(body.access_token, { client_id: clientId, scope });
    if (typeof body.refresh_token === "string") issued.refresh.set(body.refresh_token, { client_id: clientId, scope });
  }

  /** Valid requests of every grant, from the newest codes and tokens: the seeds of mutated inputs. */
  function templates(): Pairs[] {
    const cc: Pairs[] = [
      [["grant_type", "client_credentials"], ["client_id", "backend"], ["client_secret", SECRETS.backend], ["scope", "export"]],
      [["grant_type", "client_credentials"], ["client_id", "backend-refresh"], ["client_secret", SECRETS.backendRefresh], ["scope", "export"]],
    ];
    const list: Pairs[] = [...cc, ...cc, ...cc];
    for (const [code, about] of [...issued.codes].slice(-8)) {
      const pairs: Pairs = [["grant_type", "authorization_code"], ["client_id", about.client_id], ["redirect_uri", about.redirect_uri], ["code", code]];
      pairs.push(about.verifier === undefined ? ["client_secret", SECRETS.web] : ["code_verifier", about.verifier]);
      list.push(pairs);
    }
    for (const [token, about] of [...issued.refresh].slice(-8)) {
      const pairs: Pairs = [["grant_type", "refresh_token"], ["client_id", about.client_id], ["refresh_token", token]];
      if (about.client_id !== "spa") pairs.push(["client_secret", KNOWN_CLIENTS[about.client_id]!.secret!]);
      list.push(pairs, [["token", token], ["client_id", about.client_id], ...(about.client_id === "spa" ? [] : [["client_secret", KNOWN_CLIENTS[about.client_id]!.secret!] as [string, string]])]);
    }
    return list;
  }

  const dictionary = () => [...words, ...pick2(issued.codes.keys()), ...pick2(issued.refresh.keys()), ...pick2(issued.access.keys())];
  const value = paramValue(dictionary);
  const input: fc.Arbitrary<TokenInput> = fc.record({
    url: tokenTarget,
    method,
    contentType,
    body: bodyOf(fc.oneof(
      { weight: 6, arbitrary: fc.tuple(mutatedPairs(templates, value), encoding).map(([p, e]) => encodePairs(p, e)) },
      { weight: 3, arbitrary: fc.tuple(randomPairs(value), encoding).map(([p, e]) => encodePairs(p, e)) },
      { weight: 1, arbitrary: fc.oneof(fc.constant(""), nasty, fc.dictionary(paramName, value).map((o) => JSON.stringify(o)), fc.json()) },
    )),
    authorization,
    extra: fc.array(fc.tuple(fc.constantFrom("x-long", "cookie", "content-length", "accept", "x-forwarded-for"), headerValue), { maxLength: 2 }),
    // Mostly fresh addresses, so the throttle lets most requests through; a few fixed ones, which it blocks.
    address: fc.oneof({ weight: 1, arbitrary: remoteAddress }, { weight: 5, arbitrary: fc.noBias(fc.oneof(fc.ipV4(), fc.ipV6())) }),
  });

  let runs = 0;
  const send = async (i: TokenInput) => {
    if (++runs % 64 === 0) await mint(2);
    return fetchSeen(f.server, tokenRequest(i), i.address === undefined ? undefined : { remoteAddr: { hostname: i.address } });
  };

  test("never a 5xx, an escaping exception, or an internal detail", async () => {
    await check("token: crash", input, async (i) => fail(crashProblems(await send(i)), i));
  }, timeoutOf("token: crash"));

  test("every error is RFC 6749 §5.2 JSON, with no-store and the right status", async () => {
    await check("token: §5.2 errors", input, async (i) => {
      const seen = await send(i);
      if (seen.status < 400 || seen.status === 404) return; // 404: not this endpoint (a near-miss address)
      const codes = [...TOKEN_ERROR_CODES, "unsupported_token_type"];
      const problems = oauthErrorProblems(seen, codes);
      if (![400, 401, 405, 413, 429].includes(seen.status)) problems.push(`status ${seen.status}`);
      fail(problems, i);
    });
  }, timeoutOf("token: §5.2 errors"));

  test("nothing is issued to a request that should fail; a 2xx is a real answer to a real credential", async () => {
    await check("token: nothing issued", input, async (i) => {
      const seen = await send(i);
      const problems: string[] = [];
      if (seen.status >= 200 && seen.status < 300) {
        saw("token-endpoint 2xx judged");
        problems.push(...await judgeSuccess(i, seen));
      }
      else if (/"access_token"\s*:/.test(seen.body)) problems.push(`a ${seen.status} carries an access token`);
      fail(problems, i);
    });
  }, timeoutOf("token: nothing issued"));

  /**
   * Whether a 2xx was earned: the oracle decodes the request itself (base64, form encoding) and checks the
   * necessary conditions: one authentication method, the client's real secret (or none for a public client),
   * no repeated parameter, and a code or refresh token really issued to that client.
   */
  async function judgeSuccess(i: TokenInput, seen: Seen): Promise<string[]> {
    const problems: string[] = [];
    const sent = tokenRequest(i); // as fetch normalised it (header values trimmed, method upper-cased)
    const url = new URL(sent.url);
    if (url.pathname.startsWith("/.well-known/")) return problems; // the public metadata document
    if (isPreflightAnswer(sent.method, seen)) return problems; // a CORS preflight: headers only, nothing issued
    const endpoint = url.pathname === "/revoke" ? "revoke" : url.pathname === "/introspect" ? "introspect" : "token";
    const text = typeof i.body === "string" ? i.body : new TextDecoder().decode(i.body);
    if (!mayHaveBody(i.method) || i.method.toUpperCase() !== "POST") problems.push(`2xx for method ${i.method}`);
    const media = (i.contentType ?? (typeof i.body === "string" ? "text/plain" : "")).split(";")[0]!.trim().toLowerCase();
    if (media !== "application/x-www-form-urlencoded") problems.push(`2xx for content-type ${JSON.stringify(i.contentType)}`);
    const form = new URLSearchParams(text);
    const names = [...form.keys()];
    if (new Set(names).size !== names.length) problems.push("2xx despite a repeated parameter");
    const get = (name: string) => (form.get(name) || undefined);

    let id: string | undefined;
    let secret: string | undefined;
    let basic = false;
    const header = sent.headers.get("authorization");
    if (header !== null && /^basic /i.test(header)) {
      basic = true;
      try {
        const decoded = atob(header.slice(6).trim());
        const colon = decoded.indexOf(":");
        const unform = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
        id = unform(decoded.slice(0, colon));
        secret = unform(decoded.slice(colon + 1));
        if (colon < 0) problems.push("2xx for a Basic header without a colon");
        if (get("client_secret") !== undefined) problems.push("2xx with two authentication methods");
      } catch {
        problems.push("2xx for a malformed Basic header");
      }
    } else {
      id = get("client_id");
      secret = get("client_secret");
    }
    const client = id !== undefined && Object.hasOwn(KNOWN_CLIENTS, id) ? KNOWN_CLIENTS[id] : undefined;
    if (client === undefined || !client.active) return [...problems, `2xx for client ${JSON.stringify(id)}`];
    if (client.type === "confidential" && secret !== client.secret) problems.push("2xx without the client's secret");
    if (client.type === "public" && (basic || secret !== undefined)) problems.push("2xx for a public client that sent a secret");
    if (endpoint === "revoke") return problems;
    if (endpoint === "introspect") {
      if (client.type === "public") problems.push("introspection for a public client");
      const body = JSON.parse(seen.body) as { active?: boolean };
      const token = get("token") ?? "";
      if (body.active && !issued.access.has(token) && !issued.refresh.has(token)) problems.push("introspection says active for an unknown token");
      return problems;
    }

    let body: Record<string, unknown>;
    try {
      body = JSON.parse(seen.body) as Record<string, unknown>;
    } catch {
      return [...problems, `2xx with a body that is not JSON: ${JSON.stringify(seen.body.slice(0, 80))}`];
    }
    const keys = Object.keys(body).sort().join(",");
    if (keys !== "access_token,expires_in,scope,token_type" && keys !== "access_token,expires_in,refresh_token,scope,token_type") {
      problems.push(`token response members: ${keys}`);
    }
    if (body.token_type !== "Bearer" || body.expires_in !== 3600) problems.push("token_type or expires_in wrong");
    const grant = get("grant_type");
    if (grant === "client_credentials") {
      if (client.type !== "confidential" || !id!.startsWith("backend")) problems.push(`client_credentials for ${id}`);
      if (get("scope") === undefined || !client.scopes.includes(get("scope")!) || body.scope !== get("scope")) problems.push("scope");
    } else if (grant === "refresh_token") {
      const about = issued.refresh.get(get("refresh_token") ?? "");
      if (about === undefined || about.client_id !== id) problems.push("a refresh for a token not issued to this client");
      else if (body.scope !== about.scope) problems.push("a refresh changed the scope");
    } else if (grant === "authorization_code") {
      const about = issued.codes.get(get("code") ?? "");
      if (about === undefined || about.client_id !== id) problems.push("tokens for a code not issued to this client");
      else {
        if (get("redirect_uri") !== about.redirect_uri) problems.push("tokens despite another redirect_uri");
        if (get("code_verifier") !== about.verifier) problems.push("tokens without the code's verifier");
      }
    } else problems.push(`tokens for grant_type ${JSON.stringify(grant)}`);
    if (problems.length === 0) {
      remember(body, id!);
      const info = await f.server.verifyAuthorization(`Bearer ${String(body.access_token)}`);
      if (info.client_id !== id || info.scope !== body.scope) problems.push("the issued token does not work as issued");
    }
    return problems;
  }

  // A valid request, then one change: drop, repeat, blank or alter a field, another client, another method or
  // media type (each must fail, and must not spend the code or refresh token), or a change that means nothing
  // (an unknown parameter, another order, percent-encoding, Basic instead of the form), which must still work.
  test("a mutated valid request gets nothing, spends nothing; a neutral change still works", async () => {
    const m = await fixture({ throttle: false });
    await check("token: mutations", fc.tuple(fc.constantFrom(...SCENARIOS), mutation), async ([scenario, change]) => {
      const base = await scenario.make(m.server);
      const { request, neutral, label } = applyMutation(base, change);
      const seen = await fetchSeen(m.server, request);
      const context = { scenario: scenario.name, mutation: label };
      if (neutral) {
        fail(seen.status === 200 && /"access_token"\s*:/.test(seen.body) ? [] : [`a neutral change failed: ${seen.status} ${seen.body}`], context);
        return;
      }
      const preflight = isPreflightAnswer(request.method, seen);
      const problems = (seen.status < 400 && !preflight) || /"access_token"\s*:/.test(seen.body) ? [`issued despite the change: ${seen.status} ${seen.body}`] : [];
      if (!preflight) problems.push(...oauthErrorProblems(seen));
      // RFC 6749 §10.5 / RFC 9700 §4.14: a failed try must not cost the legitimate holder its code or token.
      const retry = await fetchSeen(m.server, toRequest(base));
      count("token: mutations");
      if (retry.status !== 200) problems.push(`the unchanged request then failed: ${retry.status} ${retry.body}`);
      fail(problems, context);
    });
  }, timeoutOf("token: mutations"));
});

function pick2(keys: Iterable<string>): string[] {
  return [...keys].slice(-40);
}

function tokenRequest(i: TokenInput): Request {
  const headers = new Headers();
  if (i.contentType !== undefined) headers.set("content-type", i.contentType);
  if (i.authorization !== undefined) headers.set("authorization", i.authorization);
  for (const [name, value] of i.extra) headers.append(name, value);
  return new Request(i.url, { method: i.method, headers, body: mayHaveBody(i.method) ? i.body : null });
}

// ---------------------------------------------------------------------------------------------------------------
// Raw requests: what the Node adapter hands over (a lazy Request over Node's message, as Express or a proxy
// may pass it on) is not limited to what `new Request` can build.

describe("server.fetch on the Node adapter's raw requests", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture();
  });

  const anyString = fc.oneof(nasty, fc.string({ unit: "binary", maxLength: 30 }), fc.constantFrom("\r\nX-Injected: 1", "a\0b", "\uD800x"));
  const input = fc.record({
    method: fc.oneof(method, anyString),
    target: fc.oneof(
      fc.constantFrom(
        "/index.php?module=OAuth2&action=token", "/token", "/revoke", "/introspect", "/authorize", "*", "", "index.php",
        "/index.php?module=OAuth2&action=authorize", "/.well-known/oauth-authorization-server", "http://evil.example/token",
        "/token?#", "/index.php?module=OAuth2&action=hasOwnProperty", "//", "/authorize?client_id=spa&client_id=web",
      ),
      fc.tuple(fc.constantFrom("/authorize?", "/index.php?module=OAuth2&action=authorize&", "/token?"), randomPairs(anyString), encoding)
        .map(([prefix, pairs, enc]) => prefix + encodePairs(pairs, enc)),
      fc.tuple(fc.constant("/authorize?"), fc.constant(codeRequest("spa", { code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", code_challenge_method: "S256" })), fc.array(fc.tuple(paramName, anyString), { maxLength: 3 }))
        .map(([prefix, base, extra]) => prefix + new URLSearchParams([...Object.entries(base), ...extra]).toString()),
      anyString,
    ),
    headers: fc.array(fc.tuple(fc.constantFrom("content-type", "authorization", "cookie", "x-test-user", "content-length", "host"), fc.oneof(anyString, headerValue, fc.constant("application/x-www-form-urlencoded"))), { maxLength: 4 }),
    body: fc.oneof(
      fc.tuple(randomPairs(anyString), encoding).map(([p, e]) => encodePairs(p, e)),
      anyString,
      fc.string({ unit: "binary", maxLength: 200 }),
      fc.constant("grant_type=client_credentials&client_id=backend&client_secret=" + SECRETS.backend + "&scope=export"),
    ),
    address: fc.option(anyString, { nil: undefined }),
  });

  test("raw strings (CR, LF, NUL, lone surrogates, any method or target) never break the core", async () => {
    await check("raw request", input, async (i) => {
      const headers = new Map<string, string>();
      const rawHeaders: string[] = []; // as Node keeps them: repeats apart
      for (const [name, value] of i.headers) {
        // The fixture's hook signs in whoever x-test-user names; an empty name would be the hook's bug (a 500).
        if (name === "x-test-user" && value.trim() === "") continue;
        // Node's parser refuses what is not a valid field value (NUL, CR, LF, ...): no socket delivers it.
        try {
          new Headers().set(name, value);
        } catch {
          continue;
        }
        headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value);
        rawHeaders.push(name, value);
      }
      const message = Object.assign(Readable.from(i.body === "" ? [] : [new TextEncoder().encode(i.body)]), {
        method: i.method,
        url: i.target,
        headers: Object.fromEntries(headers),
        rawHeaders,
        socket: {},
      });
      const request = nodeRequest(message, 16_384);
      let response;
      try {
        response = await f.server.fetch(request, { remoteAddr: { hostname: i.address } });
      } catch (error) {
        throw new Error(`fetch threw: ${String(error)}\n  request: ${show(i)}`);
      }
      let seen: Seen;
      try {
        seen = await see(response);
      } catch (error) {
        throw new Error(`the response cannot be sent (${String(error)}): ${show(response)}\n  request: ${show(i)}`);
      }
      const problems = crashProblems(seen);
      if (seen.status < 400 && !["GET", "HEAD", "POST"].includes(i.method) && !isPreflightAnswer(i.method, seen)) {
        problems.push(`a ${seen.status} for method ${JSON.stringify(i.method)}`);
      }
      fail(problems, i);
    });
  }, timeoutOf("raw request"));
});

// ---------------------------------------------------------------------------------------------------------------
// The authorization endpoint.

describe("authorization endpoint", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture();
    await f.server.clients.register({ client_id: "q", name: "Query app", type: "public", redirect_uris: [...Q_URIS], scopes: ["read"] });
    await f.server.clients.register({
      client_id: "paused", client_secret: KNOWN_CLIENTS.paused!.secret!, name: "Paused", type: "confidential",
      redirect_uris: [REDIRECT], scopes: ["read"],
    });
    await f.server.clients.pause("paused");
  });

  test("never a 5xx, an escaping exception, or an internal detail", async () => {
    await check("authorize: crash", authorizeInput, async (i) => {
      const seen = await fetchSeen(f.server, authorizeRequest(i));
      const problems = crashProblems(seen);
      if (seen.status < 400 && !["GET", "HEAD", "POST"].includes(authorizeRequest(i).method)) problems.push(`a ${seen.status} for method ${i.method}`);
      const type = seen.headers.get("content-type") ?? "";
      if (seen.status >= 400 && seen.status !== 404 && !/^text\/html/.test(type)) problems.push(`a ${seen.status} that is not an HTML page: ${type}`);
      fail(problems, i);
    });
  }, timeoutOf("authorize: crash"));

  test("a redirect only goes to a redirect_uri registered for the client named, with only OAuth's parameters added", async () => {
    await check("authorize: redirects", authorizeInput, async (i) => {
      const request = authorizeRequest(i);
      const seen = await fetchSeen(f.server, request);
      const problems = redirectProblems(request.url, seen, false);
      if (seen.status >= 300 && seen.status < 400) saw("error redirects checked");
      if (seen.status === 200 && /<form method="post"[^>]*>\s*<input type="hidden" name="csrf"/.test(seen.body) && !seen.body.includes("Sign in")) {
        // A consent page is only for a request naming an active client and one of its own redirect URIs.
        const query = new URL(request.url).searchParams;
        const client = Object.hasOwn(KNOWN_CLIENTS, query.get("client_id") ?? "") ? KNOWN_CLIENTS[query.get("client_id")!] : undefined;
        if (!client?.active || !isRegistered(client.redirect_uris, query.get("redirect_uri") ?? "")) problems.push("a consent page for an unregistered request");
      }
      fail(problems, i);
    });
  }, timeoutOf("authorize: redirects"));

  // A real consent form (its CSRF token made for one request), posted back with one change to the request or
  // the form. The code comes back only for "allow" with that request's own token and a change that means
  // nothing; anything that alters what the user approved gets no code.
  test("a code is only issued for an allowed consent whose CSRF token was made for exactly this request", async () => {
    const bases: Pairs[] = [];
    for (const params of [
      codeRequest("spa", { code_challenge: CHALLENGE, code_challenge_method: "S256" }),
      codeRequest("web"),
      codeRequest("web", { redirect_uri: OTHER_REDIRECT, scope: "write", state: "é & =" }),
      codeRequest("q", { redirect_uri: Q_URIS[0]!, code_challenge: CHALLENGE, code_challenge_method: "S256" }),
      codeRequest("q", { redirect_uri: Q_URIS[2]!, code_challenge: CHALLENGE, code_challenge_method: "S256" }),
    ]) bases.push(Object.entries(params));
    // A consent approval is single-use (issue 15, finding 2): every run gets its own, unspent consent forms, so
    // a refusal is due to the change alone.
    const formOf = async (params: Pairs) => csrfOf(await (await getAuthorize(f.server, Object.fromEntries(params))).text());
    const consentInput = fc.record({
      base: fc.nat(),
      change: fc.oneof(
        fc.record({ kind: fc.constantFrom("none", "unknown", "reorder", "percent", "clean-path", "extra-form"), at: fc.nat() }),
        fc.record({ kind: fc.constantFrom("drop", "repeat", "flip", "other-uri", "user", "other-csrf", "flip-csrf", "no-csrf", "decision", "content-type"), at: fc.nat() }),
      ),
    });
    await check("authorize: consent", consentInput, async ({ base: b, change }) => {
      const base = { params: bases[b % bases.length]!, csrf: await formOf(bases[b % bases.length]!) };
      const pairs = base.params.map(([k, v]): [string, string] => [k, v]);
      const at = change.at % pairs.length;
      let prefix = AUTHORIZE_URL + "&";
      let query: string | undefined;
      let form: Pairs = [["decision", "allow"], ["csrf", base.csrf]];
      let user = "alice";
      let type = "application/x-www-form-urlencoded";
      const neutral = ["none", "unknown", "reorder", "percent", "clean-path", "extra-form"].includes(change.kind);
      switch (change.kind) {
        case "unknown": pairs.splice(at, 0, ["prompt", "consent"]); break;
        case "reorder": pairs.reverse(); break;
        case "percent": query = pairs.map(([k, v]) => `${k}=${Array.from(new TextEncoder().encode(v), (x) => "%" + x.toString(16).padStart(2, "0")).join("")}`).join("&"); break;
        case "clean-path": prefix = `${ISSUER}/authorize?`; break;
        case "extra-form": form.push(["remember", "yes"]); break;
        case "drop": pairs.splice(at, 1); break;
        case "repeat": pairs.push([pairs[at]![0], pairs[at]![1]]); break;
        case "flip": pairs[at]![1] = pairs[at]![1].slice(0, -1) + (pairs[at]![1].endsWith("x") ? "y" : "x"); break;
        case "other-uri": {
          const id = pairs.find(([k]) => k === "client_id")![1];
          const other = KNOWN_CLIENTS[id]!.redirect_uris.find((u) => u !== pairs.find(([k]) => k === "redirect_uri")![1]);
          pairs.forEach((p) => { if (p[0] === "redirect_uri") p[1] = other ?? REDIRECT + "/"; });
          break;
        }
        case "user": user = "mallory"; break;
        case "other-csrf": form = [["decision", "allow"], ["csrf", await formOf(bases[(b + 1) % bases.length]!)]]; break;
        case "flip-csrf": form = [["decision", "allow"], ["csrf", base.csrf.slice(0, -2) + (base.csrf.endsWith("AA") ? "BB" : "AA")]]; break;
        case "no-csrf": form = [["decision", "allow"]]; break;
        case "decision": form = [["decision", ["deny", "ALLOW", "allow ", "", "yes"][at % 5]!], ["csrf", base.csrf]]; break;
        case "content-type": type = ["text/plain", "application/json", "multipart/form-data; boundary=x"][at % 3]!; break;
      }
      const url = prefix + (query ?? new URLSearchParams(pairs).toString());
      const request = new Request(url, { method: "POST", headers: { "content-type": type, "x-test-user": user }, body: new URLSearchParams(form).toString() });
      const seen = await fetchSeen(f.server, request);
      const problems = [...crashProblems(seen), ...redirectProblems(request.url, seen, neutral)];
      const code = seen.status === 303 && new URL(seen.headers.get("location") ?? "x:").searchParams.has("code");
      if (code) saw("codes issued on consent");
      if (neutral && !code) problems.push(`no code for an unchanged consent: ${seen.status} ${seen.headers.get("location") ?? seen.body.slice(0, 120)}`);
      // Then the form once more, unchanged: a spent approval (an allow or a deny) gives nothing a second time;
      // a refused one was not spent, and the user's own unchanged form still gets its code.
      const spent = neutral || (change.kind === "decision" && at % 5 === 0);
      const again = new Request(AUTHORIZE_URL + "&" + new URLSearchParams(base.params).toString(), {
        method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "x-test-user": "alice" },
        body: new URLSearchParams({ decision: "allow", csrf: base.csrf }).toString(),
      });
      const replay = await fetchSeen(f.server, again);
      const replayCode = replay.status === 303 && new URL(replay.headers.get("location") ?? "x:").searchParams.has("code");
      problems.push(...crashProblems(replay), ...redirectProblems(again.url, replay, !spent));
      if (spent && (replayCode || replay.status !== 403)) problems.push(`a spent consent form answered again: ${replay.status} ${replay.headers.get("location") ?? ""}`);
      if (!spent && !replayCode) problems.push(`a refused request spent the consent form: ${replay.status} ${replay.body.slice(0, 120)}`);
      fail(problems, { base: base.params, change });
    });
  }, timeoutOf("authorize: consent"));
});

// ---------------------------------------------------------------------------------------------------------------
// The resource guard (RFC 6750).

describe("resource guard", () => {
  let f: Fixture;
  /** Access tokens that must pass, with their scope; every other string must fail. */
  const live = new Map<string, { client_id: string; scope: string; user_id?: string }>();
  const dead: string[] = [];

  beforeAll(async () => {
    f = await fixture();
    const { server, clock } = f;
    await server.clients.register({ client_id: "pausable", client_secret: "pausable-secret-0123456789", name: "P", type: "confidential", scopes: ["export"], grant_types: ["client_credentials"] });
    const cc = async (id: string, secret: string, scope: string) =>
      (await (await postToken(server, { grant_type: "client_credentials", client_id: id, client_secret: secret, scope })).json()) as Record<string, string>;
    for (let i = 0; i < 3; i++) dead.push((await cc("backend", SECRETS.backend, "export")).access_token!);
    clock.advance(3601); // the tokens above have expired
    dead.push((await cc("pausable", "pausable-secret-0123456789", "export")).access_token!);
    await server.clients.pause("pausable");
    for (const scope of ["export", "read"]) live.set((await cc("backend", SECRETS.backend, scope)).access_token!, { client_id: "backend", scope });
    const url = await consent(server, codeRequest("web"));
    const tokens = await exchange(server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code: url.searchParams.get("code")! });
    live.set(tokens.access_token!, { client_id: "web", scope: "read", user_id: "alice" });
    dead.push(tokens.refresh_token!, (await webCodeOnly(server)));
    const revoked = (await cc("backend", SECRETS.backend, "read")).access_token!;
    await server.fetch(new Request(`${ISSUER}/revoke`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ token: revoked, client_id: "backend", client_secret: SECRETS.backend }) }));
    dead.push(revoked);
  });

  const tokenish = fc.oneof(
    { weight: 4, arbitrary: fc.nat().map((i) => pick([...live.keys()], i)) },
    { weight: 2, arbitrary: fc.nat().map((i) => pick(dead, i)) },
    {
      weight: 3,
      arbitrary: fc.tuple(fc.nat(), fc.constantFrom("flip", "truncate", "append", "prefix", "case", "pad"), fc.nat()).map(([i, how, pos]) => {
        const t = pick([...live.keys()], i);
        const p = pos % t.length;
        if (how === "flip") return t.slice(0, p) + (t[p] === "A" ? "B" : "A") + t.slice(p + 1);
        if (how === "truncate") return t.slice(0, p);
        if (how === "append") return t + "A";
        if (how === "prefix") return "A" + t;
        if (how === "case") return t.toUpperCase() === t ? t.toLowerCase() : t.toUpperCase();
        return t + "=";
      }),
    },
    { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9\-._~+/]{1,60}=*$/) },
    { weight: 2, arbitrary: nasty },
  );
  const scheme = fc.constantFrom("Bearer", "Bearer", "bearer", "BEARER", "BeArEr", "Bearer:", "Basic", "Token", "", "Bearer\t", "\0Bearer", "Bearer,", "MAC");
  const separator = fc.constantFrom(" ", " ", "  ", "\t", "", "\u00a0", ",", "=");
  const suffix = fc.constantFrom("", "", "", " ", "  ", ",", " , x", "=", "\r\n", "\0", " junk", "\t");
  const valid = fc.tuple(fc.constantFrom("Bearer ", "bearer ", "BEARER ", "Bearer   "), fc.nat(), fc.constantFrom("", " ", "  "))
    .map(([scheme, i, tail]) => scheme + pick([...live.keys()], i) + tail);
  const header = fc.oneof(
    { weight: 3, arbitrary: valid },
    { weight: 6, arbitrary: fc.tuple(scheme, separator, tokenish, suffix).map((parts) => parts.join("")) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 80 }) },
    { weight: 1, arbitrary: fc.constantFrom("Bearer " + "A".repeat(100_000), "B".repeat(70_000), "Bearer", "Bearer ", "") },
  );
  // The scope a resource demands is the developer's argument, so it is a scope token (RFC 6749 §3.3), not noise.
  const required = fc.oneof(fc.constantFrom(undefined, undefined, "read", "export", "write", "admin"), fc.stringMatching(/^[\x21\x23-\x5b\x5d-\x7e]{1,12}$/));

  /** What the oracle expects: the info for a live token sent as RFC 6750 §2.1 credentials, else undefined. */
  function expected(value: string, scope: string | undefined) {
    const m = /^[Bb][Ee][Aa][Rr][Ee][Rr] +([^ ]+) *$/.exec(value);
    const info = m ? live.get(m[1]!) : undefined;
    if (info === undefined) return { pass: false, insufficient: false };
    return { pass: scope === undefined || scope === info.scope, insufficient: scope !== undefined && scope !== info.scope, info };
  }

  test("verifyAuthorization: any header string ends in the token's info or an RFC 6750 error; only a live token passes", async () => {
    await check("guard: verifyAuthorization", fc.tuple(fc.oneof(header, fc.constant(null)), required), async ([value, scope]) => {
      const want = value === null ? { pass: false, insufficient: false } : expected(value, scope);
      const problems: string[] = [];
      try {
        const info = await f.server.verifyAuthorization(value, scope);
        saw("Bearer tokens accepted");
        if (!want.pass) problems.push(`accepted: ${JSON.stringify(info)}`);
        else if (info.client_id !== want.info!.client_id || info.scope !== want.info!.scope || info.user_id !== want.info!.user_id) problems.push(`wrong info ${JSON.stringify(info)}`);
      } catch (error) {
        if (!(error instanceof OAuthError)) problems.push(`threw ${String(error)}`);
        else {
          const challenge = error.headers["www-authenticate"] ?? "";
          if (want.pass) problems.push(`refused a live token: ${error.code}`);
          if (![400, 401, 403].includes(error.status)) problems.push(`status ${error.status}`);
          if (!challenge.startsWith(`Bearer realm="${ISSUER}"`)) problems.push(`challenge ${JSON.stringify(challenge)}`);
          if (/[\r\n\0]/.test(challenge)) problems.push("a control character in the challenge");
          if ((error.status === 403) !== want.insufficient) problems.push(`${error.status} ${error.code} for ${want.insufficient ? "a missing scope" : "a bad token"}`);
          for (const t of [...live.keys(), ...dead]) if (challenge.includes(t) || error.message.includes(t)) problems.push("the token is echoed");
        }
      }
      fail(problems, { value, scope });
    });
  }, timeoutOf("guard: verifyAuthorization"));

  test("protect() over fetch: never a 5xx; the handler runs only for a live token with the scope", async () => {
    const api = new Map<string, (request: Request) => Promise<Response>>();
    for (const scope of ["read", "export", "admin"]) api.set(scope, f.server.protect(scope, () => Response.json({ ok: true })));
    const latin1 = fc.oneof(
      { weight: 2, arbitrary: valid },
      { weight: 6, arbitrary: fc.tuple(scheme, separator, tokenish, suffix).map((parts) => parts.join("")) },
      { weight: 1, arbitrary: headerValue },
    ).map((v) => v.replace(/[^\x20-\xff\t]/g, "").trim());
    await check("guard: protect()", fc.tuple(fc.option(latin1, { nil: undefined }), fc.constantFrom("read", "export", "admin"), method), async ([value, scope, verb]) => {
      const headers: Record<string, string> = value === undefined ? {} : { authorization: value };
      const request = new Request(`${ISSUER}/api/reports`, { method: verb, headers });
      let seen: Seen;
      try {
        seen = await see(await api.get(scope)!(request));
      } catch (error) {
        throw new Error(`protect() threw ${String(error)} for ${show(value)}`);
      }
      const want = value === undefined ? { pass: false, insufficient: false } : expected(request.headers.get("authorization")!, scope);
      const problems = crashProblems(seen);
      if (want.pass !== (seen.status === 200)) problems.push(`status ${seen.status} (expected ${want.pass ? 200 : "a refusal"})`);
      if (seen.status !== 200) {
        if (![400, 401, 403].includes(seen.status)) problems.push(`status ${seen.status}`);
        if (!(seen.headers.get("www-authenticate") ?? "").startsWith(`Bearer realm="${ISSUER}"`)) problems.push("no Bearer challenge");
        problems.push(...oauthErrorProblems(seen, ["invalid_request", "invalid_token", "insufficient_scope"]));
      }
      fail(problems, { value, scope, verb });
    });
  }, timeoutOf("guard: protect()"));
});

async function webCodeOnly(server: AuthorizationServer): Promise<string> {
  return (await consent(server, codeRequest("web"))).searchParams.get("code")!;
}

