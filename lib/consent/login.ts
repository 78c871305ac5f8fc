/**
 * The built-in end-user authentication hook: a username and password form, and a signed session cookie.
 *
 * @module
 */
import { base64url, hmac, hmacKey, randomToken, timingSafeEqual } from "../crypto.ts";
import { ConfigurationError } from "../errors.ts";
import { readText, redirectResponse, respond } from "../http.ts";
import type { AuthenticateUser, EndUser, InteractionContext } from "../options.ts";
import { sha256 } from "../sha256.ts";
import { memoryThrottle, type Throttle, throttleKey } from "../throttle.ts";
import type { Storage } from "../storage/types.ts";
import { errorPage, escapeHtml, htmlPage, loginPage } from "./pages.ts";

/** Options of {@link passwordLogin}. */
export interface PasswordLoginOptions {
  /** Checks a username and password; returns the user, or null when they do not match. */
  verify(username: string, password: string): EndUser | null | Promise<EndUser | null>;
  /** Key that signs session cookies and login CSRF tokens: at least 32 bytes. */
  secret: string | Uint8Array;
  /**
   * Session cookie name; the login nonce cookie is this plus `_login`. Default `oauth2_session`. Over https,
   * prefer `__Host-oauth2_session`: the prefix stops a sibling subdomain from planting either cookie.
   */
  cookieName?: string;
  /** Session lifetime in seconds. Default 3600. */
  sessionTtl?: number;
  /** Milliseconds since the epoch. Default `Date.now`. */
  clock?: () => number;
  /**
   * Whether cookies carry `Secure`. Default: when the server's issuer is https (so also behind a proxy that
   * ends TLS), or the request itself is.
   */
  secure?: boolean;
  /**
   * Throttling of wrong passwords, per address and per username at that address (never per username alone,
   * which would let anyone lock a user out). Default: 5 failures in 5 minutes block for 30 s, doubling while
   * the guessing goes on. `false` switches it off.
   */
  throttle?: Throttle | false;
  /**
   * Where ended sessions are remembered (any {@link Storage}, e.g. the server's `storage`): with it, a logout
   * ends the session on the server too, so a copied cookie stops working. Without it, a logout only clears the
   * browser's cookie.
   */
  sessions?: Pick<Storage, "markOnce" | "isMarked">;
}

/** The hook, plus the logout page that goes with its sessions. */
export interface PasswordLogin extends AuthenticateUser {
  /**
   * Logout (serve it at a path of your choice, e.g. `/logout`): GET shows a sign-out form, POST with the
   * form's CSRF token ends the session (server-side when `sessions` is set) and clears the cookie.
   */
  logout(request: Request): Promise<Response>;
}

// RFC 6265 §4.1.1: a cookie name is an RFC 2616 token.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const NONCE = /^[A-Za-z0-9_-]{43}$/;
// Domain separation: a session signature can never pass as a CSRF token, nor the other way round.
const SESSION_LABEL = "oauth2-fetch-server/session:";
const CSRF_LABEL = "oauth2-fetch-server/login-csrf:";
const LOGOUT_LABEL = "oauth2-fetch-server/logout-csrf:";
const ENDED = "session-ended:";
// Copies of one cookie worth checking: a few paths' worth, not a hostile header's thousands of HMACs.
const MAX_REPEATS = 4;
const WRONG = "Wrong username or password.";
const EXPIRED = "Your sign-in form has expired. Please try again.";
/** How long a sign-in made for one authorization request satisfies that request's `prompt=login`. */
const FRESH_LOGIN_MS = 10 * 60 * 1000;

const fail = (message: string): never => {
  throw new ConfigurationError(`Cannot create password login: ${message}`);
};

/**
 * A username-and-password {@link AuthenticateUser} hook for the authorization endpoint. Without a valid session
 * cookie it answers with a sign-in page; the form posts back to the same authorization URL, and a correct
 * password earns a signed `HttpOnly; SameSite=Lax` session cookie and a 303 back to that URL, which then shows
 * the consent page. A nonce cookie bound to the form's CSRF token refuses cross-site login posts (login CSRF,
 * RFC 6749 §10.12). With `prompt=login` (OpenID Connect Core §3.1.2.1) a live session is not enough: the user
 * signs in again, and only a sign-in made for this very authorization request, in the last ten minutes, lets
 * it go on to the consent page.
 *
 * @example
 * ```ts
 * const server = createAuthorizationServer({
 *   issuer: "https://auth.example",
 *   scopes: { profile: "Read your profile" },
 *   authenticateUser: passwordLogin({
 *     secret: loginSecret, // 32 bytes or more, kept outside the code
 *     verify: (username, password) => users.check(username, password), // EndUser | null
 *   }),
 * });
 * ```
 */
