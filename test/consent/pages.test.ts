import { describe, expect, it } from "vitest";
import { consentPage, errorPage, escapeHtml, htmlPage, loginPage } from "../../lib/consent/pages.ts";
import type { ResponseParts } from "../../lib/http.ts";

const HOSTILE = `<script>alert("x")</script>' onmouseover='x`;

const header = (page: ResponseParts, name: string): string | undefined => page.headers.find(([n]) => n === name)?.[1];

const consent = (overrides: Partial<Parameters<typeof consentPage>[0]> = {}): ResponseParts =>
  consentPage({
    clientName: "Photo Printer",
    clientId: "printer",
    userName: "Alice",
    scopes: [{ name: "photos", description: "Read your photos" }],
    action: "/authorize?client_id=printer&state=xyz",
    csrf: "csrf-token-123",
    redirectOrigin: "https://printer.example",
    ...overrides,
  });

const login = (overrides: Partial<Parameters<typeof loginPage>[0]> = {}): ResponseParts =>
  loginPage({
    action: "/authorize?client_id=printer&state=xyz",
    csrf: "csrf-token-123",
    clientName: "Photo Printer",
    ...overrides,
  });

describe("escapeHtml", () => {
  it("escapes the five characters that matter in content and quoted attributes", () => {
    expect(escapeHtml(`&<>"'`)).toBe("&amp;&lt;&gt;&quot;&#39;");
    expect(escapeHtml("plain text ünïcode")).toBe("plain text ünïcode");
    expect(escapeHtml("&amp;")).toBe("&amp;amp;");
  });
});

describe("htmlPage", () => {
  it("sends every security header", () => {
    const page = htmlPage(200, { title: "T", main: "<p>x</p>" });
    expect(page.status).toBe(200);
    expect(header(page, "content-type")).toBe("text/html;charset=UTF-8");
    expect(header(page, "cache-control")).toBe("no-store");
    expect(header(page, "pragma")).toBe("no-cache");
    expect(header(page, "x-frame-options")).toBe("DENY");
    expect(header(page, "x-content-type-options")).toBe("nosniff");
    expect(header(page, "referrer-policy")).toBe("no-referrer");
  });

  it("allows only the nonce-tagged style block, and the nonce changes per page", () => {
    const nonces = [login(), consent(), errorPage(400, "a", "b")].map((page) => {
      const csp = header(page, "content-security-policy")!;
      const nonce = /style-src 'nonce-([A-Za-z0-9_-]{22,})'/.exec(csp)?.[1];
      expect(nonce).toBeDefined();
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("img-src data:");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("base-uri 'none'");
      expect(csp).toMatch(/form-action 'self'/);
      expect(csp).not.toContain("unsafe");
      const styles = page.body!.match(/<style[^>]*>/g);
      expect(styles).toEqual([`<style nonce="${nonce}">`]);
      // No script, no style attribute (the CSP would block it), no outside asset.
      expect(page.body).not.toMatch(/<script|\sstyle=|<link|https?:\/\/(?!printer\.example)/);
      return nonce;
    });
    expect(new Set(nonces).size).toBe(3);
    const a = header(htmlPage(200, { title: "t", main: "" }), "content-security-policy");
    const b = header(htmlPage(200, { title: "t", main: "" }), "content-security-policy");
    expect(a).not.toBe(b);
  });

  it("is a complete, accessible document", () => {
    const body = htmlPage(200, { title: HOSTILE, main: "<p>hi</p>" }).body!;
    expect(body).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(body).toContain(`<meta name="viewport" content="width=device-width, initial-scale=1">`);
    expect(body).toContain(`<meta charset="utf-8">`);
    expect(body).toContain(`<main class="card">\n<p>hi</p>\n</main>`);
    expect(body).toContain(`<title>${escapeHtml(HOSTILE)}</title>`);
    expect(body).not.toContain("<script>");
  });

  it("adds form-action sources only as clean origins or schemes, and extra headers", () => {
    const page = htmlPage(
      200,
      { title: "t", main: "" },
      {
        formAction: [
          "https://app.example:8443/cb?x=1",
          "https://app.example:8443",
          "com.example.app:/oauth",
          "https://evil.example; script-src *",
          "javascript:alert(1)",
          "null",
          "not a url",
        ],
        headers: [["set-cookie", "a=b"]],
      },
    );
    const csp = header(page, "content-security-policy")!;
    expect(csp.endsWith("form-action 'self' https://app.example:8443 com.example.app:")).toBe(true);
    expect(csp).not.toContain("script-src");
    expect(csp).not.toContain("javascript");
    expect(header(page, "set-cookie")).toBe("a=b");
  });
});

