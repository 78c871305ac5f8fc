/**
 * The device flow (RFC 8628) end to end: openid-client plays the device (initiateDeviceAuthorization, then
 * pollDeviceAuthorizationGrant), and a user in Debian's Chromium opens the verification URI, types the code
 * (lower case, no dash), signs in and allows or denies, against the reference server on a socket. The server's
 * clock can be moved forward to reach expiry without waiting.
 *
 * Needs `/usr/bin/chromium` (or `OAUTH2_TEST_CHROMIUM`); without it the suite fails, as test/browser/flows.test.ts.
 */
import { existsSync } from "node:fs";
import process from "node:process";
import * as client from "openid-client";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type NodeServer, serveNode } from "../../lib/adapters/node.ts";
import { createReferenceApp, type ReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, type ReferenceConfig } from "../../lib/reference/config.ts";

const CHROMIUM = process.env.OAUTH2_TEST_CHROMIUM ?? "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const LAUNCH_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"];
const GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const USER = { username: "demo", password: "demo-password" };
const SCOPE = "reports.read";
const SCOPE_DESCRIPTION = DEMO_CONFIG.scopes.find((s) => s.name === SCOPE)!.description;

it(`has Chromium at ${CHROMIUM}`, () => {
  if (!HAVE_CHROMIUM) throw new Error(`No Chromium at ${CHROMIUM}: install it with "apt-get install -y chromium"`);
});

describe.skipIf(!HAVE_CHROMIUM)("the device flow with openid-client and a user in Chromium", { timeout: 30_000 }, () => {
  let browser: Browser | undefined;
  let issuer: NodeServer | undefined;
  let app: ReferenceApp | undefined;
  let skew = 0;
  let config!: client.Configuration;
  /** The `error` of every token endpoint answer openid-client received. */
  const polled: string[] = [];

  beforeAll(async () => {
    const settings: ReferenceConfig = {
      ...DEMO_CONFIG,
      device_authorization: { enabled: true, interval: 1 },
      clients: [...DEMO_CONFIG.clients, { client_id: "device-cli", name: "Device CLI", redirect_uris: [], scopes: [SCOPE], grant_types: [GRANT, "refresh_token"] }],
    };
    let ready!: (app: ReferenceApp) => void;
    const pending = new Promise<ReferenceApp>((resolve) => (ready = resolve));
    issuer = await serveNode({ fetch: async (request, info) => (await pending).fetch(request, info) }, { port: 0, shutdownTimeout: 2_000 });
    app = await createReferenceApp({ issuer: issuer.url, config: settings, passwordIterations: 1000, clock: () => Date.now() + skew });
    ready(app);
    config = await client.discovery(new URL(issuer.url), "device-cli", undefined, client.None(), {
      algorithm: "oauth2",
      execute: [client.allowInsecureRequests],
    });
    config[client.customFetch] = async (url, options) => {
      const response = await fetch(url, options as RequestInit);
      if (new URL(url).pathname === "/token") {
        const body = await response.clone().json() as { error?: string };
        polled.push(body.error ?? "tokens");
      }
      return response;
    };
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS, timeout: 20_000 });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    app?.close();
    await issuer?.close();
  }, 30_000);

  /** The user's side: open the verification URI, type the code forgivingly, sign in, and press a button. */
  async function userDecides(started: client.DeviceAuthorizationResponse, button: "Allow" | "Deny"): Promise<Page> {
    const context = await browser!.newContext();
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    await page.goto(started.verification_uri);
    await page.getByLabel("Code").fill(started.user_code.replace("-", " ").toLowerCase());
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByLabel("Username").fill(USER.username);
    await page.getByLabel("Password").fill(USER.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: button }).waitFor();
    const main = await page.locator("main").innerText();
    expect(main).toContain("Device CLI");
    expect(main).toContain(SCOPE_DESCRIPTION);
    expect(main).toContain(started.user_code);
    expect(main).toMatch(/asked at \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
    await page.getByRole("button", { name: button }).click();
    await page.getByRole("heading", { name: button === "Allow" ? "Device connected" : "Request denied" }).waitFor();
    return page;
  }

  it("completes with the user's approval: openid-client gets tokens that work, once", async () => {
    polled.length = 0;
    const started = await client.initiateDeviceAuthorization(config, { scope: SCOPE });
    expect(started.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    const polling = client.pollDeviceAuthorizationGrant(config, started);
    await userDecides(started, "Allow");
    const tokens = await polling;
    expect(tokens.scope).toBe(SCOPE);
    expect(tokens.refresh_token).toBeDefined();
    expect((await app!.server.verifyAuthorization(`Bearer ${tokens.access_token}`)).user_id).toBe(USER.username);
    expect(polled.at(-1)).toBe("tokens");
    await expect(client.pollDeviceAuthorizationGrant(config, { ...started, interval: 0 })).rejects.toMatchObject({ error: "invalid_grant" });
  });

  it("a denial: openid-client's poll ends with access_denied", async () => {
    const started = await client.initiateDeviceAuthorization(config, { scope: SCOPE });
    const polling = client.pollDeviceAuthorizationGrant(config, started);
    const outcome = expect(polling).rejects.toMatchObject({ error: "access_denied" });
    await userDecides(started, "Deny");
    await outcome;
  });

  it("past expires_in: openid-client's poll ends with expired_token, and the page no longer takes the code", async () => {
    const started = await client.initiateDeviceAuthorization(config, { scope: SCOPE });
    skew += started.expires_in * 1000;
    await expect(client.pollDeviceAuthorizationGrant(config, started)).rejects.toMatchObject({ error: "expired_token" });
    const page = await (await browser!.newContext()).newPage();
    await page.goto(started.verification_uri_complete!);
    expect(await page.locator("main").innerText()).not.toContain("Allow");
  });

  it("a poll sooner than the interval: slow_down, and openid-client waits 5 s longer", async () => {
    polled.length = 0;
    const started = await client.initiateDeviceAuthorization(config, { scope: SCOPE });
    const abort = new AbortController();
    // interval 0: openid-client polls again at once, which the server answers with slow_down.
    const polling = client.pollDeviceAuthorizationGrant(config, { ...started, interval: 0 }, undefined, { signal: abort.signal });
    const outcome = expect(polling).rejects.toBeDefined();
    for (let i = 0; i < 50 && !polled.includes("slow_down"); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    abort.abort();
    await outcome;
    expect(polled.slice(0, 2)).toEqual(["authorization_pending", "slow_down"]);
  });
});
