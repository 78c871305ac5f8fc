// Storage faults (issue "Adversarial testing", part 3). A fault injector wraps the store and breaks its k-th
// call, for every k across a whole flow and in every mode: it rejects, throws (synchronously, not even an Error),
// hangs (only storageTimeout ends the request), commits and then rejects, lands late (after the server gave up),
// or starts an outage. The server must answer a clear 5xx (JSON, or the HTML error page at the authorization
// endpoint); never hand out a code or token whose record was not saved (each one is looked up in the store,
// past the injector, the moment it is handed out); and once the fault clears, work at once, with no waiting
// for anything to expire (the clock never moves): the interrupted step succeeds when retried if the failed
// call changed nothing, and a complete new flow succeeds in every case.
import { afterAll, describe, expect, test } from "vitest";
import { memoryStorage } from "../../mod.ts";
import { authorizeUrl, codeRequest, csrfOf, type Fixture, fixture, getAuthorize, ISSUER, pkce, postToken, REDIRECT, SECRETS } from "../helpers.ts";
import { basicHeader } from "./arbitraries.ts";
import { FAULT_MODES, FaultInjector, type FaultMode, figures, oauthErrorProblems, type Seen, see, sha256 } from "./support.ts";

/** Small, so that a hung store costs a test little; the option under test is the same at any value. */
const STORAGE_TIMEOUT = 50;
const RS_SECRET = "resource-server-secret-0123456789";

const tally = { injected: 0, answered5xx: 0, unsaved: 0, retried: 0, fresh: 0 };
afterAll(() => {
  figures(
    `faults: ${tally.injected} injected (${FAULT_MODES.length} modes x every store call of 3 flows), ` +
      `${tally.answered5xx} answered with a clean 5xx, ${tally.unsaved} codes or tokens handed out unsaved, ` +
      `${tally.retried} interrupted steps retried and ${tally.fresh} new flows completed at once after the fault cleared`,
  );
});

/** A server on a store wrapped by the injector, and a protected resource. */
interface World {
  f: Fixture;
  injector: FaultInjector;
  api: (request: Request) => Promise<Response>;
  /** Store calls (counted from `arm`) made before the current step's request. */
  stepStart: number;
}

async function world(): Promise<World> {
  const injector = new FaultInjector(memoryStorage(), STORAGE_TIMEOUT * 2);
  const f = await fixture({ storage: injector.storage, storageTimeout: STORAGE_TIMEOUT });
  // Clients introspect only their own tokens: the introspection step is a resource server's, as in production.
  await f.server.clients.register({
    client_id: "rs", client_secret: RS_SECRET, name: "Resource server", type: "confidential",
    scopes: ["read"], grant_types: ["client_credentials"], introspection: "all",
  });
  return { f, injector, api: f.server.protect("read", (_, info) => Response.json(info)), stepStart: 0 };
}

type State = Record<string, string>;

/** One request of a flow: how to send it and what a success must look like (including what must be saved). */
interface Step {
  name: string;
  /** The authorization endpoint answers failures with an HTML page; every other step with JSON. */
  page?: true;
  /** A retry after a fault that did commit may legitimately find its code or refresh token spent. */
  spends?: true;
  /**
   * The store verb whose success spends the step's single-use input (a consent approval): once that call has
   * done its work, a retry of the interrupted request must be refused cleanly, whatever failed after it.
   */
  spentBy?: string;
  send(w: World, st: State): Promise<Response>;
  accept(w: World, st: State, seen: Seen): Promise<void>;
}

const form = { "content-type": "application/x-www-form-urlencoded" };

