/**
 * JSON with comments (JSONC), as target and expectation files are written: `//` and `/* *\/` comments and
 * trailing commas are allowed; everything else is strict JSON.
 *
 * @module
 */

/**
 * Parses JSONC: strips comments and trailing commas outside strings, then `JSON.parse`. Positions in error
 * messages stay right, because comments become spaces.
 *
 * @example
 * ```ts
 * parseJsonc('{ "a": 1, // one\n }'); // { a: 1 }
 * ```
 */
export function parseJsonc(text: string): unknown {
  let out = "";
  let i = 0;
  const blank = (s: string) => s.replace(/[^\n]/g, " ");
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === "/" && text[i + 1] === "/") {
      const end = text.indexOf("\n", i);
      const stop = end === -1 ? text.length : end;
      out += blank(text.slice(i, stop));
      i = stop;
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end === -1 ? text.length : end + 2;
      out += blank(text.slice(i, stop));
      i = stop;
    } else {
      out += c;
      i++;
    }
  }
  // A comma followed only by blanks and a closing bracket is a trailing comma (strings were copied intact,
  // and a string cannot end in `,` followed by `}` outside quotes).
  return JSON.parse(stripTrailingCommas(out));
}

function stripTrailingCommas(text: string): string {
  let out = "";
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === "\\") out += text[++i] ?? "";
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    if (c === ",") {
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j]!)) j++;
      if (text[j] === "}" || text[j] === "]") {
        out += " ";
        continue;
      }
    }
    out += c;
  }
  return out;
}
