import { describe, expect, it, test } from "vitest";
import { passwordLogin, type PasswordLoginOptions } from "../../lib/consent/login.ts";
import { base64url } from "../../lib/crypto.ts";
import { ConfigurationError } from "../../lib/errors.ts";
import type { EndUser, InteractionContext } from "../../lib/options.ts";
import type { Throttle } from "../../lib/throttle.ts";
import { memoryThrottle } from "../../lib/throttle.ts";
import { codeRequest, fixture, getAuthorize, ISSUER } from "../helpers.ts";

const SECRET = "0123456789abcdef0123456789abcdef";

const URL_ = "https://auth.example/authorize?response_type=code&client_id=printer&state=s%20t";

const CLIENT = { client_id: "printer", name: "Photo Printer" };

/** A hook with a clock the test moves, and a log of verify calls. */
/** The sign-in time the hook reports with the user (RFC 9068 §2.2.1 auth_time), for sign-ins at setup's clock. */
const SIGNED_IN = Date.UTC(2030, 0, 1) / 1000;

function setup(options: Partial<PasswordLoginOptions> = {}) {
  const clock = { now: Date.UTC(2030, 0, 1) };
  const calls: [string, string][] = [];
  const hook = passwordLogin({
    secret: SECRET,
    clock: () => clock.now,
    verify: (username, password) => {
      calls.push([username, password]);
      return username === "alice" && password === "correct horse" ? { id: "u-1", name: "Alice" } : null;
    },
    ...options,
  });
  return { hook, clock, calls };
}

const context = (form: URLSearchParams | null, remoteAddress?: string): InteractionContext => ({ form, client: CLIENT, scope: "photos", remoteAddress });

const get = (cookie?: string, url = URL_): Request =>
  new Request(url, cookie === undefined ? {} : { headers: { cookie } });

/** A POST whose body the server has already parsed into `context.form`. */
const post = (cookie?: string, url = URL_): Request =>
  new Request(url, { method: "POST", ...(cookie === undefined ? {} : { headers: { cookie } }) });

const csrfOf = (html: string): string => /name="csrf" value="([^"]*)"/.exec(html)![1]!;

/** `name=value` of the first Set-Cookie for `name`, and its attributes. */
function setCookie(response: Response, name: string): { pair: string; value: string; attrs: string } | undefined {
  const line = response.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  if (line === undefined) return undefined;
  const semi = line.indexOf(";");
  const pair = line.slice(0, semi);
  return { pair, value: pair.slice(name.length + 1), attrs: line.slice(semi) };
}

/** GETs the sign-in page: its CSRF token and the nonce cookie pair. */
async function openLogin(hook: ReturnType<typeof setup>["hook"]): Promise<{ csrf: string; nonce: string }> {
  const response = (await hook(get(), context(null))) as Response;
  return { csrf: csrfOf(await response.text()), nonce: setCookie(response, "oauth2_session_login")!.pair };
}

const loginForm = (csrf: string | null, password = "correct horse"): URLSearchParams => {
  const form = new URLSearchParams({ username: "alice", password });
  if (csrf !== null) form.set("csrf", csrf);
  return form;
};

/** Runs the whole login; returns the session cookie pair. */
async function signIn(hook: ReturnType<typeof setup>["hook"]): Promise<string> {
  const { csrf, nonce } = await openLogin(hook);
  const response = (await hook(post(nonce), context(loginForm(csrf)))) as Response;
  return setCookie(response, "oauth2_session")!.pair;
}