/** Asserts that a token response's tokens are in the store (looked up past the injector), and keeps them. */
async function saved(w: World, st: State, seen: Seen, prefix: string, refresh: boolean): Promise<void> {
  expect(seen.status, `${prefix}: ${seen.body}`).toBe(200);
  const body = JSON.parse(seen.body) as Record<string, string>;
  const now = w.f.clock.now;
  const access = await w.injector.inner.findAccessToken(await sha256(body.access_token!), now);
  const rotated = refresh ? await w.injector.inner.findRefreshToken(await sha256(body.refresh_token ?? ""), now) : "none";
  if (access === null || rotated === null) tally.unsaved++;
  expect({ access: access !== null, refresh: rotated !== null }, `${prefix}: tokens handed out are stored`).toEqual({ access: true, refresh: true });
  st[`${prefix}_access`] = body.access_token!;
  if (refresh) st[`${prefix}_refresh`] = body.refresh_token!;
}

function codeFlow(client: "spa" | "web"): Step[] {
  const params = (st: State) => codeRequest(client, st.challenge ? { code_challenge: st.challenge, code_challenge_method: "S256" } : {});
  const auth = client === "web" ? { client_id: "web", client_secret: SECRETS.web } : { client_id: "spa" };
  return [
    {
      name: "consent page",
      page: true,
      send: (w, st) => getAuthorize(w.f.server, params(st)),
      accept: async (_, st, seen) => {
        expect(seen.status, seen.body.slice(0, 200)).toBe(200);
        st.csrf = csrfOf(seen.body);
      },
    },
    {
      name: "consent: allow",
      page: true,
      spentBy: "markOnce",
      send: (w, st) => w.f.server.fetch(new Request(authorizeUrl(params(st)), { method: "POST", headers: form, body: new URLSearchParams({ decision: "allow", csrf: st.csrf! }) })),
      accept: async (w, st, seen) => {
        expect(seen.status, seen.body.slice(0, 200)).toBe(303);
        const code = new URL(seen.headers.get("location")!).searchParams.get("code")!;
        const record = await w.injector.inner.findCode(await sha256(code), w.f.clock.now);
        if (record === null) tally.unsaved++;
        expect(record, "a code handed out is stored").not.toBeNull();
        st.code = code;
      },
    },
    {
      name: "code exchange",
      spends: true,
      send: (w, st) => postToken(w.f.server, { grant_type: "authorization_code", ...auth, redirect_uri: REDIRECT, code: st.code!, ...(st.verifier ? { code_verifier: st.verifier } : {}) }),
      accept: (w, st, seen) => saved(w, st, seen, "first", true),
    },
    {
      name: "refresh",
      spends: true,
      send: (w, st) => postToken(w.f.server, { grant_type: "refresh_token", ...auth, refresh_token: st.first_refresh! }),
      accept: (w, st, seen) => saved(w, st, seen, "second", true),
    },
    ...resourceSteps(auth, "second"),
  ];
}

const ccFlow: Step[] = [
  {
    name: "client_credentials",
    send: (w) => postToken(w.f.server, { grant_type: "client_credentials", client_id: "backend-refresh", client_secret: SECRETS.backendRefresh, scope: "export" }),
    accept: (w, st, seen) => saved(w, st, seen, "first", true),
  },
  {
    name: "refresh",
    spends: true,
    send: (w, st) => postToken(w.f.server, { grant_type: "refresh_token", client_id: "backend-refresh", client_secret: SECRETS.backendRefresh, refresh_token: st.first_refresh! }),
    accept: (w, st, seen) => saved(w, st, seen, "second", true),
  },
  ...resourceSteps({ client_id: "backend-refresh", client_secret: SECRETS.backendRefresh }, "second", "export"),
];