export function passwordLogin(options: PasswordLoginOptions): PasswordLogin {
  if (typeof options !== "object" || options === null) fail("options must be an object");
  if (typeof options.verify !== "function") fail(`"verify" must be a function`);
  let secret: Uint8Array;
  if (typeof options.secret === "string") secret = new TextEncoder().encode(options.secret);
  else if (options.secret instanceof Uint8Array) secret = options.secret.slice();
  else return fail(`"secret" must be a string or a Uint8Array`);
  if (secret.byteLength < 32) fail(`"secret" must be at least 32 bytes long`);
  const cookieName = options.cookieName ?? "oauth2_session";
  if (typeof cookieName !== "string" || !TOKEN.test(cookieName)) {
    fail(`"cookieName" must be a cookie name token: "${String(cookieName)}"`);
  }
  const nonceName = `${cookieName}_login`;
  const ttl = options.sessionTtl ?? 3600;
  if (!Number.isInteger(ttl) || ttl <= 0) fail(`"sessionTtl" must be a positive whole number of seconds`);
  const clock = options.clock ?? Date.now;
  if (typeof clock !== "function") fail(`"clock" must be a function returning milliseconds`);
  // Browsers drop __Host-/__Secure- cookies that lack Secure (RFC 6265bis §4.1.3).
  const prefixed = /^__(Host|Secure)-/i.test(cookieName);
  if (prefixed && options.secure === false) fail(`"secure" cannot be false for the cookie name "${cookieName}"`);

  const throttle = options.throttle === false
    ? undefined
    : options.throttle ?? memoryThrottle({ maxFailures: 5, windowSeconds: 300, blockSeconds: 30 });

  let keyPromise: Promise<CryptoKey> | undefined;
  const key = (): Promise<CryptoKey> => (keyPromise ??= hmacKey(secret));
  const csrfFor = async (nonce: string): Promise<string> => hmac(await key(), CSRF_LABEL + nonce);

  async function findSession(values: string[]): Promise<Session | null> {
    for (const value of values.slice(0, MAX_REPEATS)) {
      const now = clock();
      const session = await checkSession(await key(), value, now);
      if (!session) continue;
      // A session ended by a logout stays ended, even if someone kept a copy of its cookie.
      if (session.sid !== undefined && options.sessions && (await options.sessions.isMarked(ENDED + session.sid, now))) continue;
      return session;
    }
    return null;
  }
  /** A session cookie; `target` is the request the sign-in was made for (what `prompt=login` checks). */
  async function issueSession(user: EndUser, target: string): Promise<string> {
    const claims: { sub: string; name?: string; exp: number; sid: string; auth: number; for: string } = {
      sub: user.id, exp: 0, sid: randomToken().slice(0, 22), auth: 0, for: sha256(target),
    };
    if (typeof user.name === "string") claims.name = user.name;
    claims.auth = Math.floor(clock() / 1000);
    claims.exp = claims.auth + ttl;
    const payload = base64url(new TextEncoder().encode(JSON.stringify(claims)));
    return `${payload}.${await hmac(await key(), SESSION_LABEL + payload)}`;
  }

  /** The sign-in page, with a nonce cookie whose HMAC is the form's CSRF token. */
  async function showLogin(
    request: Request,
    context: InteractionContext,
    cookies: Map<string, string[]>,
    secure: boolean,
    failure?: { error: string; username?: string; status?: number; retryAfter?: number },
  ): Promise<Response> {
    // A GET keeps a nonce it already set, so two open sign-in tabs both work; a failure rotates it.
    const kept = failure ? undefined : cookies.get(nonceName)?.find((v) => NONCE.test(v));
    const nonce = kept ?? randomToken();
    const url = new URL(request.url);
    const page = loginPage({
      action: url.pathname + url.search,
      csrf: await csrfFor(nonce),
      clientName: context.client.name,
      ...(failure ? { error: failure.error } : {}),
      ...(failure?.username !== undefined ? { username: failure.username } : {}),
    });
    if (failure?.status !== undefined) page.status = failure.status;
    if (failure?.retryAfter !== undefined) page.headers.push(["retry-after", String(failure.retryAfter)]);
    if (kept === undefined) page.headers.push(["set-cookie", cookie(nonceName, nonce, secure)]);
    return respond(request, page);
  }

  const hook = async (request: Request, context: InteractionContext): Promise<EndUser | Response> => {
    const secure = options.secure ??
      (prefixed || context.issuer?.startsWith("https:") === true || new URL(request.url).protocol === "https:");
    const cookies = parseCookies(request.headers.get("cookie"));
    const form = request.method === "POST" ? context.form : null;
    const isLogin = form !== null && (form.has("username") || form.has("password"));

    if (!isLogin) {
      const session = await findSession(cookies.get(cookieName) ?? []);
      if (session === null) return showLogin(request, context, cookies, secure);
      // prompt=login: only a sign-in made for this request, lately, goes on (else the 303 after it would loop).
      if (context.prompt?.includes("login") && !signedInFor(session, targetOf(request), clock())) {
        return showLogin(request, context, cookies, secure);
      }
      // RFC 9068 §2.2.1: the sign-in time travels with the user into the code and its tokens.
      return session.auth === undefined ? session.user : { ...session.user, auth_time: session.auth };
    }

    // Login CSRF: the token must be the HMAC of a nonce cookie, which a cross-site POST does not carry.
    const token = form.get("csrf") ?? "";
    let csrfOk = false;
    for (const nonce of (cookies.get(nonceName) ?? []).slice(0, MAX_REPEATS)) {
      if (NONCE.test(nonce) && timingSafeEqual(await csrfFor(nonce), token)) csrfOk = true;
    }
    if (!csrfOk) return showLogin(request, context, cookies, secure, { error: EXPIRED, status: 403 });

    const username = form.get("username") ?? "";
    const password = form.get("password") ?? "";
    const at = context.remoteAddress;
    const keys = at === undefined
      ? [throttleKey("login-user", username, "unknown")]
      : [throttleKey("login", at), throttleKey("login-user", username, at)];
    const now = clock();
    // Reserve the attempt before the slow comparison (finding 1): concurrent guesses cannot all slip past the
    // check before the first failure is recorded. A success gives its reservation back.
    const reserved: string[] = [];
    if (throttle) {
      let wait = 0;
      for (const k of keys) {
        wait = Math.max(wait, await reserveAttempt(throttle, k, now));
        if (wait > 0) break;
        reserved.push(k);
      }
      if (wait > 0) {
        for (const k of reserved) await throttle.release?.(k, now);
        const seconds = Math.ceil(wait / 1000);
        const error = `Too many failed sign-in attempts. Please try again in ${seconds} seconds.`;
        context.audit?.({ type: "request.throttled", reason: "signin" });
        return showLogin(request, context, cookies, secure, { error, username, status: 429, retryAfter: seconds });
      }
    }
    const user = username !== "" && password !== "" ? await options.verify(username, password) : null;
    if (user === null || user === undefined) {
      context.audit?.({ type: "signin.failed", reason: "wrong_password" });
      return showLogin(request, context, cookies, secure, { error: WRONG, username });
    }
    if (throttle) for (const k of reserved) await throttle.release?.(k, now);
    if (typeof user !== "object" || typeof user.id !== "string" || user.id === "") {
      throw new TypeError(`passwordLogin: "verify" must return an EndUser with a non-empty "id", or null`);
    }
    context.audit?.({ type: "signin.succeeded", user_id: user.id });
    // Relative (RFC 9110 §10.2.2): the browser stays on the origin it used, and `Host` never picks the target.
    const url = new URL(request.url);
    const response = redirectResponse(url.pathname + url.search, 303);
    response.headers.push(
      ["set-cookie", cookie(cookieName, await issueSession(user, targetOf(request)), secure, ttl)],
      ["set-cookie", cookie(nonceName, "", secure, 0)],
    );
    return respond(request, response);
  };

  async function logout(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const secure = options.secure ?? (prefixed || url.protocol === "https:");
    // Before anything else: a preflight or any other method gets no page and no cookie (never a 2xx to OPTIONS).
    if (request.method !== "GET" && request.method !== "HEAD" && request.method !== "POST") {
      const page = errorPage(405, "Request refused", "Use the sign-out form.");
      page.headers.push(["allow", "GET, HEAD, POST"]);
      return respond(request, page);
    }
    const session = await findSession(parseCookies(request.headers.get("cookie")).get(cookieName) ?? []);
    const done = (title: string, message: string): Response => {
      const page = htmlPage(200, { title, main: `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>` });
      page.headers.push(["set-cookie", cookie(cookieName, "", secure, 0)]);
      return respond(request, page);
    };
    if (session === null) return done("Signed out", "You are not signed in.");
    const csrf = await hmac(await key(), LOGOUT_LABEL + (session.sid ?? session.payload));
    if (request.method === "POST") {
      let text: string;
      try {
        text = await readText(request, 4096);
      } catch {
        return respond(request, errorPage(413, "Request refused", "The form is too large."));
      }
      const form = new URLSearchParams(text);
      if (!timingSafeEqual(csrf, form.get("csrf") ?? "")) {
        return respond(request, errorPage(403, "Request refused", "The sign-out form has expired or did not come from this site."));
      }
      if (session.sid !== undefined && options.sessions) {
        await options.sessions.markOnce(ENDED + session.sid, session.exp * 1000, clock());
      }
      return done("Signed out", "You have been signed out.");
    }
    const main = `<h1>Sign out</h1>\n<p>Signed in as <strong>${escapeHtml(session.user.name ?? session.user.id)}</strong>.</p>\n` +
      `<form method="post" action="${escapeHtml(url.pathname)}" class="stack">\n` +
      `<input type="hidden" name="csrf" value="${escapeHtml(csrf)}">\n` +
      `<button type="submit" class="primary">Sign out</button>\n</form>`;
    return respond(request, htmlPage(200, { title: "Sign out", main }));
  }

  return Object.assign(hook, { logout });
}

