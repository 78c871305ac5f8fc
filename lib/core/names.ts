/**
 * The rules for client names, which the one door applies: a name is shown to users on the consent page and to
 * operators in a terminal, so it may hold no control or bidirectional-formatting character (CWE-150, and the
 * "Trojan Source" reordering of CVE-2021-42574), and a client that registers itself may not take a name that
 * looks like one an operator configured (a look-alike consent page is a phishing page).
 *
 * "Looks like" is decided on a skeleton in the spirit of Unicode TR39 §4: NFKC, default-ignorable characters
 * (zero-width, bidi controls) removed, marks removed, the common Cyrillic and Greek look-alikes of Latin
 * letters mapped to them, case and whitespace ignored.
 *
 * @module
 */

/**
 * C0 and C1 controls and DEL (`\p{Cc}`), the line and paragraph separators, and the bidirectional formatting
 * characters (ALM, LRM, RLM, the embeddings and overrides U+202A-E, the isolates U+2066-9).
 */
const UNSAFE = /[\p{Cc}\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

/** Why a name may not be shown as it is, or null when it may. */
export function unsafeNameCharacter(name: string): string | null {
  const match = UNSAFE.exec(name);
  if (match === null) return null;
  const code = match[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
  return `it holds the control or bidirectional-formatting character U+${code}`;
}

// Capitals first (before lower-casing, since Greek capital Beta lower-cases to a beta that looks like nothing
// Latin), then lower case. Only unambiguous look-alikes; TR39's full table is far larger. The strokes i, I, l, 1
// and | are one letter here: "MaIl" may stand for "Mail" or "Mall", and both must be caught.
const UPPER: Readonly<Record<string, string>> = {
  // Cyrillic capitals
  "А": "a", "В": "b", "Е": "e", "К": "k", "М": "m", "Н": "h", "О": "o", "Р": "p", "С": "c", "Т": "t", "Х": "x",
  "Ѕ": "s", "І": "l", "Ј": "j", "Ү": "y", "Ԛ": "q", "Ԝ": "w", "Ӏ": "l",
  // Greek capitals
  "Α": "a", "Β": "b", "Ε": "e", "Ζ": "z", "Η": "h", "Ι": "l", "Κ": "k", "Μ": "m", "Ν": "n", "Ο": "o", "Ρ": "p",
  "Τ": "t", "Υ": "y", "Χ": "x",
  // Latin capital I, and the digits and strokes TR39 folds with l and o
  "I": "l", "1": "l", "|": "l", "ǀ": "l", "0": "o",
};
const LOWER: Readonly<Record<string, string>> = {
  // Cyrillic
  "а": "a", "в": "b", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s", "і": "l", "ј": "j",
  "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "ү": "y", "ɡ": "g", "ո": "n", "ս": "u",
  // Greek
  "α": "a", "ο": "o", "ν": "v", "ρ": "p", "ι": "l", "κ": "k", "χ": "x", "υ": "u", "τ": "t", "ϲ": "c", "ϳ": "j",
  // Latin
  "i": "l", "ı": "l", "ℓ": "l",
};

/**
 * The skeleton of a name: two names with the same skeleton look alike to a reader.
 *
 * @example
 * ```ts
 * nameSkeleton("Hоldout  Web") === nameSkeleton("holdout web"); // true: Cyrillic о, case, spaces
 * ```
 */
export function nameSkeleton(name: string): string {
  let text = name.normalize("NFKC").replace(/\p{Default_Ignorable_Code_Point}/gu, "");
  // Accents and other marks: "Hóldout" reads as "Holdout" at a glance.
  text = text.normalize("NFD").replace(/\p{M}/gu, "");
  let mapped = "";
  for (const c of text) mapped += UPPER[c] ?? c;
  let folded = "";
  for (const c of mapped.toLowerCase()) folded += LOWER[c] ?? c;
  // TR39's multi-letter look-alikes, once whitespace and separators are gone.
  return folded.replace(/[\s\p{Z}]+/gu, "").replace(/rn/g, "m").replace(/vv/g, "w");
}

/** Whether two names look alike to a reader: the same {@link nameSkeleton}. */
export function looksAlike(a: string, b: string): boolean {
  return nameSkeleton(a) === nameSkeleton(b);
}

/** Names an operator stands behind (config file, command line, library), by skeleton. */
export interface ReservedNames {
  /** Reserves a name. */
  add(name: string): void;
  /** The reserved name that `name` equals or resembles, or undefined. */
  resembled(name: string): string | undefined;
}

/** A set of reserved names. */
export function reservedNames(): ReservedNames {
  const names = new Map<string, string>();
  return {
    add(name) {
      const skeleton = nameSkeleton(name);
      if (skeleton !== "") names.set(skeleton, name);
    },
    resembled: (name) => names.get(nameSkeleton(name)),
  };
}
