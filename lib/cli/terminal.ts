/**
 * Values from the store printed to an operator's terminal. A client's name, id or redirect URI was written by
 * whoever registered it, so it may hold escape sequences that erase lines, fake output or set the window title
 * (CWE-150), or bidirectional overrides that reorder what is shown (CVE-2021-42574). Every such character is
 * printed as a visible escape instead.
 *
 * @module
 */

// C0 and C1 controls and DEL, the line and paragraph separators, the bidi formatting characters, and the
// zero-width characters that would hide a difference between two printed values.
const UNSAFE = /[\p{Cc}\u2028\u2029\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/gu;
// What JSON.stringify leaves raw among those: DEL, the C1 controls and the non-ASCII formatting characters.
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028\u2029\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;

const hex = (c: string, width: number): string => c.codePointAt(0)!.toString(16).padStart(width, "0");

/**
 * `value` with every control and formatting character written as an escape (`\x1b`, `\u202e`).
 *
 * @example
 * ```ts
 * terminalSafe("Tool\u001b]0;owned\u0007"); // "Tool\\x1b]0;owned\\x07"
 * ```
 */
export function terminalSafe(value: string): string {
  return value.replace(UNSAFE, (c) => (c.codePointAt(0)! < 0x100 ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`));
}

/** JSON that is safe on a terminal: the same document, with the characters JSON leaves raw written as `\uXXXX`. */
export function terminalJson(value: unknown): string {
  return JSON.stringify(value).replace(UNSAFE_IN_JSON, (c) => `\\u${hex(c, 4)}`);
}