/** Use of the last tokens: the resource guard, introspection, then revocation of the refresh token. */
function resourceSteps(auth: Record<string, string>, prefix: string, scope = "read"): Step[] {
  return [
    {
      name: "resource call",
      send: async (w, st) => {
        const api = scope === "read" ? w.api : w.f.server.protect(scope, (_, info) => Response.json(info));
        return api(new Request(`${ISSUER}/api/reports`, { headers: { authorization: `Bearer ${st[`${prefix}_access`]}` } }));
      },
      accept: async (_, __, seen) => expect(seen.status, seen.body).toBe(200),
    },
    {
      name: "introspection",
      send: (w, st) => w.f.server.fetch(new Request(`${ISSUER}/introspect`, {
        method: "POST",
        headers: { ...form, authorization: basicHeader("rs", RS_SECRET) },
        body: new URLSearchParams({ token: st[`${prefix}_access`]! }),
      })),
      accept: async (_, __, seen) => expect(JSON.parse(seen.body || "{}"), seen.body).toMatchObject({ active: true }),
    },
    {
      name: "revocation",
      send: (w, st) => w.f.server.fetch(new Request(`${ISSUER}/revoke`, { method: "POST", headers: form, body: new URLSearchParams({ ...auth, token: st[`${prefix}_refresh`]! }) })),
      accept: async (w, st, seen) => {
        expect(seen.status, seen.body).toBe(200);
        expect(await w.injector.inner.findRefreshToken(await sha256(st[`${prefix}_refresh`]!), w.f.clock.now), "revoked").toBeNull();
      },
    },
  ];
}

const FLOWS: { name: string; steps: Step[]; pkce: boolean }[] = [
  { name: "public client, code + PKCE", steps: codeFlow("spa"), pkce: true },
  { name: "confidential client, code", steps: codeFlow("web"), pkce: false },
  { name: "client_credentials with refresh", steps: ccFlow, pkce: false },
];

async function freshState(withPkce: boolean): Promise<State> {
  if (!withPkce) return {};
  const { verifier, challenge } = await pkce();
  return { verifier, challenge };
}

/** Checks a response to a request during which the fault fired: a clean 5xx that hands nothing out. */
function expectCleanFailure(step: Step, seen: Seen, st: State, label: string): void {
  expect(seen.status, `${label}: status (${seen.body.slice(0, 300)})`).toBeGreaterThanOrEqual(500);
  expect(seen.status, `${label}: status`).toBeLessThan(600);
  expect(seen.headers.get("location"), `${label}: no redirect`).toBeNull();
  for (const [name, value] of Object.entries(st)) {
    if (name !== "challenge" && name !== "csrf") expect(seen.body.includes(value), `${label}: the body shows ${name}`).toBe(false);
  }
  if (step.page) {
    expect(seen.headers.get("content-type"), `${label}: an HTML error page`).toMatch(/^text\/html/);
  } else {
    const codes = seen.status === 503 ? ["temporarily_unavailable"] : ["server_error"];
    expect(oauthErrorProblems(seen, codes), `${label}: ${seen.body}`).toEqual([]);
    expect(seen.body).not.toMatch(/"(access|refresh)_token"/);
    if (seen.status === 503) expect(seen.headers.get("retry-after"), `${label}: Retry-After`).not.toBeNull();
  }
  tally.answered5xx++;
}

/** Runs steps from `from`; returns the index of the first step during which the fault fired, or -1. */
async function runSteps(w: World, steps: Step[], st: State, from: number, label: string): Promise<number> {
  for (let i = from; i < steps.length; i++) {
    const step = steps[i]!;
    const before = w.injector.fired;
    w.stepStart = w.injector.calls.length;
    const seen = await see(await step.send(w, st));
    if (w.injector.fired > before) {
      expectCleanFailure(step, seen, st, `${label}, ${step.name}`);
      return i;
    }
    await step.accept(w, st, seen);
  }
  return -1;
}

/** Store calls of one fault-free run of a flow, to know every k to break. */
async function callsOf(flow: (typeof FLOWS)[number]): Promise<string[]> {
  const w = await world();
  w.injector.count();
  expect(await runSteps(w, flow.steps, await freshState(flow.pkce), 0, "dry run")).toBe(-1);
  return w.injector.calls.map((c) => c.method);
}