describe("passwordLogin options", () => {
  it("refuses a short secret, a bad cookie name and a bad lifetime", () => {
    const verify = (): null => null;
    expect(() => passwordLogin({ verify, secret: "short" })).toThrow(ConfigurationError);
    expect(() => passwordLogin({ verify, secret: new Uint8Array(31) })).toThrow(
      `Cannot create password login: "secret" must be at least 32 bytes long`,
    );
    expect(() => passwordLogin({ verify, secret: SECRET, cookieName: "a b" })).toThrow(/"cookieName"/);
    expect(() => passwordLogin({ verify, secret: SECRET, sessionTtl: 0 })).toThrow(/"sessionTtl"/);
    expect(() => passwordLogin({ verify, secret: SECRET, cookieName: "__Host-s", secure: false })).toThrow(
      /"secure"/,
    );
    expect(() => passwordLogin({ verify, secret: new Uint8Array(32) })).not.toThrow();
  });
});

describe("passwordLogin", () => {
  it("answers a GET without a session with the sign-in page and a login nonce cookie", async () => {
    const { hook } = setup();
    const response = await hook(get(), context(null));
    expect(response).toBeInstanceOf(Response);
    const res = response as Response;
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html;charset=UTF-8");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    const html = await res.text();
    expect(html).toContain(`action="/authorize?response_type=code&amp;client_id=printer&amp;state=s%20t"`);
    expect(html).toContain("Photo Printer");
    expect(csrfOf(html)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const nonce = setCookie(res, "oauth2_session_login")!;
    expect(nonce.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(nonce.value).not.toBe(csrfOf(html));
    expect(nonce.attrs).toBe("; Path=/; HttpOnly; SameSite=Lax; Secure");
    expect(setCookie(res, "oauth2_session")).toBeUndefined();
  });

  it("signs in, redirects 303 to the same URL with a session cookie, then knows the user", async () => {
    const { hook, calls } = setup();
    const { csrf, nonce } = await openLogin(hook);
    const response = (await hook(post(nonce), context(loginForm(csrf)))) as Response;
    expect(response.status).toBe(303);
    // Relative: the browser stays on the origin it used; `Host` never picks where a signed-in user goes.
    expect(response.headers.get("location")).toBe("/authorize?response_type=code&client_id=printer&state=s%20t");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(calls).toEqual([["alice", "correct horse"]]);
    const session = setCookie(response, "oauth2_session")!;
    expect(session.value).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(session.attrs).toBe("; Path=/; HttpOnly; SameSite=Lax; Max-Age=3600; Secure");
    expect(setCookie(response, "oauth2_session_login")!.attrs).toContain("Max-Age=0");

    const user = await hook(get(session.pair), context(null));
    expect(user).toEqual({ id: "u-1", name: "Alice", auth_time: SIGNED_IN });
    // The consent form posts back too; it is no login submission, so the session answers.
    const consent = await hook(post(session.pair), context(new URLSearchParams({ decision: "allow", csrf: "c" })));
    expect(consent).toEqual({ id: "u-1", name: "Alice", auth_time: SIGNED_IN });
  });

  it("finds the session among other cookies and keeps a user without a name", async () => {
    const { hook } = setup({ verify: () => ({ id: "u-2" }) });
    const session = await signIn(hook);
    expect(await hook(get(`theme=dark; ${session}; other="q"`), context(null))).toEqual({ id: "u-2", auth_time: SIGNED_IN });
  });

  it("answers a wrong password with 401, a generic error, a fresh nonce and no session", async () => {
    const { hook } = setup();
    const { csrf, nonce } = await openLogin(hook);
    const response = (await hook(post(nonce), context(loginForm(csrf, "hunter2-secret")))) as Response;
    expect(response.status).toBe(401);
    const html = await response.text();
    expect(html).toContain(`role="alert"`);
    expect(html).toContain("Wrong username or password");
    expect(html).toContain(`value="alice"`);
    expect(html).not.toContain("hunter2-secret");
    expect(setCookie(response, "oauth2_session")).toBeUndefined();
    const fresh = setCookie(response, "oauth2_session_login")!;
    expect(fresh.pair).not.toBe(nonce);
    expect(csrfOf(html)).not.toBe(csrf);
    // The fresh pair works.
    const retry = (await hook(post(fresh.pair), context(loginForm(csrfOf(html))))) as Response;
    expect(retry.status).toBe(303);
  });

  it("answers an empty password as a wrong one, without calling verify", async () => {
    const { hook, calls } = setup();
    const { csrf, nonce } = await openLogin(hook);
    const form = new URLSearchParams({ username: "alice", csrf });
    const response = (await hook(post(nonce), context(form))) as Response;
    expect(response.status).toBe(401);
    expect(calls).toEqual([]);
  });

  describe("refuses a login POST without a matching CSRF token and nonce cookie", () => {
    type Make = (
      csrf: string,
      nonce: string,
      other: { csrf: string; nonce: string },
    ) => [string | undefined, string | null];
    const cases: [string, Make][] = [
      ["no csrf field", (_csrf, nonce) => [nonce, null]],
      ["a forged csrf", (csrf, nonce) => [nonce, csrf.slice(0, -1) + (csrf.endsWith("A") ? "B" : "A")]],
      ["no nonce cookie (a cross-site POST)", (csrf) => [undefined, csrf]],
      ["a nonce cookie of another session", (csrf, _nonce, other) => [other.nonce, csrf]],
      ["the nonce itself as csrf", (_csrf, nonce) => [nonce, nonce.slice(nonce.indexOf("=") + 1)]],
    ];
    for (const [name, make] of cases) {
      it(name, async () => {
        const { hook, calls } = setup();
        const { csrf, nonce } = await openLogin(hook);
        const other = await openLogin(hook);
        const [cookie, token] = make(csrf, nonce, other);
        const response = (await hook(post(cookie), context(loginForm(token)))) as Response;
        expect(response.status).toBe(403);
        expect(await response.text()).toContain("expired");
        expect(setCookie(response, "oauth2_session")).toBeUndefined();
        expect(calls).toEqual([]);
      });
    }
  });

  it("ignores a tampered session cookie, in payload or signature", async () => {
    const { hook } = setup();
    const pair = await signIn(hook);
    expect(await hook(get(pair), context(null))).toEqual({ id: "u-1", name: "Alice", auth_time: SIGNED_IN });
    const eq = pair.indexOf("=");
    const dot = pair.indexOf(".");
    const flip = (s: string, i: number): string => s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1);
    for (const i of [eq + 1, eq + 5, dot - 1, dot + 1, pair.length - 1]) {
      const result = await hook(get(flip(pair, i)), context(null));
      expect(result, `flipped index ${i}`).toBeInstanceOf(Response);
    }
    // Another user's payload with this signature.
    const other = base64url(new TextEncoder().encode(JSON.stringify({ sub: "admin", exp: 9e9 })));
    const forged = `oauth2_session=${other}${pair.slice(dot)}`;
    expect(await hook(get(forged), context(null))).toBeInstanceOf(Response);
  });

  it("ignores a session signed with another secret", async () => {
    const pair = await signIn(setup().hook);
    const { hook } = setup({ secret: "another secret, also 32 bytes long!" });
    expect(await hook(get(pair), context(null))).toBeInstanceOf(Response);
  });

  it("ignores an expired session", async () => {
    const { hook, clock } = setup({ sessionTtl: 600 });
    const pair = await signIn(hook);
    clock.now += 599_000;
    expect(await hook(get(pair), context(null))).toEqual({ id: "u-1", name: "Alice", auth_time: SIGNED_IN });
    clock.now += 1_000;
    expect(await hook(get(pair), context(null))).toBeInstanceOf(Response);
  });

  it("never throws on garbage cookie headers", async () => {
    const { hook } = setup();
    const garbage = [
      "",
      ";;;",
      "=",
      "oauth2_session",
      "oauth2_session=",
      "oauth2_session=.",
      "oauth2_session=...",
      'oauth2_session="',
      "oauth2_session=%%%.%%%",
      "oauth2_session=!!!!.AAAA",
      "oauth2_session=" + "A".repeat(5000) + "." + "B".repeat(43),
      "oauth2_session=e30." + "A".repeat(43),
      "oauth2_session_login=; oauth2_session=\u00ff\u00fe",
      Array.from({ length: 500 }, (_, i) => `oauth2_session=${i}.x`).join("; "),
    ];
    for (const cookie of garbage) {
      const result = await hook(get(cookie), context(null));
      expect(result, cookie.slice(0, 40)).toBeInstanceOf(Response);
      const login = await hook(post(cookie), context(loginForm("x")));
      expect((login as Response).status).toBe(403);
    }
  });

  it("keeps an existing nonce on GET, so two sign-in tabs both work", async () => {
    const { hook } = setup();
    const first = await openLogin(hook);
    const second = (await hook(get(first.nonce), context(null))) as Response;
    expect(setCookie(second, "oauth2_session_login")).toBeUndefined();
    const csrf = csrfOf(await second.text());
    const response = (await hook(post(first.nonce), context(loginForm(csrf)))) as Response;
    expect(response.status).toBe(303);
  });

  it("re-authenticates when a login form is posted with a session", async () => {
    const { hook } = setup();
    const session = await signIn(hook);
    const { csrf, nonce } = await openLogin(hook);
    const response = (await hook(post(`${session}; ${nonce}`), context(loginForm(csrf, "wrong")))) as Response;
    expect(response.status).toBe(401);
  });

  it("sets Secure by the request scheme unless told, and honours cookieName", async () => {
    const local = setup();
    const onHttp = (await local.hook(get(undefined, "http://localhost:8080/authorize?x=1"), context(null))) as Response;
    expect(setCookie(onHttp, "oauth2_session_login")!.attrs).not.toContain("Secure");

    const forced = setup({ secure: true, cookieName: "sid" });
    const res = (await forced.hook(get(undefined, "http://localhost:8080/authorize"), context(null))) as Response;
    expect(setCookie(res, "sid_login")!.attrs).toContain("Secure");

    const off = setup({ secure: false });
    expect(setCookie((await off.hook(get(), context(null))) as Response, "oauth2_session_login")!.attrs).not.toContain(
      "Secure",
    );
  });

  it("rejects a verify result without an id", async () => {
    const { hook } = setup({ verify: () => ({ id: "" }) as EndUser });
    const { csrf, nonce } = await openLogin(hook);
    await expect(hook(post(nonce), context(loginForm(csrf)))).rejects.toThrow(TypeError);
  });
});

describe("passwordLogin throttling", () => {
  /** One login attempt from `address` with a fresh sign-in page; returns the response. */
  async function attempt(hook: ReturnType<typeof setup>["hook"], password: string, address: string): Promise<Response> {
    const page = (await hook(get(), context(null, address))) as Response;
    const csrf = csrfOf(await page.text());
    const nonce = setCookie(page, "oauth2_session_login")!.pair;
    return (await hook(post(nonce), context(loginForm(csrf, password), address))) as Response;
  }

  it("slows a password-guessing run per address, without locking the user out elsewhere", async () => {
    const { hook, clock, calls } = setup();
    for (let i = 0; i < 5; i++) expect((await attempt(hook, `guess ${i}`, "203.0.113.9")).status).toBe(401);
    const before = calls.length;
    const blocked = await attempt(hook, "correct horse", "203.0.113.9");
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await blocked.text()).toContain("Too many failed sign-in attempts");
    expect(calls.length).toBe(before); // verify() is not even asked while blocked
    expect((await attempt(hook, "correct horse", "198.51.100.7")).status).toBe(303);
    clock.now += 31_000;
    expect((await attempt(hook, "correct horse", "203.0.113.9")).status).toBe(303);
  });

  it("throttle: false switches it off", async () => {
    const { hook } = setup({ throttle: false });
    for (let i = 0; i < 20; i++) expect((await attempt(hook, `guess ${i}`, "203.0.113.9")).status).toBe(401);
  });
});

