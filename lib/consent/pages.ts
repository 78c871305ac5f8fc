/**
 * The HTML pages of the authorization endpoint: sign-in, consent and the error page shown when a request
 * cannot be sent back to the client. Every value is escaped; every page forbids framing (clickjacking, RFC 6749
 * §10.13), scripts and outside assets through its Content-Security-Policy, and is kept out of caches.
 *
 * @module
 */
import { randomToken } from "../crypto.ts";
import type { ResponseParts } from "../http.ts";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/**
 * Escapes text for HTML element content and quoted attribute values.
 *
 * @example
 * ```ts
 * escapeHtml(`<b title="x">`); // "&lt;b title=&quot;x&quot;&gt;"
 * ```
 */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** What {@link htmlPage} wraps in the shared layout. */
export interface HtmlPageContent {
  /** The document title, as plain text. */
  title: string;
  /** The card's content: HTML whose values are already escaped. */
  main: string;
}

/** Options of {@link htmlPage}. */
export interface HtmlPageOptions {
  /**
   * Extra `form-action` sources: origins (`https://app.example`), URLs (reduced to their origin) or, for
   * native apps, schemes (`com.example.app:`). Anything else is dropped.
   */
  formAction?: string[];
  /** Extra response headers, such as `set-cookie`. */
  headers?: [string, string][];
}

const SCHEME = /^[a-z][a-z0-9+.-]*:$/i;

/** A CSP source for a form target, or null when the value names none safely. */
function formActionSource(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.origin !== "null") return url.origin;
  // Custom-scheme redirect URIs (RFC 8252 §7.1) have an opaque origin; CSP can only name their scheme.
  return SCHEME.test(url.protocol) && url.protocol !== "javascript:" && url.protocol !== "data:" ? url.protocol : null;
}

/**
 * Wraps content in the shared layout and the headers every interactive page needs: no caching, no framing, no
 * sniffing, no referrer (the URL holds the authorization request), and a CSP that allows only the page's own
 * nonce-tagged styles and `data:` images. Chrome enforces `form-action` on the redirect that follows a form
 * POST, so a consent page must list the client's redirect origin in `formAction`.
 *
 * @example
 * ```ts
 * const page = htmlPage(200, { title: "Hello", main: `<h1>${escapeHtml(name)}</h1>` });
 * return respond(request, page);
 * ```
 */
export function htmlPage(status: number, page: HtmlPageContent, options: HtmlPageOptions = {}): ResponseParts {
  const nonce = randomToken();
  const sources = ["'self'"];
  for (const value of options.formAction ?? []) {
    const source = formActionSource(value);
    if (source !== null && !sources.includes(source)) sources.push(source);
  }
  const csp = `default-src 'none'; style-src 'nonce-${nonce}'; img-src data:; frame-ancestors 'none'; ` +
    `base-uri 'none'; form-action ${sources.join(" ")}`;
  const body = `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">\n` +
    `<meta name="referrer" content="no-referrer">\n<meta name="robots" content="noindex, nofollow">\n` +
    `<title>${escapeHtml(page.title)}</title>\n<style nonce="${nonce}">${CSS}</style>\n</head>\n` +
    `<body>\n<main class="card">\n${page.main}\n</main>\n</body>\n</html>\n`;
  return {
    status,
    headers: [
      ["content-type", "text/html;charset=UTF-8"],
      ["cache-control", "no-store"],
      ["pragma", "no-cache"],
      ["x-frame-options", "DENY"],
      ["x-content-type-options", "nosniff"],
      ["referrer-policy", "no-referrer"],
      ["content-security-policy", csp],
      ...(options.headers ?? []),
    ],
    body,
  };
}

/** What {@link consentPage} shows. */
export interface ConsentPageInput {
  clientName: string;
  clientId: string;
  /** The signed-in user's display name. */
  userName: string;
  /** Every requested scope: its name on the wire and its human description. */
  scopes: { name: string; description: string }[];
  /** Path and query the form posts to: the authorization request itself. */
  action: string;
  /** The consent form's CSRF token. */
  csrf: string;
  /**
   * Origin of the client's redirect URI, or the URI itself; the browser is sent there after the decision. A
   * custom-scheme URI (whose origin is opaque, `"null"`) should be passed whole, so its scheme can be allowed.
   */
  redirectOrigin: string;
  /** The resources (RFC 8707) the access is for, when the request named any. */
  resources?: string[];
  /** For a client identified by a metadata document URL: the host that published it. */
  clientHost?: string;
  /**
   * The client registered itself (dynamic registration or a metadata document): no operator vouches for its
   * name, so the page says so, in words next to the name.
   */
  unverified?: boolean;
  /** What the client says it is (`application_type`): an app on the user's device, or a web site. */
  applicationType?: "web" | "native";
  /** The name of a client this server knows, which this one's name equals or resembles. */
  resembles?: string;
  /** Warn that the answer goes to a program on this device (a loopback redirect of a self-registered client). */
  loopbackWarning?: boolean;
}