/**
 * Reserves one attempt under `key`: the throttle's atomic `reserve`, or for a throttle without it, its check
 * followed at once by a failure (given back on success like a reservation).
 */
async function reserveAttempt(throttle: Throttle, key: string, now: number): Promise<number> {
  if (throttle.reserve) return throttle.reserve(key, now);
  const wait = await throttle.retryAfter(key, now);
  if (wait === 0) await throttle.fail(key, now);
  return wait;
}

/** The path and query of a request: the authorization request a sign-in is made for. */
function targetOf(request: Request): string {
  const url = new URL(request.url);
  return url.pathname + url.search;
}

/** Whether the session's sign-in was made for `target` within {@link FRESH_LOGIN_MS}. */
function signedInFor(session: Session, target: string, now: number): boolean {
  return session.for !== undefined && session.auth !== undefined && timingSafeEqual(session.for, sha256(target)) &&
    now - session.auth * 1000 < FRESH_LOGIN_MS;
}

/** A `Set-Cookie` value: host-only, whole-site, script-proof, and not sent on cross-site POSTs. */
function cookie(name: string, value: string, secure: boolean, maxAge?: number): string {
  return (
    `${name}=${value}; Path=/; HttpOnly; SameSite=Lax` +
    (maxAge !== undefined ? `; Max-Age=${maxAge}` : "") +
    (secure ? "; Secure" : "")
  );
}

