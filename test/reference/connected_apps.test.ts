// The connected-apps page in process, on all three runtimes: sign-in through the page, the user's own grants
// only, a revoke that needs the page's CSRF token and cannot touch another user's grant.
import { describe, expect, test } from "vitest";
import { createReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG } from "../../lib/reference/config.ts";
import { memoryStorage } from "../../lib/storage/memory.ts";
import type { IssuedTokens } from "../../lib/storage/types.ts";

const ISSUER = "http://127.0.0.1:8080";
const APPS = `${ISSUER}/account/apps`;

/** Tokens of a grant of `user` to demo-web, stored as a code redemption would. */
function grant(id: string, user: string, now: number): IssuedTokens {
  return {
    access: { hash: `a-${id}`, client_id: "demo-web", user_id: user, scope: "reports.read", expires_at: now + 3_600_000, grant_id: id },
    refresh: { hash: `r-${id}`, grant_id: id, client_id: "demo-web", user_id: user, scope: "reports.read", expires_at: now + 86_400_000 },
  };
}

async function setup() {
  const storage = memoryStorage();
  const config = structuredClone(DEMO_CONFIG);
  config.users.push({ username: "eve", password: "eve-password-123", name: "Eve" });
  const app = await createReferenceApp({ issuer: ISSUER, config, storage, passwordIterations: 1000 });
  const now = Date.now();
  await storage.saveTokens(grant("g-demo", "demo", now), now);
  await storage.saveTokens(grant("g-eve", "eve", now), now);
  /** Signs in through the page itself; returns the session cookie. */
  const signIn = async (username: string, password: string) => {
    const page = await app.fetch(new Request(APPS));
    expect(page.status).toBe(200);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    const nonce = page.headers.getSetCookie().map((c) => c.split(";")[0]!).join("; ");
    const login = await app.fetch(new Request(APPS, { method: "POST", headers: { cookie: nonce }, body: new URLSearchParams({ username, password, csrf }) }));
    expect(login.status).toBe(303);
    return login.headers.getSetCookie().find((c) => c.startsWith("oauth2_session="))!.split(";")[0]!;
  };
  return { app, storage, signIn, now };
}

describe("connected apps", () => {
  test("signed out, the page is the sign-in form; signed in, it lists the user's own grants only", async () => {
    const { app, signIn } = await setup();
    const cookie = await signIn("demo", "demo-password");
    const page = await app.fetch(new Request(APPS, { headers: { cookie } }));
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const html = await page.text();
    expect(html).toContain("Demo Reporting (web app)");
    expect(html).toContain('value="g-demo"');
    expect(html).not.toContain('value="g-eve"');
  });

  test("a revoke needs the page's CSRF token, and another user's grant id revokes nothing", async () => {
    const { app, storage, signIn, now } = await setup();
    const cookie = await signIn("demo", "demo-password");
    const csrf = /name="csrf" value="([^"]+)"/.exec(await (await app.fetch(new Request(APPS, { headers: { cookie } }))).text())![1]!;
    const post = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      app.fetch(new Request(APPS, { method: "POST", headers: { cookie, ...headers }, body: new URLSearchParams(fields) }));

    expect(await storage.findAccessToken("a-g-demo", now), "before").not.toBeNull();
    expect((await post({ grant_id: "g-demo", csrf: "forged" })).status).toBe(403);
    expect(await storage.findAccessToken("a-g-demo", now), "after forged").not.toBeNull();
    expect((await post({ grant_id: "g-demo" })).status).toBe(403);
    expect((await post({ grant_id: "g-demo", csrf }, { origin: "https://evil.example" })).status).toBe(403);
    expect(await storage.findAccessToken("a-g-demo", now)).not.toBeNull();

    // Eve's grant id with demo's session and token: nothing happens to Eve.
    expect((await post({ grant_id: "g-eve", csrf })).status).toBe(303);
    expect(await storage.findAccessToken("a-g-eve", now)).not.toBeNull();

    const revoked = await post({ grant_id: "g-demo", csrf });
    expect([revoked.status, revoked.headers.get("location")]).toEqual([303, `${APPS}?revoked=1`]);
    expect(await storage.findAccessToken("a-g-demo", now)).toBeNull();
    expect(await storage.findRefreshToken("r-g-demo", now)).toBeNull();
    expect(await storage.listGrants("demo", now)).toEqual([]);

    // Eve's CSRF token is not demo's.
    const eve = await signIn("eve", "eve-password-123");
    const eveCsrf = /name="csrf" value="([^"]+)"/.exec(await (await app.fetch(new Request(APPS, { headers: { cookie: eve } }))).text())![1]!;
    expect(eveCsrf).not.toBe(csrf);
  });
});
