/**
 * The connected-apps page in a real browser (Debian's Chromium via playwright-core) against the reference
 * server on a socket: a user authorizes an app, sees it on /account/apps with its scopes and dates, and revokes
 * it, which kills its access and refresh tokens. A cross-site page can neither frame the page nor post a revoke,
 * and a same-origin POST without the CSRF token is refused.
 *
 * Needs /usr/bin/chromium: without it this file FAILS (install: apt-get install -y chromium), it never skips.
 */
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type NodeServer, serveNode } from "../../lib/adapters/node.ts";
import { createReferenceApp, type ReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, type ReferenceConfig } from "../../lib/reference/config.ts";

const CHROMIUM = process.env.OAUTH2_TEST_CHROMIUM ?? "/usr/bin/chromium";
const LAUNCH_ARGS = [
  "--no-sandbox", "--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync",
  "--host-resolver-rules=MAP attacker.test 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const SCREENSHOTS = fileURLToPath(new URL("../../.artifacts/screenshots/", import.meta.url));
const SECRET = "photo-printer-secret-0123456789";

let browser: Browser | undefined;
let issuer: NodeServer | undefined;
let side: Server | undefined;
let ISSUER = "";
let SIDE = "";
let CROSS_SITE = "";
const sidePages = new Map<string, string>();

test("Chromium is installed (otherwise: apt-get install -y chromium)", () => {
  expect(existsSync(CHROMIUM), `No Chromium at ${CHROMIUM}: install it with "apt-get install -y chromium"`).toBe(true);
});

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  // One helper server: the client's redirect URI, and the attacker's pages (same port, another site's name).
  side = createServer((req, res) => {
    const page = sidePages.get(new URL(req.url ?? "/", "http://x").pathname);
    res.writeHead(200, { "content-type": "text/html;charset=utf-8" });
    res.end(page ?? "<!doctype html><title>Callback</title><h1>Back at the app</h1>");
  });
  await new Promise<void>((resolve) => side!.listen(0, "127.0.0.1", resolve));
  const port = (side.address() as AddressInfo).port;
  SIDE = `http://127.0.0.1:${port}`;
  CROSS_SITE = `http://attacker.test:${port}`;
  const config: ReferenceConfig = {
    ...structuredClone(DEMO_CONFIG),
    clients: [{
      client_id: "photo-printer", client_secret: SECRET, name: "Photo Printer", redirect_uris: [`${SIDE}/callback`],
      scopes: ["reports.read"], grant_types: ["authorization_code", "refresh_token"],
    }],
  };
  let ready!: (app: ReferenceApp) => void;
  const app = new Promise<ReferenceApp>((resolve) => (ready = resolve));
  issuer = await serveNode({ fetch: async (request, info) => (await app).fetch(request, info) }, { port: 0, shutdownTimeout: 2_000 });
  ISSUER = issuer.url;
  ready(await createReferenceApp({ issuer: ISSUER, config, passwordIterations: 1000 }));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS, timeout: 20_000 });
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await issuer?.close();
  side?.closeAllConnections();
  await new Promise((resolve) => side ? side.close(resolve) : resolve(undefined));
}, 30_000);

/** Signs in and allows Photo Printer in `page`; returns the tokens its back end gets for the code. */
async function authorize(page: Page): Promise<{ access_token: string; refresh_token: string }> {
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const query = new URLSearchParams({
    response_type: "code", client_id: "photo-printer", redirect_uri: `${SIDE}/callback`, scope: "reports.read",
    state: "s1", code_challenge: challenge, code_challenge_method: "S256",
  });
  await page.goto(`${ISSUER}/authorize?${query}`);
  if (await page.locator("#username").count()) {
    await page.fill("#username", "demo");
    await page.fill("#password", "demo-password");
    await page.click("button[type=submit]");
  }
  await page.click("button[value=allow]");
  await page.waitForURL(`${SIDE}/callback?**`);
  const code = new URL(page.url()).searchParams.get("code")!;
  const response = await fetch(`${ISSUER}/token`, {
    method: "POST",
    headers: { authorization: `Basic ${btoa(`photo-printer:${SECRET}`)}` },
    body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: `${SIDE}/callback`, code_verifier: verifier }),
  });
  expect(response.status).toBe(200);
  return await response.json();
}

const api = (token: string) => fetch(`${ISSUER}/api/reports`, { headers: { authorization: `Bearer ${token}` } });
const refresh = (token: string) =>
  fetch(`${ISSUER}/token`, {
    method: "POST",
    headers: { authorization: `Basic ${btoa(`photo-printer:${SECRET}`)}` },
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: token }),
  });