/** Parses a `Cookie` header into every value per name (a name can repeat across paths); never throws. */
function parseCookies(header: string | null): Map<string, string[]> {
  const cookies = new Map<string, string[]>();
  if (header === null) return cookies;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq === -1) continue;
    const name = part.slice(0, eq).trim();
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    const list = cookies.get(name);
    if (list) list.push(value);
    else cookies.set(name, [value]);
  }
  return cookies;
}

/**
 * A live session: its user, its id (absent in cookies issued before sessions had one), expiry and payload, and
 * when and for which request the user signed in (absent in older cookies).
 */
interface Session {
  user: EndUser;
  sid: string | undefined;
  exp: number;
  payload: string;
  auth: number | undefined;
  for: string | undefined;
}

/** The session of a cookie, or null when it is malformed, forged or expired. */
async function checkSession(key: CryptoKey, value: string, now: number): Promise<Session | null> {
  const dot = value.indexOf(".");
  if (dot === -1) return null;
  const payload = value.slice(0, dot);
  if (!timingSafeEqual(await hmac(key, SESSION_LABEL + payload), value.slice(dot + 1))) return null;
  let claims: unknown;
  try {
    claims = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(fromBase64url(payload)));
  } catch {
    return null;
  }
  if (typeof claims !== "object" || claims === null) return null;
  const { sub, name, exp, sid, auth, for: target } = claims as Record<string, unknown>;
  if (typeof sub !== "string" || sub === "" || typeof exp !== "number" || !(now < exp * 1000)) return null;
  const user = typeof name === "string" ? { id: sub, name } : { id: sub };
  return {
    user,
    sid: typeof sid === "string" ? sid : undefined,
    exp,
    payload,
    auth: typeof auth === "number" ? auth : undefined,
    for: typeof target === "string" ? target : undefined,
  };
}

/** Decodes base64url without padding; throws on anything else. */
function fromBase64url(value: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(value)) throw new TypeError("Not base64url");
  const binary = atob(value.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
