// Client names, fuzzed: a configured client's name disguised by any mix of case, whitespace, zero-width
// characters, compatibility forms and Cyrillic or Greek look-alike letters is still refused at registration;
// any string at all gets a skeleton without throwing; and whatever a name holds, the command line prints it
// without a control or bidi character, and its JSON reads back as the same string.
import fc from "fast-check";
import { expect, test } from "vitest";
import { terminalJson, terminalSafe } from "../../lib/cli/terminal.ts";
import { looksAlike, nameSkeleton, unsafeNameCharacter } from "../../lib/core/names.ts";
import { createAuthorizationServer } from "../../mod.ts";
import { ISSUER } from "../helpers.ts";
import { envInt } from "./support.ts";

const RUNS = Math.max(100, Math.round(envInt("FUZZ_RUNS", 20_480) / 20));

/** Latin letters and their look-alikes (one of each is enough to disguise a name). */
const LOOK_ALIKES: Record<string, string[]> = {
  a: ["\u0430", "\u03b1"], o: ["\u043e", "\u03bf", "0"], e: ["\u0435"], p: ["\u0440", "\u03c1"], c: ["\u0441"], x: ["\u0445", "\u03c7"],
  y: ["\u0443"], i: ["\u0456", "\u0131"], j: ["\u0458"], s: ["\u0455"], h: ["\u04bb"], l: ["1", "I", "\u04cf"], k: ["\u03ba"],
  H: ["\u041d", "\u0397"], O: ["\u041e", "\u039f"], A: ["\u0410", "\u0391"], B: ["\u0412", "\u0392"], E: ["\u0415", "\u0395"],
  M: ["\u041c", "\u039c"], T: ["\u0422", "\u03a4"], P: ["\u0420", "\u03a1"], C: ["\u0421"], K: ["\u041a", "\u039a"], X: ["\u0425"],
};
const INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"];
const SPACES = [" ", "  ", "\u00a0", "\u2003", "\u3000"];

/** A disguise of `name`: each character kept, swapped for a look-alike, re-cased, widened, or padded. */
const disguise = (name: string) =>
  fc.array(fc.tuple(fc.nat(5), fc.nat(20)), { minLength: name.length, maxLength: name.length }).map((choices) =>
    [...name].map((c, n) => {
      const [how, pick] = choices[n]!;
      if (c === " ") return SPACES[pick % SPACES.length]!;
      const alikes = LOOK_ALIKES[c];
      switch (how) {
        case 1: return alikes ? alikes[pick % alikes.length]! : c;
        case 2: return c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
        case 3: return /[A-Za-z]/.test(c) ? String.fromCodePoint(c.codePointAt(0)! + 0xfee0) : c; // fullwidth (NFKC)
        case 4: return c + INVISIBLE[pick % INVISIBLE.length]!;
        default: return c;
      }
    }).join("")
  );

const CONFIGURED = ["Holdout Web", "Payroll Export", "Acme Mail", "Cloud Sync"];

test("a disguised configured name looks alike the configured name, and registration refuses it", async () => {
  const server = createAuthorizationServer({ issuer: ISSUER, scopes: { read: "Read" }, defaultScope: "read", profile: "rfc6749", registration: { enabled: true, maxPerHour: 1_000_000 } });
  for (const [i, name] of CONFIGURED.entries()) {
    await server.clients.register({ client_id: `configured-${i}`, name, type: "public", scopes: ["read"], redirect_uris: ["https://configured.example/cb"] });
  }
  await fc.assert(fc.asyncProperty(fc.constantFrom(...CONFIGURED).chain((name) => fc.tuple(fc.constant(name), disguise(name))), async ([name, disguised]) => {
    expect(looksAlike(disguised, name), nameSkeleton(disguised)).toBe(true);
    const response = await server.fetch(new Request(`${ISSUER}/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: disguised, redirect_uris: ["https://evil.example/cb"], token_endpoint_auth_method: "none" }),
    }));
    expect(response.status, JSON.stringify(disguised)).toBe(400);
  }), { numRuns: RUNS });
}, 120_000);

test("any string: a skeleton without throwing; refused exactly when it holds a control or bidi character", () => {
  const UNSAFE = /[\p{Cc}\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
  fc.assert(fc.property(fc.string({ unit: "binary", maxLength: 64 }), (name) => {
    expect(typeof nameSkeleton(name)).toBe("string");
    expect(unsafeNameCharacter(name) !== null).toBe(UNSAFE.test(name));
  }), { numRuns: RUNS * 5 });
}, 60_000);

test("the command line prints any name without a control or formatting character; its JSON reads back the same", () => {
  const RAW = /[\p{Cc}\u2028\u2029\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/u;
  const hostile = fc.oneof(
    fc.string({ unit: "binary", maxLength: 64 }),
    fc.array(fc.constantFrom("\u001b[2K", "\u001b]0;t\u0007", "\u009b31m", "\u202e", "\u2066", "\n", "\r", "\u007f", "ok", "\u2028"), { maxLength: 8 }).map((p) => p.join("")),
  );
  fc.assert(fc.property(hostile, (name) => {
    expect(terminalSafe(name)).not.toMatch(RAW);
    const json = terminalJson({ name });
    expect(json).not.toMatch(RAW);
    expect(JSON.parse(json)).toEqual({ name });
  }), { numRuns: RUNS * 5 });
}, 60_000);