/**
 * The consent page (RFC 6749 §4.1.1): who asks, for which account, for what, and where the answer goes. One
 * form posts `decision=allow` or `decision=deny` with the CSRF token back to the authorization request.
 *
 * @example
 * ```ts
 * consentPage({
 *   clientName: "Photo Printer", clientId: "printer", userName: "Alice",
 *   scopes: [{ name: "photos", description: "Read your photos" }], action: "/authorize?client_id=printer&...",
 *   csrf, redirectOrigin: "https://printer.example",
 * });
 * ```
 */
export function consentPage(input: ConsentPageInput): ResponseParts {
  const client = escapeHtml(input.clientName);
  const user = escapeHtml(input.userName);
  const initial = escapeHtml((Array.from(input.userName.trim())[0] ?? "?").toUpperCase());
  const destination = escapeHtml(formActionSource(input.redirectOrigin) ?? input.redirectOrigin);
  const unverified = input.unverified === true;
  const kind = input.applicationType === undefined ? "" : ` · ${APPLICATION_TYPES[input.applicationType]}`;
  const main = `<div class="mark" aria-hidden="true">${ICON_SHIELD}</div>\n` +
    `<h1><span class="strong">${client}</span>${unverified ? ` <span class="tag">unverified</span>` : ""} ` +
    `wants to access your account</h1>\n` +
    `<p class="muted small">Client ID <code>${escapeHtml(input.clientId)}</code>${kind}</p>\n` +
    (input.resembles === undefined ? "" : `<p class="alert" role="alert">This is not ` +
      `<strong>${escapeHtml(input.resembles)}</strong>: its name only looks like it. Deny unless you are sure.</p>\n`) +
    (unverified ? `<p class="small">${client} registered itself with this server, which does not know who runs it: ` +
      `its name is only what it calls itself.${input.clientHost === undefined ? "" : ` It is published by ` +
        `<strong>${escapeHtml(input.clientHost)}</strong>.`}</p>\n` : "") +
    `<div class="account"><span class="avatar" aria-hidden="true">${initial}</span>` +
    `<span><span class="muted small block">Signed in as</span><strong>${user}</strong></span></div>\n` +
    grantedList(client, input.scopes, input.resources) +
    (input.loopbackWarning === true
      ? `<p class="alert" role="alert">The answer goes to a program on this device ` +
        `(<strong>${destination}</strong>). Allow only if you started ${client} yourself just now.</p>\n`
      : "") +
    `<form method="post" action="${escapeHtml(input.action)}">\n` +
    `<input type="hidden" name="csrf" value="${escapeHtml(input.csrf)}">\n` +
    `<div class="actions">` +
    `<button type="submit" name="decision" value="deny" class="secondary">Deny</button>` +
    `<button type="submit" name="decision" value="allow" class="primary">Allow</button></div>\n` +
    `</form>\n` +
    `<p class="note">Either way, you will be sent back to <strong>${destination}</strong>.</p>`;
  return htmlPage(200, { title: `Authorize ${input.clientName}`, main }, { formAction: [input.redirectOrigin] });
}

const APPLICATION_TYPES = { native: "an app on your device", web: "a web application" } as const;

/**
 * The page for an authorization request that must not be redirected (RFC 6749 §4.1.2.1): an unknown client or
 * an unregistered redirect URI, where sending the user on would make the server an open redirector.
 *
 * @example
 * ```ts
 * errorPage(400, "This link is not valid", "The application that sent you here is not registered.");
 * ```
 */
export function errorPage(status: number, title: string, message: string): ResponseParts {
  const main = `<div class="mark warn" aria-hidden="true">${ICON_ALERT}</div>\n` +
    `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>\n` +
    `<p class="muted small">You can close this page and return to the application you came from.</p>`;
  return htmlPage(status, { title, main });
}