/** Modes in which the broken call changed nothing: the interrupted step must then simply work when retried. */
const CHANGES_NOTHING: readonly FaultMode[] = ["reject", "throw", "hang", "outage"];

/** Whether the interrupted step's `spentBy` call did its work: it succeeded, or the fault let it commit. */
function spentBefore(w: World, step: Step, mode: FaultMode): boolean {
  if (step.spentBy === undefined) return false;
  return w.injector.calls.slice(w.stepStart).some((c) => c.method === step.spentBy && (!c.faulted || !CHANGES_NOTHING.includes(mode)));
}

describe.each(FLOWS)("$name", (flow) => {
  test.each(FAULT_MODES)("the k-th store call %s, for every k", async (mode) => {
    const calls = await callsOf(flow);
    expect(calls.length).toBeGreaterThan(3);
    // Every k at once: each scenario has its own server and store, so they run side by side.
    await Promise.all(calls.map(async (method, index) => {
      const k = index + 1;
      const label = `${mode} at call ${k} (${method})`;
      const w = await world();
      const st = await freshState(flow.pkce);
      w.injector.arm(k, mode);
      const stopped = await runSteps(w, flow.steps, st, 0, label);
      expect(stopped, `${label}: the fault fired and the request failed`).toBeGreaterThanOrEqual(0);
      tally.injected++;

      // The fault clears. Nothing may need to expire first: the clock stands still from here on.
      w.injector.clear();
      await w.injector.settled();
      const step = flow.steps[stopped]!;
      const spent = spentBefore(w, step, mode);
      const retry = await see(await step.send(w, st));
      if (spent) {
        // A consent approval is single-use (issue 15, finding 2): once spent, a replay of the form gets the
        // error page, no redirect and no code, and the user starts again below.
        expect({ status: retry.status, location: retry.headers.get("location") }, `${label}: retry of a spent approval`).toEqual({ status: 403, location: null });
        expect(retry.headers.get("content-type"), `${label}: an HTML error page`).toMatch(/^text\/html/);
        expect(retry.body, `${label}: retry of a spent approval`).toMatch(/already used/);
      } else if (CHANGES_NOTHING.includes(mode) || !step.spends || retry.status === 200) {
        await step.accept(w, st, retry);
        expect(await runSteps(w, flow.steps, st, stopped + 1, `${label}, rest of the flow`)).toBe(-1);
        tally.retried++;
      } else {
        // The broken call did its work (the code or refresh token is spent, or the grant revoked as a replay):
        // the client learns so cleanly, and starts again below.
        expect({ status: retry.status, error: JSON.parse(retry.body).error }, `${label}: retry`).toEqual({ status: 400, error: "invalid_grant" });
      }
      expect(await runSteps(w, flow.steps, await freshState(flow.pkce), 0, `${label}, a new flow`)).toBe(-1);
      tally.fresh++;
    }));
  }, 30_000);
});

