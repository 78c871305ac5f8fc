/**
 * The pages of the device flow's user-code page (RFC 8628 §3.3): enter the code, approve or deny, done. Same
 * layout, headers and CSP as the consent page ({@link htmlPage}): no framing, no scripts, no caching.
 *
 * @module
 */
import type { ResponseParts } from "../http.ts";
import { escapeHtml, grantedList, htmlPage } from "./pages.ts";

const SVG = `<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" ` +
  `stroke-linejoin="round">`;
const ICON_DEVICE = `${SVG}<rect x="3" y="4" width="18" height="12" rx="2"/><path d="M8 20h8M12 16v4"/></svg>`;
const mark = (warn = false): string => `<div class="mark${warn ? " warn" : ""}" aria-hidden="true">${ICON_DEVICE}</div>\n`;

/** What {@link userCodePage} shows. */
export interface UserCodePageInput {
  /** The page's own path: the form asks for it again with `?user_code=`. */
  action: string;
  /** Why the last code was refused; the page is then sent with `status`. */
  error?: string;
  status?: number;
  /** Seconds to wait, when too many wrong codes were tried. */
  retryAfter?: number;
}

/** The form where the user types the code their device shows. */
export function userCodePage(input: UserCodePageInput): ResponseParts {
  const failed = input.error !== undefined;
  const invalid = failed ? ` aria-invalid="true" aria-describedby="code-error"` : "";
  const main = mark() +
    `<h1>Connect a device</h1>\n<p class="muted">Enter the code shown on your device.</p>\n` +
    (failed ? `<p class="alert" role="alert" id="code-error">${escapeHtml(input.error!)}</p>\n` : "") +
    `<form method="get" action="${escapeHtml(input.action)}" class="stack">\n` +
    `<label for="user_code">Code</label>\n` +
    `<input id="user_code" name="user_code" type="text" autocomplete="one-time-code" autocapitalize="characters" ` +
    `spellcheck="false" required maxlength="64" placeholder="XXXX-XXXX" autofocus${invalid}>\n` +
    `<button type="submit" class="primary">Continue</button>\n</form>`;
  const page = htmlPage(input.status ?? 200, { title: "Connect a device", main });
  if (input.retryAfter !== undefined) page.headers.push(["retry-after", String(input.retryAfter)]);
  return page;
}

/** What {@link deviceConsentPage} shows. */
export interface DeviceConsentPageInput {
  clientName: string;
  clientId: string;
  /** The signed-in user's display name. */
  userName: string;
  /** Every requested scope: its name on the wire and its human description. */
  scopes: { name: string; description: string }[];
  /** When the device asked, in ms since the epoch. */
  requestedAt: number;
  /** The code, as the device shows it. */
  userCode: string;
  /** Path and query the form posts to. */
  action: string;
  csrf: string;
  /** The resources (RFC 8707) the access is for, when the device named any. */
  resources?: string[];
}

/**
 * Approve or deny (RFC 8628 §3.3): which app, on which account, for what, asked when, with which code; the
 * user compares the code with their device's before they allow (RFC 8628 §5.4, remote phishing).
 */
export function deviceConsentPage(input: DeviceConsentPageInput): ResponseParts {
  const client = escapeHtml(input.clientName);
  const when = new Date(input.requestedAt).toISOString().slice(0, 16).replace("T", " ");
  const main = mark() +
    `<h1><span class="strong">${client}</span> on a device wants to access your account</h1>\n` +
    `<p class="muted small">Client ID <code>${escapeHtml(input.clientId)}</code> · asked at ${when} UTC</p>\n` +
    `<p>Allow only if your device shows the code <strong><code>${escapeHtml(input.userCode)}</code></strong> ` +
    `and you started this yourself.</p>\n` +
    `<div class="account"><span><span class="muted small block">Signed in as</span>` +
    `<strong>${escapeHtml(input.userName)}</strong></span></div>\n` +
    grantedList(client, input.scopes, input.resources) +
    `<form method="post" action="${escapeHtml(input.action)}">\n` +
    `<input type="hidden" name="csrf" value="${escapeHtml(input.csrf)}">\n` +
    `<div class="actions">` +
    `<button type="submit" name="decision" value="deny" class="secondary">Deny</button>` +
    `<button type="submit" name="decision" value="allow" class="primary">Allow</button></div>\n</form>`;
  return htmlPage(200, { title: `Connect ${input.clientName}`, main });
}

/** The end of the flow, or a refusal: a message and no form. */
export function deviceDonePage(status: number, title: string, message: string, warn = false): ResponseParts {
  const main = mark(warn) + `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>`;
  return htmlPage(status, { title, main });
}
