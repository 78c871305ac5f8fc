/**
 * A browser app on another origin (a single-page app) completes the code flow with PKCE using the real
 * openid-client in headless Chromium: discovery, the token request and a refresh are cross-origin `fetch` calls
 * that only work thanks to CORS on the metadata and token endpoints. The reference server runs on one loopback
 * port, the SPA on another; the page loads openid-client (and oauth4webapi, jose) from node_modules through an
 * import map. Needs /usr/bin/chromium; skipped without it, except under CI.
 */
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type NodeServer, serveNode } from "../../lib/adapters/node.ts";
import { createReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, type ReferenceConfig } from "../../lib/reference/config.ts";

const CHROMIUM = process.env.OAUTH2_TEST_CHROMIUM ?? "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const IN_CI = !["", "0", "false"].includes((process.env.CI ?? "").toLowerCase());
const LAUNCH_ARGS = [
  "--no-sandbox", "--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync",
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];
const NODE_MODULES = fileURLToPath(new URL("../../node_modules/", import.meta.url));
/** The only files the SPA server hands out from node_modules. */
const PACKAGES = ["openid-client/build/", "oauth4webapi/build/", "jose/dist/webapi/"];
const USER = { username: "demo", password: "demo-password" };

/** The SPA: discovery, a PKCE authorization request, and on return the code exchange and a refresh. */
const spaPage = (issuer: string, clientId: string, redirectUri: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>SPA</title>
<script type="importmap">${JSON.stringify({
  imports: {
    "openid-client": "/node_modules/openid-client/build/index.js",
    "oauth4webapi": "/node_modules/oauth4webapi/build/index.js",
    "jose/jwe/compact/decrypt": "/node_modules/jose/dist/webapi/jwe/compact/decrypt.js",
    "jose/errors": "/node_modules/jose/dist/webapi/util/errors.js",
  },
})}</script></head><body><pre id="result">working</pre>
<script type="module">
import * as client from "openid-client";
const show = (value) => { document.getElementById("result").textContent = JSON.stringify(value); };
try {
  // RFC 8414 discovery, cross-origin; http is allowed because everything is on loopback.
  const config = await client.discovery(new URL(${JSON.stringify(issuer)}), ${JSON.stringify(clientId)}, undefined, client.None(),
    { algorithm: "oauth2", execute: [client.allowInsecureRequests] });
  const here = new URL(location.href);
  if (!here.searchParams.has("code") && !here.searchParams.has("error")) {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    sessionStorage.setItem("pkce", verifier);
    sessionStorage.setItem("state", state);
    location.assign(client.buildAuthorizationUrl(config, {
      redirect_uri: ${JSON.stringify(redirectUri)}, scope: "reports.read",
      code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256", state,
    }).href);
  } else {
    const tokens = await client.authorizationCodeGrant(config, here, {
      pkceCodeVerifier: sessionStorage.getItem("pkce"), expectedState: sessionStorage.getItem("state"),
    });
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
    show({ ok: true, scope: tokens.scope, token_type: tokens.token_type, refreshed: refreshed.access_token !== tokens.access_token });
  }
} catch (error) {
  show({ ok: false, error: String(error), cause: String(error?.cause ?? "") });
}
</script></body></html>`;

if (!HAVE_CHROMIUM && !IN_CI) console.warn(`test/mcp: skipping the SPA test: no Chromium at ${CHROMIUM}`);

it(`has Chromium at ${CHROMIUM} when CI runs`, () => {
  if (!HAVE_CHROMIUM && IN_CI) throw new Error(`No Chromium at ${CHROMIUM}: CI must install it`);
});

describe.skipIf(!HAVE_CHROMIUM)("an openid-client SPA in Chromium, across origins", { timeout: 60_000 }, () => {
  let browser: Browser | undefined;
  let issuer: NodeServer | undefined;
  let spa: Server | undefined;
  let SPA = "";

  beforeAll(async () => {
    let page = "";
    spa = createServer((req, res) => {
      const path = new URL(req.url ?? "/", "http://spa.invalid").pathname;
      if (path === "/" || path === "/callback") {
        res.writeHead(200, { "content-type": "text/html;charset=utf-8" });
        return void res.end(page);
      }
      const file = path.slice("/node_modules/".length);
      if (path.startsWith("/node_modules/") && PACKAGES.some((p) => file.startsWith(p)) && !file.includes("..") && file.endsWith(".js")) {
        try {
          const body = readFileSync(NODE_MODULES + file);
          res.writeHead(200, { "content-type": "text/javascript;charset=utf-8" });
          return void res.end(body);
        } catch { /* fall through to 404 */ }
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => spa!.listen(0, "127.0.0.1", resolve));
    SPA = `http://127.0.0.1:${(spa.address() as AddressInfo).port}`;

    let app: Awaited<ReturnType<typeof createReferenceApp>> | undefined;
    issuer = await serveNode({ fetch: (request: Request) => app!.fetch(request) }, { port: 0, shutdownTimeout: 2_000 });
    const config: ReferenceConfig = {
      ...DEMO_CONFIG,
      clients: [...DEMO_CONFIG.clients, {
        client_id: "spa", name: "Browser SPA", redirect_uris: [`${SPA}/callback`],
        scopes: ["reports.read"], grant_types: ["authorization_code", "refresh_token"],
      }],
    };
    app = await createReferenceApp({ issuer: issuer.url, config, passwordIterations: 1000 });
    page = spaPage(issuer.url, "spa", `${SPA}/callback`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS, timeout: 20_000 });
  }, 40_000);

  afterAll(async () => {
    await browser?.close();
    await issuer?.close();
    spa?.closeAllConnections();
    await new Promise<void>((resolve) => spa ? spa.close(() => resolve()) : resolve());
  }, 30_000);

  it("discovers, signs in, exchanges the code with PKCE and refreshes, all from the SPA's origin", async () => {
    const context = await browser!.newContext();
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    await page.goto(`${SPA}/`);
    await page.waitForURL((url) => url.origin === issuer!.url);
    await page.getByLabel("Username").fill(USER.username);
    await page.getByLabel("Password").fill(USER.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Allow" }).click();
    await page.waitForURL((url) => url.origin === SPA && url.pathname === "/callback");
    await expect.poll(() => page.locator("#result").textContent(), { timeout: 15_000 }).not.toBe("working");
    const result = JSON.parse((await page.locator("#result").textContent())!);
    expect(result).toEqual({ ok: true, scope: "reports.read", token_type: "bearer", refreshed: true });
    await context.close();
  });
});
