/**
 * The login and consent pages in a real browser: Debian's Chromium, driven by playwright-core, against the
 * reference server on a socket. Beside it run a client app at the redirect URI and an attacker on two other
 * origins: `http://127.0.0.1:PORT` (same site, other origin: cookies go along, so only the server's own
 * checks stand in the way) and `http://attacker.test:PORT` (another site; Chromium maps the name to 127.0.0.1).
 *
 * Needs `/usr/bin/chromium` (`apt-get install -y chromium`). Without it the suite FAILS, naming that command: `npm
 * test` never passes by skipping the browser. `OAUTH2_TEST_CHROMIUM` points at another binary (or a missing one,
 * to check that rule).
 * Screenshots land in `.artifacts/screenshots/`.
 */
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContext, type BrowserContextOptions, chromium, type Frame, type Page } from
  "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type NodeServer, serveNode } from "../../lib/adapters/node.ts";
import { createReferenceApp, type ReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, type ReferenceConfig } from "../../lib/reference/config.ts";

const CHROMIUM = process.env.OAUTH2_TEST_CHROMIUM ?? "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const SKIP_NOTE = HAVE_CHROMIUM ? "" : ` (cannot run: no Chromium at ${CHROMIUM}; apt-get install -y chromium)`;

const LAUNCH_ARGS = [
  "--no-sandbox",
  "--headless",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  // The attacker's second site resolves to loopback; every other name fails, so nothing leaves the machine.
  "--host-resolver-rules=MAP attacker.test 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];
const ALLOWED_HOSTS = new Set(["127.0.0.1", "attacker.test"]);

const USER = { username: "demo", password: "demo-password", name: "Demo User" };
const CLIENT_ID = "browser-app";
const CLIENT_NAME = "Browser Test App";
const SCOPE = "reports.read";
const SCOPE_DESCRIPTION = DEMO_CONFIG.scopes.find((s) => s.name === SCOPE)!.description;
const SESSION_COOKIE = "oauth2_session";
const SCREENSHOTS = fileURLToPath(new URL("../../.artifacts/screenshots/", import.meta.url));
const PHONE: BrowserContextOptions = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };

const b64url = (bytes: Buffer): string => bytes.toString("base64url");

/** A PKCE pair (RFC 7636 §4.1-4.2, S256). */
function pkce(): { verifier: string; challenge: string } {
  const verifier = b64url(randomBytes(32));
  return { verifier, challenge: b64url(createHash("sha256").update(verifier).digest()) };
}

/** A plain node:http server on 127.0.0.1 and a free port. */
async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; port: number }> {
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return { server, port: (server.address() as AddressInfo).port };
}