test("a hung store call ends in 503 temporarily_unavailable after storageTimeout, not later", async () => {
  const w = await world();
  w.injector.arm(1, "hang");
  const started = Date.now();
  const seen = await see(await postToken(w.f.server, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" }));
  const elapsed = Date.now() - started;
  expect(seen.status).toBe(503);
  expect(JSON.parse(seen.body)).toMatchObject({ error: "temporarily_unavailable" });
  expect(elapsed).toBeGreaterThanOrEqual(STORAGE_TIMEOUT - 5);
  expect(elapsed).toBeLessThan(STORAGE_TIMEOUT + 1_000);
});

test("a store that throws a non-Error, or rejects with one, gives 500 server_error with no detail", async () => {
  for (const mode of ["throw", "reject"] as const) {
    const w = await world();
    w.injector.arm(1, mode);
    const seen = await see(await postToken(w.f.server, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" }));
    expect({ status: seen.status, body: JSON.parse(seen.body) }).toEqual({
      status: 500,
      body: { error: "server_error", error_description: "The server could not complete the request" },
    });
    expect(seen.body).not.toMatch(/injected|fault|getClient/i);
    expect(w.f.errors.length, "the failure reaches onError").toBeGreaterThan(0);
  }
});

test("the resource guard reports a store failure to onError, as the endpoints do", async () => {
  for (const mode of ["reject", "hang"] as const) {
    const w = await world();
    const issued = await see(await postToken(w.f.server, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "read" }));
    const access = JSON.parse(issued.body).access_token as string;
    const reported = w.f.errors.length;
    w.injector.arm(1, mode); // findAccessToken
    const seen = await see(await w.api(new Request(`${ISSUER}/api/reports`, { headers: { authorization: `Bearer ${access}` } })));
    expect(seen.status, `${mode}: ${seen.body}`).toBe(mode === "hang" ? 503 : 500);
    // The operator must see a failing store at the guard as at the token endpoint: onError is how (README).
    expect(w.f.errors.length - reported, `${mode}: onError reports of the guard's store failure`).toBe(1);
  }
});

test("a throwing onError hook does not turn a store failure into a crash, at the endpoints or the resource guard", async () => {
  const injector = new FaultInjector(memoryStorage());
  const f = await fixture({ storage: injector.storage, storageTimeout: STORAGE_TIMEOUT, onError: () => { throw new Error("the error hook failed too"); } });
  const api = f.server.protect("read", () => new Response("ok"));
  injector.arm(1, "reject");
  const token = await see(await postToken(f.server, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "read" }));
  expect(token.status).toBe(500);
  injector.arm(1, "reject");
  let guard: Response | undefined;
  let escaped: unknown;
  try {
    guard = await api(new Request(`${ISSUER}/api/reports`, { headers: { authorization: `Bearer ${"A".repeat(43)}` } }));
  } catch (error) {
    escaped = error;
  }
  expect(escaped, "an exception escaped protect()").toBeUndefined();
  expect(guard?.status).toBe(500);
});

// The reference server's own pages (issue 15 item 13): /account/apps and /logout read and write the store too.
describe("the reference server's pages on a failing store", () => {
  const REF = "http://127.0.0.1:8080";
  const pageForm = { "content-type": "application/x-www-form-urlencoded" };
  const csrfIn = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!;

  async function refWorld() {
    const { createReferenceApp } = await import("../../lib/reference/app.ts");
    const injector = new FaultInjector(memoryStorage(), 6_000);
    const errors: unknown[] = [];
    const app = await createReferenceApp({ issuer: REF, storage: injector.storage, passwordIterations: 1000, purgeInterval: 0, onError: (e) => errors.push(e) });
    const page = await app.fetch(new Request(`${REF}/account/apps`));
    const nonce = page.headers.getSetCookie().map((c) => c.split(";")[0]!).join("; ");
    const login = await app.fetch(new Request(`${REF}/account/apps`, {
      method: "POST", headers: { ...pageForm, cookie: nonce }, body: new URLSearchParams({ username: "demo", password: "demo-password", csrf: csrfIn(await page.text()) }),
    }));
    const cookie = login.headers.getSetCookie().find((c) => c.startsWith("oauth2_session="))!.split(";")[0]!;
    const st: State = {};
    const steps: { name: string; send: () => Promise<Response>; accept: (seen: Seen) => void }[] = [
      {
        name: "connected apps", send: () => app.fetch(new Request(`${REF}/account/apps`, { headers: { cookie } })),
        accept: (seen) => expect({ status: seen.status, signInForm: seen.body.includes('name="password"') }, "signed in").toEqual({ status: 200, signInForm: false }),
      },
      {
        name: "logout form", send: () => app.fetch(new Request(`${REF}/logout`, { headers: { cookie } })),
        accept: (seen) => void (st.csrf = csrfIn(seen.body)),
      },
      {
        name: "logout", send: () => app.fetch(new Request(`${REF}/logout`, { method: "POST", headers: { ...pageForm, cookie }, body: new URLSearchParams({ csrf: st.csrf! }) })),
        accept: (seen) => expect(seen.body, "signed out").toContain("You have been signed out"),
      },
    ];
    /** Whether the session still opens the connected-apps page (it must not, once a logout said it ended). */
    const signedIn = async () => {
      const seen = await see(await app.fetch(new Request(`${REF}/account/apps`, { headers: { cookie } })));
      expect(seen.status).toBe(200);
      return !seen.body.includes('name="password"');
    };
    return { app, injector, errors, steps, signedIn };
  }

  test.each(["reject", "throw", "hang", "outage"] as const)("%s at each store call: a clean 5xx page, never an exception, and no logout claimed that did not happen", async (mode) => {
    const dry = await refWorld();
    dry.injector.count();
    for (const step of dry.steps) step.accept(await see(await step.send()));
    const calls = dry.injector.calls.length;
    expect(calls, "store calls of the pages").toBeGreaterThanOrEqual(3);
    await Promise.all(Array.from({ length: calls }, async (_, index) => {
      const k = index + 1;
      const w = await refWorld();
      w.injector.arm(k, mode);
      for (const step of w.steps) {
        const before = w.injector.fired;
        let response: Response;
        try {
          response = await step.send();
        } catch (error) {
          throw new Error(`${mode} at call ${k}, ${step.name}: an exception escaped the handler: ${String(error)}`);
        }
        const seen = await see(response);
        if (w.injector.fired === before) {
          step.accept(seen);
          continue;
        }
        const label = `${mode} at call ${k} (${w.injector.calls[k - 1]?.method}), ${step.name}`;
        expect(seen.status, `${label}: ${seen.body.slice(0, 200)}`).toBeGreaterThanOrEqual(500);
        expect(seen.status, label).toBeLessThan(600);
        expect(seen.headers.get("content-type"), `${label}: an HTML page`).toMatch(/^text\/html/);
        expect(seen.headers.get("x-frame-options"), label).toBe("DENY");
        expect(seen.body, `${label}: no internal detail`).not.toMatch(/Injected|fault|isMarked|markOnce|listGrants|at \S+ \(/);
        if (seen.status === 503) expect(seen.headers.get("retry-after"), `${label}: Retry-After`).not.toBeNull();
        expect(w.errors.length, `${label}: the failure reaches onError`).toBeGreaterThan(0);
        // The fault clears: the session is as it was (a failed logout ended nothing), and the step now works.
        w.injector.clear();
        expect(await w.signedIn(), `${label}: the session survives a failed step`).toBe(true);
        step.accept(await see(await step.send()));
      }
      expect(await w.signedIn(), `${mode} at call ${k}: signed out at the end`).toBe(false);
    }));
  }, 30_000);
});

test("health on a failing store: /healthz stays 200, /readyz says 503 with no detail, and both recover at once", async () => {
  const { createReferenceApp } = await import("../../lib/reference/app.ts");
  for (const mode of ["reject", "throw", "hang", "outage"] as const) {
    const injector = new FaultInjector(memoryStorage(), 6_000);
    const app = await createReferenceApp({ issuer: "http://127.0.0.1:8080", storage: injector.storage, passwordIterations: 1000, purgeInterval: 0 });
    const get = async (path: string) => see(await app.fetch(new Request(`http://127.0.0.1:8080${path}`)));
    injector.arm(1, mode);
    const ready = await get("/readyz");
    expect({ status: ready.status, body: JSON.parse(ready.body) }, mode).toEqual({ status: 503, body: { status: "store unavailable" } });
    expect((await get("/healthz")).status, `${mode}: the process answers`).toBe(200);
    injector.clear();
    expect((await get("/readyz")).status, `${mode}: ready again once the store answers`).toBe(200);
    app.close();
  }
}, 30_000);
