/**
 * The publishable report: the HTML page is well-formed and self-contained, masks every secret (planted by a
 * server that echoes them), and escapes a hostile server's text; the badge and its shields.io JSON.
 */
import { describe, expect, it } from "vitest";
import { badgeOf, badgeSvg, type CaseDef, formatHtml, type Report, runConformance, shieldsJson } from "../../conformance/mod.ts";
import { referenceApp, referenceTarget, run } from "./reference.ts";

const driver = { approve: () => Promise.reject(new Error("no approvals here")) };
const HOSTILE = `<script>alert("owned")</script><img src=x onerror=alert(1)>`;
const PLANTED_TOKEN = "planted-access-token-0123456789";
const PLANTED_CODE = "planted-code-0123456789";

/** A server that answers every request with the hostile text, and echoes the request (and its secrets) back. */
async function hostile(request: Request): Promise<Response> {
  const seen = await request.text();
  return Response.json(
    // The token and the session cookie handed out are named again in the text: only learning them hides them.
    { error: "invalid_request", error_description: `${HOSTILE} for planted-session-0123456789`, access_token: PLANTED_TOKEN, seen, note: `not ${PLANTED_TOKEN}` },
    { status: 400, headers: { "set-cookie": "session=planted-session-0123456789; Path=/", location: "https://client.example/cb?code=planted-redirect-code-0123456789", "x-note": HOSTILE } },
  );
}

const failing: CaseDef = {
  id: "X-HOSTILE",
  title: `A case whose evidence is hostile ${HOSTILE}`,
  area: "token",
  ref: "RFC 6749 §5.2",
  level: "MUST",
  profiles: ["spec"],
  async run(ctx) {
    const client = ctx.target.clients.confidential;
    const reply = await ctx.token(
      { grant_type: "authorization_code", client_id: client.client_id, client_secret: client.client_secret, code: PLANTED_CODE, code_verifier: "v".repeat(43) },
      { basic: [client.client_id, client.client_secret] },
    );
    ctx.fail(`The server said ${HOSTILE}`, reply);
  },
};

/**
 * Checks that `html` is well-formed: every element opened is closed in order (void elements excepted), and
 * no raw `<` or `&` stands in text.
 */