describe.skipIf(!HAVE_CHROMIUM)("connected apps in Chromium", () => {
  test("a user sees the app they authorized and revokes it: its access and refresh tokens stop working", async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    const tokens = await authorize(page);
    expect((await api(tokens.access_token)).status).toBe(200);

    const response = await page.goto(`${ISSUER}/account/apps`);
    expect(response!.headers()["x-frame-options"]).toBe("DENY");
    expect(response!.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    await expect.poll(() => page.locator("h1").textContent()).toBe("Connected apps");
    const app = page.locator("[data-grant]");
    expect(await app.count()).toBe(1);
    const text = await app.textContent();
    expect(text).toContain("Photo Printer");
    expect(text).toContain("reports.read");
    expect(text).toContain("Read your analytics reports");
    expect(text).toMatch(/Authorized \d{4}-\d\d-\d\d \d\d:\d\d UTC · last used \d{4}-\d\d-\d\d/);
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: `${SCREENSHOTS}connected-apps.png`, fullPage: true });

    await app.locator("button").click();
    await page.waitForURL(`${ISSUER}/account/apps?revoked=1`);
    expect(await page.locator("[role=status]").textContent()).toBe("Access revoked.");
    expect(await page.locator("[data-grant]").count()).toBe(0);
    expect(await page.locator("#empty").count()).toBe(1);
    expect((await api(tokens.access_token)).status).toBe(401);
    const refreshed = await refresh(tokens.refresh_token);
    expect([refreshed.status, (await refreshed.json()).error]).toEqual([400, "invalid_grant"]);
    await context.close();
  }, 60_000);

  test("signing in on the page itself shows the list; a cross-site page can neither frame it nor revoke through it", async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    const tokens = await authorize(page);
    // A fresh browser signs in on the page.
    const other = await browser!.newContext();
    const fresh = await other.newPage();
    await fresh.goto(`${ISSUER}/account/apps`);
    await fresh.fill("#username", "demo");
    await fresh.fill("#password", "demo-password");
    await fresh.click("button[type=submit]");
    await expect.poll(() => fresh.locator("h1").textContent()).toBe("Connected apps");
    const grantId = await fresh.locator("input[name=grant_id]").first().inputValue();
    await other.close();

    // Framing from another site: Chromium refuses to render the page in the frame (a control page does render).
    const refusals: string[] = [];
    page.on("console", (message) => {
      if (/frame-ancestors|X-Frame-Options/i.test(message.text())) refusals.push(message.text());
    });
    sidePages.set("/framable", "<!doctype html><title>Framable</title><p>This page may be framed.</p>");
    sidePages.set("/frame", `<!doctype html><title>Evil</title><iframe name="victim" src="${ISSUER}/account/apps"></iframe>` +
      `<iframe name="control" src="${CROSS_SITE}/framable"></iframe>`);
    await page.goto(`${CROSS_SITE}/frame`);
    await expect.poll(() => page.frame({ name: "control" })?.locator("body").innerText().catch(() => "")).toContain("may be framed");
    const victim = page.frame({ name: "victim" })!;
    expect(await victim.locator("button, input[name=csrf], input[name=password]").count()).toBe(0);
    await expect.poll(() => refusals.length).toBeGreaterThan(0);

    // A cross-site auto-submitted revoke form: SameSite=Lax keeps the session cookie out, Origin is refused.
    sidePages.set("/csrf", `<!doctype html><title>Win a prize</title>` +
      `<form id="f" method="post" action="${ISSUER}/account/apps"><input name="grant_id" value="${grantId}"><input name="csrf" value="guess"></form>` +
      `<script>document.getElementById("f").submit()</script>`);
    await page.goto(`${CROSS_SITE}/csrf`);
    await page.waitForLoadState("load");
    await page.waitForTimeout(300);
    expect((await api(tokens.access_token)).status).toBe(200);

    // Same origin, with the session cookie but without the page's CSRF token: refused.
    await page.goto(`${ISSUER}/account/apps`);
    await page.locator("input[name=csrf]").first().evaluate((input: HTMLInputElement) => (input.value = "forged"));
    const [refused] = await Promise.all([page.waitForResponse(`${ISSUER}/account/apps`), page.locator("[data-grant] button").first().click()]);
    expect(refused.status()).toBe(403);
    expect(await page.locator("h1").textContent()).toBe("Request refused");
    expect((await api(tokens.access_token)).status).toBe(200);
    await context.close();
  }, 60_000);
});