/** What {@link loginPage} shows. */
export interface LoginPageInput {
  /** Path and query the form posts to: the authorization request itself. */
  action: string;
  /** The login form's CSRF token. */
  csrf: string;
  /** The application that asked for sign-in. */
  clientName: string;
  /** A message for the user; the page is then sent with status 401. */
  error?: string;
  /** The username to fill in again after a failed attempt. */
  username?: string;
}

/**
 * The sign-in page: username, password and the CSRF token, posted back to the authorization request.
 * Status 200, or 401 when `error` is set. The password is never filled in again.
 *
 * @example
 * ```ts
 * loginPage({ action: "/authorize?client_id=printer&...", csrf, clientName: "Photo Printer" });
 * ```
 */
export function loginPage(input: LoginPageInput): ResponseParts {
  const failed = input.error !== undefined;
  const username = input.username ?? "";
  const invalid = failed ? ` aria-invalid="true" aria-describedby="login-error"` : "";
  const main = `<div class="mark" aria-hidden="true">${ICON_LOCK}</div>\n` +
    `<h1>Sign in</h1>\n` +
    `<p class="muted"><strong class="text">${escapeHtml(input.clientName)}</strong> asks you to sign in ` +
    `to continue.</p>\n` +
    (failed ? `<p class="alert" role="alert" id="login-error">${escapeHtml(input.error ?? "")}</p>\n` : "") +
    `<form method="post" action="${escapeHtml(input.action)}" class="stack">\n` +
    `<input type="hidden" name="csrf" value="${escapeHtml(input.csrf)}">\n` +
    `<label for="username">Username</label>\n` +
    `<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" ` +
    `spellcheck="false" required value="${escapeHtml(username)}"${invalid}${username ? "" : " autofocus"}>\n` +
    `<label for="password">Password</label>\n` +
    `<input id="password" name="password" type="password" autocomplete="current-password" required` +
    `${invalid}${username ? " autofocus" : ""}>\n` +
    `<button type="submit" class="primary">Sign in</button>\n` +
    `</form>`;
  return htmlPage(failed ? 401 : 200, { title: "Sign in", main });
}

// Icons are inline SVG with presentation attributes only: the CSP blocks `style` attributes.
const SVG = `<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" ` +
  `stroke-linecap="round" stroke-linejoin="round">`;
const ICON_SHIELD =
  `${SVG}<path d="M12 3l8 3v6c0 4.5-3.4 8.3-8 9-4.6-.7-8-4.5-8-9V6z"/><path d="M9 12l2 2 4-4"/></svg>`;
const ICON_LOCK = `${SVG}<rect x="4" y="11" width="16" height="10" rx="2"/><path d="M8 11V7a4 4 0 0 1 8 0v4"/></svg>`;
const ICON_ALERT = `${SVG}<circle cx="12" cy="12" r="9"/><path d="M12 7.5v5.5M12 16.5h.01"/></svg>`;