function wellFormed(html: string): string[] {
  const VOID = new Set(["meta", "br", "img", "link", "input", "hr"]);
  const problems: string[] = [];
  const stack: string[] = [];
  const body = html.replace(/^<!DOCTYPE html>\s*/, "");
  const tag = /<(\/?)([a-zA-Z][a-zA-Z0-9]*)((?:\s+[a-zA-Z][\w:-]*(?:="[^"<]*")?)*)\s*(\/?)>/g;
  let last = 0;
  for (const m of body.matchAll(tag)) {
    const text = body.slice(last, m.index);
    if (/[<>]/.test(text)) problems.push(`raw < or > in text: ${text.slice(0, 60)}`);
    if (/&(?!#\d+;|[a-z]+;)/.test(text)) problems.push(`raw & in text: ${text.slice(0, 60)}`);
    last = m.index + m[0].length;
    const [, close, name] = m;
    const lower = name!.toLowerCase();
    if (lower === "style" && !close) {
      // CSS is no markup: jump to its end tag.
      stack.push(lower);
      last = body.indexOf("</style>", last);
      continue;
    }
    if (VOID.has(lower) || m[4] === "/") continue;
    if (close) {
      const open = stack.pop();
      if (open !== lower) problems.push(`</${lower}> closes <${open}>`);
    } else stack.push(lower);
  }
  if (/[<>]/.test(body.slice(last))) problems.push("raw < or > after the last tag");
  if (stack.length > 0) problems.push(`unclosed: ${stack.join(", ")}`);
  return problems;
}

describe("the HTML report", () => {
  it("is well-formed, self-contained, masks every secret and escapes a hostile server's text", async () => {
    const target = referenceTarget();
    const secret = target.clients.confidential.client_secret;
    const report = await runConformance(target, { cases: [failing], fetch: hostile, driver, preflight: false });
    const html = formatHtml([report]);
    expect(wellFormed(html)).toEqual([]);
    // Nothing the page could run or fetch: no script, no handler, no external resource.
    const tags = html.match(/<[a-zA-Z][^>]*>/g) ?? [];
    expect(tags.filter((t) => /^<(script|img|link|iframe|object|embed|base)\b|\son\w+=|\ssrc=|\shref="(?!#)/i.test(t))).toEqual([]);
    expect(html).toContain("default-src 'none'");
    // The hostile text is there, as text.
    expect(html).toContain("&#60;script&#62;alert(&#34;owned&#34;)&#60;/script&#62;");
    // Planted secrets: the client secret (body and Basic header), the code, the token, the session cookie.
    for (const planted of [secret, encodeURIComponent(secret), btoa(`${target.clients.confidential.client_id}:${secret}`), PLANTED_CODE, "planted-redirect-code-0123456789", PLANTED_TOKEN, "planted-session-0123456789"]) {
      expect(html, planted).not.toContain(planted);
    }
    expect(html).toContain("code=plan***");
    // The tally and the failure's rule, level and exchange are there.
    expect(html).toMatch(/<th><a href="#profile-spec">spec<\/a><\/th><td>0<\/td><td>1<\/td>/);
    expect(html).toContain("RFC 6749 §5.2");
    expect(html).toContain("<h5>Request</h5>");
    expect(html).toContain("<h5>Response</h5>");
  });

  it("shows each profile's tally, the features, and the reference server's clean runs", async () => {
    const reports: Report[] = [];
    for (const profile of ["spec", "mcp"] as const) {
      const app = await referenceApp();
      reports.push(await run(app.fetch, { profile, clock: app.clock }));
    }
    const html = formatHtml(reports, { date: new Date("2026-11-27T10:00:00Z") });
    expect(wellFormed(html)).toEqual([]);
    expect(html).toContain("tested 2026-11-27");
    expect(html).toContain('id="profile-spec"');
    expect(html).toContain('id="profile-mcp"');
    expect(html).toMatch(/<td class="off">not offered<\/td><td>the metadata lacks dpop_signing_alg_values_supported/);
    expect(html).toMatch(/<td class="pass">offered<\/td><td>revocation_endpoint<\/td>/);
    // The demo lacks client ID metadata documents, which MCP recommends: a warning, shown as such.
    expect(html).toContain("MCP-CIMD-SUPPORTED");
  });
});

describe("the badge", () => {
  const summary = { total: 10, passed: 9, failed: 0, blocked: 0, warned: 0, skipped: 1, not_offered: 0, expected: 0, unexpected_passes: [] };
  const report = (profile: Report["profile"], over: Partial<Report["summary"]>) => ({ profile, summary: { ...summary, ...over } }) as unknown as Report;

  it("is green when clean, yellow with known deviations, red on a failure", () => {
    expect(badgeOf([report("spec", {})])).toEqual({ label: "OAuth conformance (spec)", message: "9 passed", color: "#4c1" });
    expect(badgeOf([report("spec", {}), report("mcp", { expected: 3 })])).toEqual({ label: "OAuth conformance", message: "18 passed, 3 known", color: "#dfb317" });
    expect(badgeOf([report("mcp", { failed: 2 })]).color).toBe("#e05d44");
  });

  it("writes an SVG and the shields.io endpoint JSON, escaped", () => {
    const svg = badgeSvg({ label: "a<b", message: "1 passed", color: "#4c1" });
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="\d+" height="20"/);
    expect(svg).toContain("a&#60;b");
    expect(wellFormed(svg)).toEqual([]);
    expect(JSON.parse(shieldsJson({ label: "OAuth conformance", message: "1 passed", color: "#4c1" }))).toEqual({
      schemaVersion: 1,
      label: "OAuth conformance",
      message: "1 passed",
      color: "#4c1",
    });
  });
});
