/**
 * The form parser of `lib/http.ts` against URLSearchParams: `readParams` parses forms and query strings by
 * hand for speed, so it is checked here, as a property, to split, decode ("+", percent-escapes, bad UTF-8,
 * lone surrogates, a leading BOM), count, limit and report repeats exactly as the URLSearchParams version did.
 *
 * One known difference, on Node only: Node 20's URLSearchParams falls back to a byte-per-character decoder when
 * `decodeURIComponent` fails (a bad escape or invalid UTF-8) and so garbles any non-ASCII character next to it
 * ("é%FF" gives "\ufffd\ufffd", where the URL Standard, Deno and Bun give "é\ufffd"). `readParams` follows the
 * standard, so it agrees with Deno and Bun everywhere; those inputs are checked against the standard's
 * algorithm below instead of against Node's URLSearchParams.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { OAuthError } from "../lib/errors.ts";
import { type FormLimits, parseForm, readParams } from "../lib/http.ts";

/** The parser as it was, on URLSearchParams: the reference. */
function reference(text: string, limits: FormLimits): { params: Map<string, string>; repeated: string | undefined } {
  const params = new Map<string, string>();
  const seen = new Set<string>();
  let repeated: string | undefined;
  if (text === "") return { params, repeated };
  let count = 0;
  for (const [name, value] of new URLSearchParams(text)) {
    if (++count > limits.maxParameters) throw new OAuthError("invalid_request", { description: "Too many parameters" });
    if (value.length > limits.maxParameterLength || name.length > limits.maxParameterLength) {
      throw new OAuthError("invalid_request", { description: "A parameter is too long" });
    }
    if (seen.has(name)) {
      repeated ??= name;
      continue;
    }
    seen.add(name);
    if (value !== "") params.set(name, value);
  }
  return { params, repeated };
}

/**
 * The URL Standard's application/x-www-form-urlencoded parser (§5.1), written from the text: UTF-8 encode,
 * split on "&", split at the first "=", "+" to space, percent-decode the bytes, UTF-8 decode without BOM.
 */
function standard(text: string): [string, string][] {
  const decode = (s: string) => {
    const bytes = [...new TextEncoder().encode(s.replace(/\+/g, " "))];
    const out: number[] = [];
    for (let i = 0; i < bytes.length; i++) {
      const hex = String.fromCharCode(bytes[i + 1] ?? 0, bytes[i + 2] ?? 0);
      if (bytes[i] === 0x25 && /^[0-9A-Fa-f]{2}$/.test(hex)) {
        out.push(parseInt(hex, 16));
        i += 2;
      } else out.push(bytes[i]!);
    }
    return new TextDecoder("utf-8", { ignoreBOM: true }).decode(new Uint8Array(out));
  };
  // `new URLSearchParams(string)` first drops one leading "?", and the parser always did the same.
  return (text.startsWith("?") ? text.slice(1) : text).split("&").filter((s) => s !== "").map((s) => {
    const eq = s.indexOf("=");
    return eq === -1 ? [decode(s), ""] : [decode(s.slice(0, eq)), decode(s.slice(eq + 1))];
  });
}

/** Whether Node's URLSearchParams decodes `text` by the standard: see the note at the top. */
function nodeDecodesByTheStandard(text: string): boolean {
  const parts = text.split("&").flatMap((s) => {
    const eq = s.indexOf("=");
    return eq === -1 ? [s] : [s.slice(0, eq), s.slice(eq + 1)];
  });
  return parts.every((part) => {
    if (!/[^\x00-\x7f]/.test(part)) return true;
    try {
      decodeURIComponent(part.replace(/\+/g, " "));
      return true;
    } catch {
      return false;
    }
  });
}

/** What a parse gives, comparable with toEqual: the entries in order and the repeat, or the error. */
function outcome(parse: () => { params: Map<string, string>; repeated: string | undefined }): unknown {
  try {
    const { params, repeated } = parse();
    return { entries: [...params], repeated };
  } catch (error) {
    return { error: (error as OAuthError).description };
  }
}

const PIECES = [
  "a", "b", "c", "grant_type", "code", "x", "=", "=", "&", "&", "&&", "+", "%", "%2", "%20", "%2B", "%2b", "%3D",
  "%26", "%25", "%zz", "%G1", "%C3%A9", "%C3", "%A9", "%FF", "%EF%BB%BF", "%F0%9F%98%80", "%ED%A0%80", "%00", "é",
  "😀", "\ud800", "\udc00", "\ufeff", " ", ";", "?", "?", "#", "\u0000",
];
const forms = fc.oneof(
  fc.array(fc.constantFrom(...PIECES), { maxLength: 30 }).map((parts) => parts.join("")),
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 12 })).map((d) => new URLSearchParams(d).toString()),
);
const limits = fc.record({ maxParameters: fc.integer({ min: 1, max: 12 }), maxParameterLength: fc.integer({ min: 1, max: 12 }) });

describe("readParams", () => {
  test("decodes every random form as the URL Standard's parser does", () => {
    fc.assert(
      fc.property(forms, (text) => {
        const unlimited = { maxParameters: 1e9, maxParameterLength: 1e9 };
        const seen = new Set<string>();
        const expected = standard(text).filter(([name, value]) => !seen.has(name) && (seen.add(name), value !== ""));
        expect([...readParams(text, unlimited).params]).toEqual(expected);
      }),
      { numRuns: 20_000 },
    );
  }, 60_000); // 20,000 runs: seconds on a quiet machine, more on a loaded one

  test("equals the URLSearchParams version on random forms, under random limits", () => {
    fc.assert(
      fc.property(forms.filter(nodeDecodesByTheStandard), limits, (text, limit) => {
        expect(outcome(() => readParams(text, limit))).toEqual(outcome(() => reference(text, limit)));
      }),
      { numRuns: 20_000 },
    );
  });

  test("equals it under the default limits", () => {
    fc.assert(
      fc.property(forms.filter(nodeDecodesByTheStandard), (text) => {
        expect(outcome(() => readParams(text))).toEqual(outcome(() => reference(text, { maxParameters: 64, maxParameterLength: 4096 })));
      }),
      { numRuns: 5_000 },
    );
  }, 60_000);

  test("cases worth naming", () => {
    const parse = (text: string) => outcome(() => readParams(text));
    expect(parse("a=1+2&b=%2B&c=%zz&d=%C3%A9")).toEqual({ entries: [["a", "1 2"], ["b", "+"], ["c", "%zz"], ["d", "é"]], repeated: undefined });
    expect(parse("%EF%BB%BFa=1")).toEqual({ entries: [["\ufeffa", "1"]], repeated: undefined }); // BOM kept
    expect(parse("a=%FF")).toEqual({ entries: [["a", "\ufffd"]], repeated: undefined });
    expect(parse("a=\ud800")).toEqual({ entries: [["a", "\ufffd"]], repeated: undefined });
    expect(parse("a=&a=1&b=1&b=2")).toEqual({ entries: [["b", "1"]], repeated: "a" }); // empty counts as sent
    expect(parse("&&a==1&")).toEqual({ entries: [["a", "=1"]], repeated: undefined });
    expect(parse("?a=1&?b=2")).toEqual({ entries: [["a", "1"], ["?b", "2"]], repeated: undefined });
    expect(() => parseForm("a=1&a=2")).toThrow(/repeated/);
    // Where Node's URLSearchParams strays from the standard (see the top), the standard wins.
    expect(parse("a=é%FF&b=é%%20")).toEqual({ entries: [["a", "é\ufffd"], ["b", "é% "]], repeated: undefined });
  });
});