// Colours meet WCAG AA: body text ≥ 7:1, muted text ≥ 4.5:1, field borders and focus rings ≥ 3:1.
const CSS = [
  `*,*::before,*::after{box-sizing:border-box}`,
  `:root{color-scheme:light dark;--bg:#f1f5f9;--card:#fff;--text:#0f172a;--muted:#475569;--line:#e2e8f0;` +
  `--field:#fff;--edge:#64748b;--accent:#1d4ed8;--accent-hover:#1e3a8a;--ring:#2563eb;--chip:#eff6ff;` +
  `--alert-bg:#fef2f2;--alert:#991b1b;--alert-line:#fecaca;--shadow:rgb(15 23 42/.08)}`,
  `@media (prefers-color-scheme:dark){:root{--bg:#020617;--card:#0f172a;--text:#f1f5f9;--muted:#a1afc3;` +
  `--line:#1e293b;--field:#020617;--edge:#64748b;--accent:#2563eb;--accent-hover:#1d4ed8;--ring:#60a5fa;` +
  `--chip:#172554;--alert-bg:#450a0a;--alert:#fecaca;--alert-line:#7f1d1d;--shadow:rgb(0 0 0/.4)}}`,
  `body{margin:0;min-height:100vh;min-height:100dvh;display:flex;align-items:center;justify-content:center;` +
  `padding:1.5rem 1rem;background:var(--bg);color:var(--text);font:1rem/1.5 system-ui,-apple-system,` +
  `"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;-webkit-text-size-adjust:100%}`,
  `.card{width:100%;max-width:26rem;background:var(--card);border:1px solid var(--line);border-radius:1rem;` +
  `padding:2rem 1.5rem;box-shadow:0 1px 2px var(--shadow),0 12px 32px var(--shadow);overflow-wrap:anywhere}`,
  `@media (min-width:30rem){.card{padding:2.5rem 2.25rem}}`,
  // On a phone the page is the card: full width, from the top, so the form stays clear of the keyboard.
  `@media (max-width:29.99rem){body{align-items:flex-start;padding:0;background:var(--card)}` +
  `.card{border:0;border-radius:0;box-shadow:none;padding:2rem 1.5rem 2.5rem}}`,
  `.card>:last-child{margin-bottom:0}`,
  `.mark{display:flex;align-items:center;justify-content:center;width:3rem;height:3rem;margin:0 0 1.25rem;` +
  `border-radius:.875rem;background:var(--chip);color:var(--accent)}`,
  `@media (prefers-color-scheme:dark){.mark{color:var(--ring)}}`,
  `.mark svg{width:1.5rem;height:1.5rem}.mark.warn{background:var(--alert-bg);color:var(--alert)}`,
  `h1{margin:0 0 .5rem;font-size:1.375rem;line-height:1.3;font-weight:650}`,
  `h2{margin:1.5rem 0 .5rem;font-size:1rem;font-weight:600}`,
  `p{margin:0 0 1rem}.muted{color:var(--muted)}.small{font-size:.875rem}.block{display:block}`,
  `.strong,.text{color:var(--text)}.strong{font-weight:700}`,
  `code{font:.8125rem/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}`,
  `.account{display:flex;align-items:center;gap:.75rem;margin:1.25rem 0;padding:.75rem;` +
  `border:1px solid var(--line);border-radius:.75rem}`,
  `.avatar{flex:none;display:flex;align-items:center;justify-content:center;width:2.5rem;height:2.5rem;` +
  `border-radius:50%;background:var(--accent);color:#fff;font-weight:700}`,
  `.scopes{margin:0;padding:0;list-style:none;border-top:1px solid var(--line)}`,
  `.scopes li{padding:.75rem 0;border-bottom:1px solid var(--line)}`,
  `.actions{display:flex;gap:.75rem;margin-top:1.5rem}.actions button{flex:1}`,
  `button{min-height:2.75rem;padding:.625rem 1rem;border:1px solid transparent;border-radius:.625rem;` +
  `font:inherit;font-weight:600;cursor:pointer}`,
  `.primary{background:var(--accent);color:#fff}.primary:hover{background:var(--accent-hover)}`,
  `.secondary{background:transparent;color:var(--text);border-color:var(--edge)}`,
  `.secondary:hover{background:var(--chip)}`,
  `label{display:block;margin:1rem 0 .375rem;font-weight:600;font-size:.9375rem}`,
  `input[type=text],input[type=password]{display:block;width:100%;padding:.625rem .75rem;font:inherit;` +
  `color:var(--text);background:var(--field);border:1px solid var(--edge);border-radius:.5rem}`,
  `.stack button{width:100%;margin-top:1.5rem}`,
  `:focus-visible{outline:3px solid var(--ring);outline-offset:2px}input:focus-visible{outline-offset:1px}`,
  `.alert{padding:.75rem 1rem;color:var(--alert);background:var(--alert-bg);border:1px solid var(--alert-line);` +
  `border-radius:.5rem;font-size:.9375rem}`,
  `.note{margin:1.25rem 0 0;color:var(--muted);font-size:.875rem;text-align:center}`,
  // The word says it; the colour only repeats it.
  `.tag{display:inline-block;padding:0 .5rem;border:1px solid var(--alert-line);border-radius:1rem;` +
  `background:var(--alert-bg);color:var(--alert);font-size:.75rem;font-weight:600;vertical-align:middle}`,
].join("\n");

/** What a consent grants: the scopes with their descriptions, and the resources (RFC 8707) where there are any. */
export function grantedList(client: string, scopes: readonly { name: string; description: string }[], resources?: readonly string[]): string {
  return `<h2>This will allow ${client} to:</h2>\n` +
    `<ul class="scopes">${scopes.map((s) => `<li><span class="block">${escapeHtml(s.description)}</span>` +
      `<code class="muted">${escapeHtml(s.name)}</code></li>`).join("")}</ul>\n` +
    (resources === undefined ? "" : `<p class="small">At: ${resources.map((r) => `<code>${escapeHtml(r)}</code>`).join(", ")}</p>\n`);
}