async function closeServer(server: Server | undefined): Promise<void> {
  if (server === undefined) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

const html = (title: string, body: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;

// No run may pass by skipping the browser: a missing Chromium is a failure that names the install command.
it(`has Chromium at ${CHROMIUM}`, () => {
  if (!HAVE_CHROMIUM) {
    throw new Error(`No Chromium at ${CHROMIUM}: install it with "apt-get install -y chromium" (CI does), then run the tests again`);
  }
});

describe.skipIf(!HAVE_CHROMIUM)(`login and consent in Chromium${SKIP_NOTE}`, { timeout: 30_000 }, () => {
  let browser: Browser | undefined;
  let issuer: NodeServer | undefined;
  let client: Server | undefined;
  let attacker: Server | undefined;
  let ISSUER = "";
  let REDIRECT_URI = "";
  let CLIENT_ORIGIN = "";
  let SAME_SITE_ATTACKER = "";
  let CROSS_SITE_ATTACKER = "";
  /** Every query the client app received at its redirect URI. */
  const callbacks: URLSearchParams[] = [];
  /** The attacker's pages, by path; each test writes its own. */
  const attackerPages = new Map<string, string>();
  /** Requests the browser tried to send anywhere but the three local servers. */
  const offsite: string[] = [];
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    const clientSide = await listen((req, res) => {
      const url = new URL(req.url ?? "/", "http://client.invalid");
      if (url.pathname === "/callback") callbacks.push(url.searchParams);
      const body = url.pathname === "/callback"
        ? html("Client callback", `<h1>Back at the client</h1><p id="query">${url.search.length} characters of query</p>`)
        : html("Framable", `<p id="framable">This page may be framed.</p>`);
      res.writeHead(url.pathname === "/callback" || url.pathname === "/framable" ? 200 : 404, {
        "content-type": "text/html;charset=utf-8",
      });
      res.end(body);
    });
    client = clientSide.server;
    CLIENT_ORIGIN = `http://127.0.0.1:${clientSide.port}`;
    REDIRECT_URI = `${CLIENT_ORIGIN}/callback`;

    const attackerSide = await listen((req, res) => {
      const page = attackerPages.get(new URL(req.url ?? "/", "http://attacker.invalid").pathname);
      res.writeHead(page === undefined ? 404 : 200, { "content-type": "text/html;charset=utf-8" });
      res.end(page ?? "not found");
    });
    attacker = attackerSide.server;
    SAME_SITE_ATTACKER = `http://127.0.0.1:${attackerSide.port}`;
    CROSS_SITE_ATTACKER = `http://attacker.test:${attackerSide.port}`;

    const config: ReferenceConfig = {
      ...DEMO_CONFIG,
      clients: [
        ...DEMO_CONFIG.clients,
        {
          client_id: CLIENT_ID,
          name: CLIENT_NAME,
          redirect_uris: [REDIRECT_URI],
          scopes: [SCOPE],
          grant_types: ["authorization_code", "refresh_token"],
        },
      ],
    };
    // The issuer holds the port, which port 0 only knows after listening; requests wait for the app.
    let ready!: (app: ReferenceApp) => void;
    const app = new Promise<ReferenceApp>((resolve) => (ready = resolve));
    issuer = await serveNode({ fetch: async (request, info) => (await app).fetch(request, info) }, { port: 0, shutdownTimeout: 2_000 });
    ISSUER = issuer.url;
    ready(await createReferenceApp({ issuer: ISSUER, config, passwordIterations: 1000 }));

    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS, timeout: 20_000 });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([issuer?.close(), closeServer(client), closeServer(attacker)]);
  }, 30_000);

  beforeEach(() => {
    callbacks.length = 0;
    attackerPages.clear();
    offsite.length = 0;
  });

  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((context) => context.close()));
    expect(offsite, "the browser only talks to 127.0.0.1").toEqual([]);
  });

  async function newContext(options: BrowserContextOptions = DESKTOP): Promise<BrowserContext> {
    const context = await browser!.newContext(options);
    contexts.push(context);
    context.setDefaultTimeout(10_000);
    context.on("request", (request) => {
      const url = new URL(request.url());
      if (url.protocol.startsWith("http") && !ALLOWED_HOSTS.has(url.hostname)) offsite.push(request.url());
    });
    return context;
  }

  function authorizeUrl(state: string, challenge: string): string {
    const query = new URLSearchParams({
      module: "OAuth2",
      action: "authorize",
      response_type: "code",
      client_id: CLIENT_ID,
      redirect_uri: REDIRECT_URI,
      scope: SCOPE,
      state,
      code_challenge: challenge,
      code_challenge_method: "S256",
    });
    return `${ISSUER}/index.php?${query}`;
  }

  const newState = (): string => b64url(randomBytes(12));

  /** The text of the page's heading, or "" while there is none (the page may be between two documents). */
  const headingOf = (page: Page): Promise<string> =>
    page.locator("h1").first().innerText({ timeout: 500 }).then((text) => text.trim(), () => "");

  /** Waits until the page shows this heading; a failure names the heading the page shows instead. */
  async function expectHeading(page: Page, expected: string, what: string): Promise<void> {
    await expect.poll(() => headingOf(page), { timeout: 5_000, message: what }).toBe(expected);
  }

  async function expectLoginPage(page: Page): Promise<void> {
    await expectHeading(page, "Sign in", "the login page");
    expect(await page.title()).toBe("Sign in");
    expect(await page.getByRole("button", { name: /allow/i }).count()).toBe(0);
  }

  async function expectConsentPage(page: Page): Promise<void> {
    await expectHeading(page, `${CLIENT_NAME} wants to access your account`, "the consent page");
    expect(await page.title()).toBe(`Authorize ${CLIENT_NAME}`);
  }

  /** Opens the authorization URL and signs in with the mouse; leaves the page on the consent screen. */
  async function signIn(page: Page, url: string): Promise<void> {
    await page.goto(url);
    await expectLoginPage(page);
    await page.getByLabel("Username").fill(USER.username);
    await page.getByLabel("Password").fill(USER.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expectConsentPage(page);
  }

  const onCallback = (url: URL): boolean => url.origin === CLIENT_ORIGIN && url.pathname === "/callback";

  it("runs the code flow with PKCE: sign in, consent, callback with code, state and iss, token, API", async () => {
    const page = await (await newContext()).newPage();
    const consoleErrors: string[] = [];
    page.on("console", (message) => {
      // The browser's own favicon fetch may 404 on either origin, before or after the page is read: not a page's error.
      const at = message.location().url;
      if (message.type() === "error" && !/\/favicon\.ico$/.test(at)) consoleErrors.push(`${message.text()} (${at})`);
    });
    const { verifier, challenge } = pkce();
    const state = newState();

    await signIn(page, authorizeUrl(state, challenge));
    const main = page.locator("main");
    expect(await main.textContent()).toContain(CLIENT_NAME);
    expect(await main.textContent()).toContain(CLIENT_ID);
    expect(await main.textContent()).toContain(USER.name);
    expect(await page.locator(".scopes li").textContent()).toContain(SCOPE_DESCRIPTION);
    expect(await page.locator(".scopes code").textContent()).toBe(SCOPE);
    expect(await page.locator(".note").textContent()).toContain(CLIENT_ORIGIN);

    await page.getByRole("button", { name: "Allow" }).click();
    await page.waitForURL(onCallback);
    const landed = new URL(page.url()).searchParams;
    expect(landed.get("state")).toBe(state);
    expect(landed.get("iss")).toBe(ISSUER);
    const code = landed.get("code");
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(callbacks.map((q) => q.get("code"))).toEqual([code]);
    // No CSP violation or script error on our pages (the nonce'd style, form-action to the client's origin).
    expect(consoleErrors).toEqual([]);

    const tokenResponse = await fetch(`${ISSUER}/index.php?module=OAuth2&action=token`, {
      method: "POST",
      body: new URLSearchParams({
        grant_type: "authorization_code",
        client_id: CLIENT_ID,
        redirect_uri: REDIRECT_URI,
        code: code!,
        code_verifier: verifier,
      }),
      signal: AbortSignal.timeout(5_000),
    });
    expect(tokenResponse.status).toBe(200);
    const token = await tokenResponse.json() as Record<string, unknown>;
    expect(token).toMatchObject({ token_type: "Bearer", scope: SCOPE });
    expect(typeof token.access_token).toBe("string");

    const reports = await fetch(`${ISSUER}/api/reports`, {
      headers: { authorization: `Bearer ${token.access_token as string}` },
      signal: AbortSignal.timeout(5_000),
    });
    expect(reports.status).toBe(200);
    expect((await reports.json() as { reports: unknown[] }).reports.length).toBeGreaterThan(0);
  });

  it("sends access_denied and the state back on Deny, and no code (signed in with the keyboard)", async () => {
    const page = await (await newContext(PHONE)).newPage();
    const state = newState();
    await page.goto(authorizeUrl(state, pkce().challenge));
    await expectLoginPage(page);
    // The username field has focus on arrival; Tab reaches the password, Enter submits.
    await page.keyboard.type(USER.username);
    await page.keyboard.press("Tab");
    await page.keyboard.type(USER.password);
    await page.keyboard.press("Enter");
    await expectConsentPage(page);

    await page.getByRole("button", { name: "Deny" }).click();
    await page.waitForURL(onCallback);
    const landed = new URL(page.url()).searchParams;
    expect(landed.get("error")).toBe("access_denied");
    expect(landed.get("state")).toBe(state);
    expect(landed.get("iss")).toBe(ISSUER);
    expect(landed.has("code")).toBe(false);
    expect(callbacks.some((q) => q.has("code"))).toBe(false);
  });

  /** What became of a framed page: its address and whether the login or consent form rendered in it. */
  async function inspectFrame(page: Page, name: string): Promise<{ url: string; forms: number; text: string }> {
    const frame: Frame | null = page.frame({ name });
    expect(frame, `frame "${name}" exists`).not.toBeNull();
    const forms = await frame!.locator("button[value=allow], input[name=password], input[name=csrf]").count();
    const text = await frame!.locator("body").innerText().catch(() => "");
    return { url: frame!.url(), forms, text };
  }

  it("cannot be framed by another origin: neither the login nor the consent page renders in an iframe", async () => {
    const page = await (await newContext()).newPage();
    const blocked: string[] = [];
    const frameErrors: string[] = [];
    page.on("requestfailed", (request) => {
      if (request.url().startsWith(ISSUER)) blocked.push(request.failure()?.errorText ?? "");
    });
    page.on("console", (message) => {
      if (/frame-ancestors|X-Frame-Options/i.test(message.text())) frameErrors.push(message.text());
    });
    const url = authorizeUrl(newState(), pkce().challenge);
    // Same site as the server, so the session cookie goes along: what would render is the real consent page.
    attackerPages.set("/frame", html("Win a prize", `<h1>Click the button to win</h1>` +
      `<iframe name="victim" src="${url.replace(/&/g, "&amp;")}" width="600" height="600"></iframe>` +
      `<iframe name="control" src="${CLIENT_ORIGIN}/framable" width="300" height="100"></iframe>`));

    // Signed out: the login page.
    await page.goto(`${SAME_SITE_ATTACKER}/frame`);
    const control = await inspectFrame(page, "control");
    expect(control.text, "an ordinary page does render in a frame here").toContain("This page may be framed.");
    let victim = await inspectFrame(page, "victim");
    expect(victim.forms, `no login form in the frame; it shows: ${victim.text}`).toBe(0);
    expect(victim.url).toMatch(/^chrome-error:/);

    // Signed in (in another tab of the same browser): the consent page.
    const tab = await page.context().newPage();
    await signIn(tab, url);
    await tab.close();
    await page.goto(`${SAME_SITE_ATTACKER}/frame`);
    victim = await inspectFrame(page, "victim");
    expect(victim.forms, `no consent form in the frame; it shows: ${victim.text}`).toBe(0);
    expect(victim.url).toMatch(/^chrome-error:/);

    // The server answered both times; the browser refused to show the answer.
    expect(blocked).toEqual(["net::ERR_BLOCKED_BY_RESPONSE", "net::ERR_BLOCKED_BY_RESPONSE"]);
    expect(frameErrors.length).toBe(2);
    expect(callbacks).toEqual([]);
  });

  /** An attacker page that posts `decision=allow` (and no CSRF token) to the authorization URL on load. */
  function autoSubmit(url: string): string {
    return html("Loading…", `<form id="f" method="post" action="${url.replace(/&/g, "&amp;")}">` +
      `<input type="hidden" name="decision" value="allow"></form>` +
      `<script>document.getElementById("f").submit()</script>`);
  }

  async function postFromAttacker(page: Page, attackerOrigin: string, url: string): Promise<number> {
    attackerPages.set("/post", autoSubmit(url));
    const answer = page.waitForResponse((r) => r.url() === url && r.request().method() === "POST");
    await page.goto(`${attackerOrigin}/post`);
    const response = await answer;
    await page.waitForLoadState("load");
    return response.status();
  }

  it("refuses a consent POST without the CSRF token from a same-site origin: 403 page, no code", async () => {
    const page = await (await newContext()).newPage();
    const url = authorizeUrl(newState(), pkce().challenge);
    await signIn(page, url); // signed in: the session cookie is in this browser

    const status = await postFromAttacker(page, SAME_SITE_ATTACKER, url);
    expect(status).toBe(403);
    expect(page.url()).toBe(url);
    await expectHeading(page, "Request refused", "the error page");
    expect(await page.locator("main").innerText()).toMatch(/did not come from this site/);
    expect(await page.getByRole("button").count()).toBe(0);
    expect(callbacks).toEqual([]);

    // The user was and is still signed in: the refusal was the token's doing, not a missing session.
    await page.goto(url);
    await expectConsentPage(page);
  });

  it("gives a cross-site consent POST no session (SameSite=Lax): the login page, no code", async () => {
    const page = await (await newContext()).newPage();
    const url = authorizeUrl(newState(), pkce().challenge);
    await signIn(page, url);

    const status = await postFromAttacker(page, CROSS_SITE_ATTACKER, url);
    expect(status).toBe(200);
    await expectLoginPage(page);
    expect(callbacks).toEqual([]);

    await page.goto(url);
    await expectConsentPage(page);
  });

  it("refuses a session cookie with one character changed: the login page again", async () => {
    const context = await newContext();
    const page = await context.newPage();
    const url = authorizeUrl(newState(), pkce().challenge);
    await signIn(page, url);
    await page.reload();
    await expectConsentPage(page); // the untouched cookie works

    const session = (await context.cookies(ISSUER)).find((c) => c.name === SESSION_COOKIE);
    expect(session, "the session cookie").toBeDefined();
    expect(session!.httpOnly).toBe(true);
    expect(session!.sameSite).toBe("Lax");
    const original = session!.value;
    // One character of the signature, well inside it so that it is not padding bits.
    const at = original.length - 10;
    const tampered = original.slice(0, at) + (original[at] === "A" ? "B" : "A") + original.slice(at + 1);
    await context.addCookies([{ ...session!, value: tampered }]);
    expect((await context.cookies(ISSUER)).filter((c) => c.name === SESSION_COOKIE).map((c) => c.value))
      .toEqual([tampered]);

    await page.reload();
    await expectLoginPage(page);

    await context.addCookies([{ ...session!, value: original }]);
    await page.reload();
    await expectConsentPage(page);
  });

  /** Problems found on the page: labels, accessible names, language, title, contrast, target size, overflow. */
  async function accessibilityProblems(page: Page): Promise<string[]> {
    return page.evaluate(() => {
      const problems: string[] = [];
      const parse = (value: string): number[] => {
        const parts = value.match(/[\d.]+/g)?.map(Number) ?? [];
        return [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0, parts[3] ?? 1];
      };
      // WCAG 2.x relative luminance and contrast ratio.
      const luminance = ([r, g, b]: number[]): number => {
        const [R, G, B] = [r!, g!, b!].map((c) => {
          const s = c / 255;
          return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * R! + 0.7152 * G! + 0.0722 * B!;
      };
      /** The first opaque background behind an element (alpha is ignored; our pages use none on text). */
      const backgroundOf = (element: Element | null): number[] => {
        for (let e = element; e !== null; e = e.parentElement) {
          const bg = parse(getComputedStyle(e).backgroundColor);
          if (bg[3]! > 0.5) return bg;
        }
        return [255, 255, 255, 1];
      };
      const contrast = (element: Element): number => {
        const a = luminance(parse(getComputedStyle(element).color));
        const b = luminance(backgroundOf(element));
        return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      };
      const describe = (e: Element): string => `<${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ""}${
        e.className && typeof e.className === "string" ? `.${e.className.split(" ").join(".")}` : ""
      }> "${(e.textContent ?? "").trim().slice(0, 30)}"`;

      if (!document.documentElement.lang) problems.push("no lang on <html>");
      if (document.title.trim() === "") problems.push("no <title>");
      if (document.querySelectorAll("h1").length !== 1) problems.push("not exactly one <h1>");
      for (const input of document.querySelectorAll<HTMLInputElement>("input:not([type=hidden]), select, textarea")) {
        const labelled = [...(input.labels ?? [])].some((l) => (l.textContent ?? "").trim() !== "") ||
          (input.getAttribute("aria-label") ?? "").trim() !== "" || input.hasAttribute("aria-labelledby");
        if (!labelled) problems.push(`no label: ${describe(input)}`);
      }
      for (const button of document.querySelectorAll("button, [role=button], input[type=submit]")) {
        const name = (button.textContent ?? "").trim() || button.getAttribute("aria-label") || "";
        if (name === "") problems.push(`button without a name: ${describe(button)}`);
      }
      for (const target of document.querySelectorAll("button, input:not([type=hidden])")) {
        const box = target.getBoundingClientRect();
        if (box.height < 44) problems.push(`touch target under 44 px high (${box.height}): ${describe(target)}`);
      }
      // Every element with text of its own: 4.5:1, or 3:1 for large text (24 px, or 18.66 px bold).
      for (const element of document.body.querySelectorAll("*")) {
        const ownText = [...element.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim() !== "");
        if (!ownText) continue;
        const style = getComputedStyle(element);
        const size = parseFloat(style.fontSize);
        const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
        const ratio = contrast(element);
        if (ratio < (large ? 3 : 4.5)) problems.push(`contrast ${ratio.toFixed(2)}:1: ${describe(element)}`);
      }
      const primary = document.querySelector("button.primary");
      if (primary !== null && contrast(primary) < 4.5) problems.push("main button contrast under 4.5:1");
      if (document.documentElement.scrollWidth > window.innerWidth) problems.push("scrolls sideways");
      return problems;
    });
  }

  it("looks right on a phone and a desktop, light and dark: screenshots and an accessibility check", async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const shots: string[] = [];
    const problems: string[] = [];
    const variants = [
      { name: "phone", options: PHONE },
      { name: "desktop", options: DESKTOP },
      { name: "phone-dark", options: { ...PHONE, colorScheme: "dark" } },
      { name: "small-phone", options: { ...PHONE, viewport: { width: 320, height: 568 } } },
    ] as const satisfies readonly { name: string; options: BrowserContextOptions }[];
    for (const variant of variants) {
      const page = await (await newContext(variant.options)).newPage();
      const check = async (pageName: string): Promise<void> => {
        const file = `${SCREENSHOTS}${pageName}-${variant.name}.png`;
        await page.screenshot({ path: file, fullPage: true });
        shots.push(file);
        for (const problem of await accessibilityProblems(page)) problems.push(`${pageName}-${variant.name}: ${problem}`);
      };
      const url = authorizeUrl(newState(), pkce().challenge);
      await page.goto(url);
      await expectLoginPage(page);
      await check("login");

      // By field name, not label: a missing label should show in the list of problems, not as a timeout.
      await page.locator("input[name=username]").fill(USER.username);
      await page.locator("input[name=password]").fill("not the password");
      await page.locator("button[type=submit]").click();
      await page.getByRole("alert").waitFor();
      await check("login-error");

      await page.locator("input[name=password]").fill(USER.password);
      await page.locator("button[type=submit]").click();
      await expectConsentPage(page);
      await check("consent");

      await page.goto(`${ISSUER}/authorize?client_id=nobody&response_type=code`);
      await expectHeading(page, "This sign-in link is not valid", "the error page");
      await check("error");
    }
    for (const file of shots) expect(existsSync(file), file).toBe(true);
    expect(problems).toEqual([]);
  });
});
