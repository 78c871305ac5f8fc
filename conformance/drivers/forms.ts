/**
 * A small, tolerant HTML form reader: enough to find a login form and a consent form and submit them the way
 * a browser would. No DOM library; a tag tokeniser over the page text.
 *
 * @module
 */

/** One form control. */
export interface FormControl {
  /** The element, lower case. */
  tag: "input" | "button" | "select" | "textarea";
  /** Lower-case `type`; `submit` for a button without one. */
  type: string;
  /** The `name` attribute; a control without one is not submitted. */
  name: string | undefined;
  /** The value it submits (for a `select`, the selected option's). */
  value: string;
  /** For a checkbox or radio button: whether it is checked, and so submitted. */
  checked: boolean;
  /** A disabled control is never submitted. */
  disabled: boolean;
  /** The visible text of a button, for choosing Allow or Deny. */
  text: string;
  /** The `id` attribute. */
  id: string | undefined;
}

/** One form of a page. */
export interface HtmlForm {
  /** The action resolved against the page (or its `<base href>`). */
  action: URL;
  /** GET unless the form says POST. */
  method: "GET" | "POST";
  /** Its controls, in document order. */
  controls: FormControl[];
}

const TAG = /<!--[\s\S]*?-->|<(script|style)\b[\s\S]*?<\/\1\s*>|<\s*(\/?)\s*([a-zA-Z][a-zA-Z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/gi;
const ATTRIBUTE = /([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g;
const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };

/** Decodes the character references that matter in attribute values and button labels. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (all, ref: string) => {
    if (ref[0] === "#") {
      const code = ref[1] === "x" || ref[1] === "X" ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : all;
    }
    return ENTITIES[ref.toLowerCase()] ?? all;
  });
}

function attributes(source: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const m of source.matchAll(ATTRIBUTE)) {
    const name = m[1]!.toLowerCase();
    if (!map.has(name)) map.set(name, decodeEntities(m[2] ?? m[3] ?? m[4] ?? ""));
  }
  return map;
}

function resolve(href: string | undefined, base: URL): URL {
  if (href === undefined || href.trim() === "") return new URL(base);
  try {
    return new URL(href.trim(), base);
  } catch {
    return new URL(base);
  }
}

/** Reads every form of a page. */
export function parseForms(html: string, pageUrl: URL): HtmlForm[] {
  const forms: HtmlForm[] = [];
  let base = pageUrl;
  let form: HtmlForm | undefined;
  // The element whose text is being collected (button, textarea, option) and where its text starts.
  let open: { control: FormControl; start: number; option?: { selected: boolean } } | undefined;
  let select: { control: FormControl; first: string | undefined; chosen: boolean } | undefined;
  for (const m of html.matchAll(TAG)) {
    const closing = m[2] === "/";
    const tag = (m[3] ?? "").toLowerCase();
    if (!tag) continue; // a comment, script or style
    const attrs = attributes(m[4] ?? "");
    const end = m.index + m[0].length;
    if (open && closing && (tag === open.control.tag || (open.option && tag === "option"))) {
      const text = decodeEntities(html.slice(open.start, m.index).replace(/<[^>]*>/g, " "))
        .replace(/\s+/g, " ").trim();
      if (open.option && select) {
        if (open.option.selected) select.control.value = text;
        else if (!select.chosen && select.first === undefined) select.first = text;
      } else if (open.control.tag === "textarea") open.control.value = text;
      else open.control.text = text;
      open = undefined;
      continue;
    }
    if (tag === "base" && !closing && attrs.has("href")) base = resolve(attrs.get("href"), pageUrl);
    else if (tag === "form") {
      if (closing) form = undefined;
      else {
        const method = (attrs.get("method") ?? "get").toUpperCase() === "POST" ? "POST" : "GET";
        form = { action: resolve(attrs.get("action"), base), method, controls: [] };
        forms.push(form);
      }
    } else if (!closing && form && (tag === "input" || tag === "button" || tag === "select" || tag === "textarea")) {
      const control: FormControl = {
        tag,
        type: (attrs.get("type") ?? (tag === "button" ? "submit" : tag === "input" ? "text" : tag)).toLowerCase(),
        name: attrs.get("name"),
        value: attrs.get("value") ?? (tag === "input" && /^(checkbox|radio)$/i.test(attrs.get("type") ?? "") ? "on" : ""),
        checked: attrs.has("checked"),
        disabled: attrs.has("disabled"),
        text: "",
        id: attrs.get("id"),
      };
      form.controls.push(control);
      if (tag === "button" || tag === "textarea") open = { control, start: end };
      if (tag === "select") select = { control, first: undefined, chosen: false };
    } else if (tag === "option" && !closing && select) {
      const value = attrs.get("value");
      const selected = attrs.has("selected");
      if (selected) select.chosen = true;
      if (value === undefined) open = { control: select.control, start: end, option: { selected } };
      else if (selected) select.control.value = value;
      else if (select.first === undefined && !select.chosen) select.first = value;
    } else if (tag === "select" && closing && select) {
      if (!select.chosen) select.control.value = select.first ?? "";
      select = undefined;
    }
  }
  return forms;
}

/** Whether a control submits its form when pressed. */
export function isSubmit(control: FormControl): boolean {
  return (control.tag === "button" && control.type === "submit") ||
    (control.tag === "input" && (control.type === "submit" || control.type === "image"));
}

/** The name/value pairs a browser would send for `form`, pressed with `submitter` (HTML "form data set"). */
export function formData(form: HtmlForm, submitter?: FormControl): [string, string][] {
  const pairs: [string, string][] = [];
  for (const c of form.controls) {
    if (c.disabled || c.name === undefined || c.name === "") continue;
    if (c.tag === "button" || (c.tag === "input" && /^(submit|image|reset|button|file)$/.test(c.type))) {
      if (c === submitter) pairs.push([c.name, c.value]);
      continue;
    }
    if (c.tag === "input" && (c.type === "checkbox" || c.type === "radio") && !c.checked) continue;
    pairs.push([c.name, c.value]);
  }
  return pairs;
}

/** One link of a page. */
export interface HtmlLink {
  /** The href resolved against the page (or its `<base href>`). */
  href: URL;
  /** The visible text (tags removed, entities decoded, whitespace collapsed). */
  text: string;
  /** The `id` attribute. */
  id: string | undefined;
}

/** Reads every `<a href>` of a page: a Cancel or Deny is often a link, not a button. */
export function parseLinks(html: string, pageUrl: URL): HtmlLink[] {
  const links: HtmlLink[] = [];
  let base = pageUrl;
  const baseTag = /<base\b[^>]*\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i.exec(html);
  if (baseTag) base = resolve(decodeEntities(baseTag[1] ?? baseTag[2] ?? baseTag[3] ?? ""), pageUrl);
  for (const m of html.matchAll(/<a\b((?:[^>"']|"[^"]*"|'[^']*')*)>([\s\S]*?)<\/a\s*>/gi)) {
    const attrs = attributes(m[1] ?? "");
    const href = attrs.get("href");
    if (href === undefined || /^\s*(javascript|data):/i.test(href) || href.trim().startsWith("#")) continue;
    const text = decodeEntities((m[2] ?? "").replace(/<[^>]*>/g, " ")).replace(/\s+/g, " ").trim();
    links.push({ href: resolve(href, base), text, id: attrs.get("id") });
  }
  return links;
}