describe("1. the login throttle under concurrency", () => {
  const SECRET = "0123456789abcdef0123456789abcdef";

  const URL_ = "https://auth.example/authorize?response_type=code&client_id=printer";

  const CLIENT = { client_id: "printer", name: "Photo Printer" };

  describe("the login throttle under concurrency", () => {
    async function loginRig(throttle?: Throttle) {
      let evaluated = 0;
      const hook = passwordLogin({
        secret: SECRET,
        ...(throttle ? { throttle } : {}),
        verify: async (username, password) => {
          evaluated++;
          await new Promise((done) => setTimeout(done, 20)); // a slow hash
          return username === "alice" && password === "right" ? { id: "alice" } : null;
        },
      });
      const page = (await hook(new Request(URL_), { form: null, client: CLIENT, scope: "s", remoteAddress: "203.0.113.9" })) as Response;
      const csrf = /name="csrf" value="([^"]*)"/.exec(await page.text())![1]!;
      const nonce = page.headers.getSetCookie()[0]!.split(";")[0]!;
      const attempt = async (password: string, address = "203.0.113.9") => {
        const form = new URLSearchParams({ csrf, username: "alice", password });
        const request = new Request(URL_, { method: "POST", headers: { cookie: nonce } });
        return ((await hook(request, { form, client: CLIENT, scope: "s", remoteAddress: address })) as Response).status;
      };
      return { attempt, evaluated: () => evaluated };
    }

    test("60 concurrent guesses: at most 5 wrong passwords are evaluated, and the right one does not win", async () => {
      const { attempt, evaluated } = await loginRig();
      const wrong = Array.from({ length: 59 }, (_, i) => attempt(`wrong-${i}`));
      // The right password arrives while the first wrong ones are still being hashed (the attack's timing).
      while (evaluated() < 5) await new Promise((done) => setTimeout(done, 1));
      const statuses = await Promise.all([...wrong, attempt("right")]);
      expect(evaluated()).toBeLessThanOrEqual(5);
      expect(statuses.filter((s) => s === 303)).toEqual([]);
      expect(statuses.filter((s) => s === 429).length).toBe(55);
    });

    test("a success gives its reservation back: a typo or four, then the right password, blocks nobody", async () => {
      const { attempt } = await loginRig(memoryThrottle({ maxFailures: 5, windowSeconds: 300 }));
      for (let i = 0; i < 4; i++) expect(await attempt(`typo-${i}`)).toBe(401);
      expect(await attempt("right")).toBe(303);
      expect(await attempt("right")).toBe(303);
      expect(await attempt("typo-5")).toBe(401);
      expect(await attempt("right")).toBe(429);
    });
  });
});

describe("the login hook", () => {

  describe("the login hook", () => {
    test("a hook that returns an empty user id is a server_error, not a sign-in", async () => {
      const { server, errors } = await fixture({ authenticateUser: () => ({ id: "" }) });
      const response = await getAuthorize(server, codeRequest("web"));
      expect(response.status).toBe(500);
      expect(errors.length).toBe(1);
    });

    test("passwordLogin refuses a verify that returns an empty id", async () => {
      const hook = passwordLogin({ secret: "0123456789abcdef0123456789abcdef", verify: () => ({ id: "" }) });
      const url = `${ISSUER}/authorize`;
      const page = (await hook(new Request(url), { form: null, client: { client_id: "c", name: "C" }, scope: "s", remoteAddress: undefined })) as Response;
      const csrf = csrfOf(await page.text());
      const nonce = page.headers.getSetCookie()[0]!.split(";")[0]!;
      const attempt = hook(new Request(url, { method: "POST", headers: { cookie: nonce } }), {
        form: new URLSearchParams({ csrf, username: "u", password: "p" }), client: { client_id: "c", name: "C" }, scope: "s", remoteAddress: undefined,
      });
      await expect(attempt).rejects.toThrow(TypeError);
    });
  });
});
