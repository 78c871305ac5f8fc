// User codes of the device flow (RFC 8628 §6.1), fuzzed: any disguise of a code by case, dashes and white space
// reads back as that code; any other string reads as no code, never throws, and at /device gets an HTML page
// (the form again, 400 or 429), never a 5xx and never the approval form; a disguised live code reaches it.
import fc from "fast-check";
import { expect, test } from "vitest";
import { canonicalUserCode, displayUserCode, newUserCode, USER_CODE_ALPHABET } from "../../lib/features/user_code.ts";
import { fixture, ISSUER } from "../helpers.ts";
import { envInt } from "./support.ts";

const RUNS = Math.max(100, Math.round(envInt("FUZZ_RUNS", 20_480) / 40));
const GRANT = "urn:ietf:params:oauth:grant-type:device_code";

const canonical = fc.array(fc.constantFrom(...USER_CODE_ALPHABET), { minLength: 8, maxLength: 8 }).map((l) => l.join(""));
/** A disguise: each letter in either case, with dashes or white space around it. */
const disguised = (code: string) =>
  fc.array(fc.tuple(fc.boolean(), fc.constantFrom("", "", "-", " ", "\t", "--", "\u2010")), { minLength: 9, maxLength: 9 })
    .map((choices) => [...code].map((c, i) => choices[i]![1] + (choices[i]![0] ? c.toLowerCase() : c)).join("") + choices[8]![1]);

test("any disguise of a code by case, dashes and spaces reads back as that code", () => {
  fc.assert(fc.property(canonical.chain((code) => fc.tuple(fc.constant(code), disguised(code))), ([code, typed]) => {
    expect(canonicalUserCode(typed)).toBe(code);
    expect(canonicalUserCode(displayUserCode(code))).toBe(code);
  }), { numRuns: RUNS * 10 });
});

test("any string reads as a code of 8 letters of the alphabet, or as none; it never throws", () => {
  fc.assert(fc.property(fc.oneof(fc.string(), fc.string({ unit: "binary" }), fc.string({ unit: fc.constantFrom(..."bcdfAEIOU-- 1") })), (typed) => {
    const code = canonicalUserCode(typed);
    if (code !== null) {
      expect(code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{8}$/);
      expect(code).toBe(typed.replace(/[\s\-\u2010-\u2015]/g, "").toUpperCase());
    }
  }), { numRuns: RUNS * 10 });
  for (let i = 0; i < 1000; i++) expect(canonicalUserCode(newUserCode())).not.toBeNull();
});

test("at /device, any typed string gets an HTML page, never a 5xx; a disguised live code gets the approval form", async () => {
  await fc.assert(fc.asyncProperty(fc.oneof(fc.string(), fc.string({ unit: "binary", maxLength: 80 })), fc.boolean(), async (junk, useLive) => {
    const { server } = await fixture({ deviceAuthorization: { enabled: true } });
    await server.clients.register({ client_id: "tv", name: "TV", type: "public", scopes: ["read"], grant_types: [GRANT] });
    const started = await (await server.fetch(new Request(`${ISSUER}/device_authorization`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "client_id=tv&scope=read",
    }))).json() as { user_code: string };
    const typed = useLive ? ` ${started.user_code.toLowerCase().replace("-", " - ")} ` : junk;
    const response = await server.fetch(new Request(`${ISSUER}/device?${new URLSearchParams({ user_code: typed })}`));
    const html = await response.text();
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    const live = canonicalUserCode(typed) === started.user_code.replace("-", "");
    if (live) {
      expect(response.status).toBe(200);
      expect(html).toContain('name="decision"');
    } else {
      expect([200, 400, 429], JSON.stringify(typed)).toContain(response.status);
      expect(html).not.toContain('name="decision"');
    }
  }), { numRuns: RUNS });
}, 120_000);