describe("consentPage", () => {
  it("shows who asks, for which account, what, and where the answer goes", () => {
    const page = consent();
    expect(page.status).toBe(200);
    const body = page.body!;
    expect(body).toContain("Photo Printer</span> wants to access your account");
    expect(body).toContain("<code>printer</code>");
    expect(body).toContain("<strong>Alice</strong>");
    expect(body).toContain("Read your photos");
    expect(body).toContain(`<code class="muted">photos</code>`);
    expect(body).toContain("sent back to <strong>https://printer.example</strong>");
    expect(body).toContain("<title>Authorize Photo Printer</title>");
  });

  it("has one POST form with Allow (primary), Deny and the CSRF token", () => {
    const body = consent().body!;
    expect(body.match(/<form /g)).toHaveLength(1);
    expect(body).toContain(`<form method="post" action="/authorize?client_id=printer&amp;state=xyz">`);
    expect(body).toContain(`<input type="hidden" name="csrf" value="csrf-token-123">`);
    expect(body).toContain(`<button type="submit" name="decision" value="allow" class="primary">Allow</button>`);
    expect(body).toContain(`<button type="submit" name="decision" value="deny" class="secondary">Deny</button>`);
  });

  it("lets the form post to the client's redirect origin (Chrome checks form-action on the redirect)", () => {
    const csp = header(consent(), "content-security-policy")!;
    expect(csp).toMatch(/form-action 'self' https:\/\/printer\.example$/);
    const native = consent({ redirectOrigin: "com.example.app:/oauth/callback" });
    expect(header(native, "content-security-policy")).toMatch(/form-action 'self' com\.example\.app:$/);
    expect(native.body).toContain("sent back to <strong>com.example.app:</strong>");
    const full = consent({ redirectOrigin: "https://printer.example/cb?x=1" });
    expect(header(full, "content-security-policy")).toMatch(/form-action 'self' https:\/\/printer\.example$/);
    expect(full.body).toContain("sent back to <strong>https://printer.example</strong>");
  });

  it("escapes hostile client names, user names, scopes and descriptions", () => {
    const page = consent({
      clientName: HOSTILE,
      clientId: HOSTILE,
      userName: HOSTILE,
      scopes: [{ name: HOSTILE, description: HOSTILE }],
      action: `/authorize?x="><script>alert(1)</script>`,
      csrf: `"><script>alert(1)</script>`,
      redirectOrigin: `https://x.example"><script>`,
    });
    const body = page.body!;
    expect(body).not.toContain("<script");
    expect(body).not.toContain("' onmouseover='");
    expect(body).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;x");
    expect(body).toContain(`value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"`);
    // The avatar initial comes from the name too.
    expect(body).toContain(`<span class="avatar" aria-hidden="true">&lt;</span>`);
    expect(header(page, "content-security-policy")).not.toContain("<script");
  });
});

describe("errorPage", () => {
  it("explains plainly, escaped, with the given status and no redirect target", () => {
    const page = errorPage(400, "This link is not valid", `Unknown application ${HOSTILE}`);
    expect(page.status).toBe(400);
    expect(page.body).toContain("<h1>This link is not valid</h1>");
    expect(page.body).toContain("Unknown application &lt;script&gt;");
    expect(page.body).not.toContain("<script");
    expect(page.body).not.toContain("<form");
    expect(header(page, "content-security-policy")).toMatch(/form-action 'self'$/);
  });
});

describe("loginPage", () => {
  it("has a POST form with bound labels, autocomplete hints and the CSRF token", () => {
    const page = login();
    expect(page.status).toBe(200);
    const body = page.body!;
    expect(body).toContain(`<form method="post" action="/authorize?client_id=printer&amp;state=xyz"`);
    expect(body).toContain(`<input type="hidden" name="csrf" value="csrf-token-123">`);
    expect(body).toMatch(/<input id="username" name="username" type="text" autocomplete="username"[^>]* required/);
    expect(body).toMatch(
      /<input id="password" name="password" type="password" autocomplete="current-password" required/,
    );
    expect(body).toContain(`<label for="username">Username</label>`);
    expect(body).toContain(`<label for="password">Password</label>`);
    expect(body).toContain(`<button type="submit" class="primary">Sign in</button>`);
    expect(body).toContain('<strong class="text">Photo Printer</strong> asks you to sign in');
    expect(body).not.toContain(`role="alert"`);
  });

  it("shows an error with role=alert and status 401, and fills the username back in, escaped", () => {
    const page = login({ error: "Wrong username or password.", username: `bob"><script>` });
    expect(page.status).toBe(401);
    expect(page.body).toContain(`<p class="alert" role="alert" id="login-error">Wrong username or password.</p>`);
    expect(page.body).toContain(`value="bob&quot;&gt;&lt;script&gt;"`);
    expect(page.body).toContain(`aria-invalid="true" aria-describedby="login-error"`);
    expect(page.body).not.toContain("<script");
  });

  it("escapes a hostile client name and error", () => {
    const body = login({ clientName: HOSTILE, error: HOSTILE }).body!;
    expect(body).not.toContain("<script");
    expect(body).toContain("&lt;script&gt;alert(&quot;x&quot;)");
  });
});

describe("consentPage: a client's standing", () => {
  it("marks an unverified client in words next to its name, and explains it", () => {
    const body = String(consent({ unverified: true }).body);
    expect(body).toMatch(/<h1><span class="strong">Photo Printer<\/span> <span class="tag">unverified<\/span> wants to access/);
    expect(body).toContain("registered itself with this server, which does not know who runs it");
    expect(String(consent().body)).not.toContain("unverified");
  });

  it("says whose name a look-alike resembles, escaped, as an alert", () => {
    const body = String(consent({ unverified: true, resembles: HOSTILE }).body);
    expect(body).toContain(`<p class="alert" role="alert">This is not <strong>${escapeHtml(HOSTILE)}</strong>`);
    expect(body).not.toContain("<script>");
  });

  it("names the application type and the publishing host", () => {
    const body = String(consent({ unverified: true, applicationType: "native", clientHost: "app.example.com" }).body);
    expect(body).toContain("an app on your device");
    expect(body).toContain("It is published by <strong>app.example.com</strong>.");
    expect(String(consent({ applicationType: "web" }).body)).toContain("a web application");
  });
});
