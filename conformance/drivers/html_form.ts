/**
 * The built-in approval driver for servers with plain HTML login and consent forms: it logs in with a
 * username and password, presses Allow (or Deny), keeps cookies and follows redirects by hand until the
 * server redirects to the client's redirect_uri.
 *
 * @module
 */
import { CookieJar } from "./cookies.ts";
import { type ApprovalDriver, type ApproveOptions, ConsentRemembered, DriverError, isRedirectTo, pageSummary } from "./driver.ts";
import { type FormControl, formData, type HtmlForm, isSubmit, parseForms, parseLinks } from "./forms.ts";
import { followRedirects } from "./redirects.ts";

/** Options of {@link htmlFormDriver}. */
export interface HtmlFormDriverOptions {
  /** The test user's name, typed into the login form. */
  username: string;
  /** The test user's password. */
  password: string;
  /** Most redirects followed in one approval. Default 10. */
  maxRedirects?: number;
}

const ALLOW = /\b(allow|approve|accept|authori[sz]e|consent|yes|grant|agree|continue)\b/i;
// Checked first: "Don't allow" and "No, cancel" are refusals.
const DENY = /\b(deny|cancel|reject|decline|refuse|disallow|no|don'?t|not now)\b/i;
const TEXT_INPUT = /^(text|email|tel|search|username)$/;

/**
 * Creates the HTML-form driver. One driver keeps one cookie jar, so a session survives from one approval to
 * the next, as in a browser; a login form is filled whenever the server shows one.
 *
 * @example
 * ```ts
 * const driver = htmlFormDriver({ username: "demo", password: "demo-password" });
 * const redirect = await driver.approve(authorizeUrl, { deny: false, fetch });
 * ```
 */
export function htmlFormDriver(options: HtmlFormDriverOptions): ApprovalDriver {
  const jar = new CookieJar();
  const maxRedirects = options.maxRedirects ?? 10;
  /** One approval in the session `jar` holds. */
  async function once(authorizeUrl: URL, deny: boolean, fetch: ApproveOptions["fetch"], jar: CookieJar): Promise<URL> {
    const redirectUri = authorizeUrl.searchParams.get("redirect_uri");
    // Without a redirect_uri in the request, the first hop to another origin is the client's callback.
    const arrived = (u: URL) => redirectUri !== null ? isRedirectTo(u, redirectUri) : u.origin !== authorizeUrl.origin;
    const follow = { jar, until: arrived, maxRedirects };
    let next: { url: URL; method: "GET" | "POST"; body?: URLSearchParams } = { url: authorizeUrl, method: "GET" };
    let logins = 0;
    let consents = 0;
    for (;;) {
      const end = await followRedirects(fetch, next.url, follow, next.method, next.body);
      if (end.kind === "arrived") {
        // Asked to deny, but no consent page was ever shown and a code came back: remembered consent.
        if (deny && consents === 0 && end.url.searchParams.has("code")) throw new ConsentRemembered();
        return end.url;
      }
      const { response, url } = end;
      const html = await response.text();
      if (response.status !== 200) {
        throw new DriverError(`The server answered ${response.status} at ${url}: ${pageSummary(html)}`);
      }
      const forms = parseForms(html, url);
      const login = forms.find((f) => f.controls.some((c) => c.tag === "input" && c.type === "password"));
      if (login) {
        if (++logins > 2) throw new DriverError("The login form came back after logging in: check username and password");
        next = submit(login, fillLogin(login, options), login.controls.find(isSubmit));
        continue;
      }
      if (++consents > 3) throw new DriverError("The consent form came back after answering it three times");
      const choice = chooseConsent(forms, deny);
      if (choice) {
        next = submit(choice.form, choice.form.controls, choice.button);
        continue;
      }
      // A Cancel or Deny that is a link, not a button.
      const link = deny ? parseLinks(html, url).find((l) => DENY.test(l.text) || DENY.test(l.id ?? "")) : undefined;
      if (link) {
        next = { url: link.href, method: "GET" };
        continue;
      }
      throw new DriverError(`No login form and no ${deny ? "Deny" : "Allow"} button at ${url}: ${pageSummary(html)}`);
    }
  }
  return {
    async approve(authorizeUrl: URL, { deny, fetch }: ApproveOptions): Promise<URL> {
      try {
        return await once(authorizeUrl, deny, fetch, jar);
      } catch (error) {
        // Consent remembered in this session: a new browser session (log in again) gets the consent page and
        // its Deny. Only if that session is not asked either is there no Deny to press.
        if (!(error instanceof ConsentRemembered)) throw error;
        return await once(authorizeUrl, deny, fetch, new CookieJar());
      }
    },
  };
}

/** The login form's controls with the username and password filled in (used by the page cases too). */
export function fillLogin(form: HtmlForm, options: HtmlFormDriverOptions): FormControl[] {
  const inputs = form.controls.filter((c) => c.tag === "input" && !c.disabled);
  const byName = inputs.find((c) => TEXT_INPUT.test(c.type) && /user|login|email|name|account/i.test(c.name ?? ""));
  const user = byName ?? inputs.find((c) => TEXT_INPUT.test(c.type));
  return form.controls.map((c) => {
    if (c === user) return { ...c, value: options.username };
    if (c.tag === "input" && c.type === "password") return { ...c, value: options.password };
    return c;
  });
}

function label(c: FormControl): string {
  return `${c.value} ${c.text}`.trim();
}

/** Picks the consent form and the button to press: by label, then by name or id (used by the page cases too). */
export function chooseConsent(forms: HtmlForm[], deny: boolean): { form: HtmlForm; button?: FormControl } | undefined {
  const buttons = forms.flatMap((form) => form.controls.filter(isSubmit).map((button) => ({ form, button })));
  const kind = (text: string) => DENY.test(text) ? "deny" : ALLOW.test(text) ? "allow" : undefined;
  const classify = (c: FormControl) => kind(label(c)) ?? kind(`${c.name ?? ""} ${c.id ?? ""}`);
  const wanted = deny ? "deny" : "allow";
  const match = buttons.find((b) => classify(b.button) === wanted);
  if (match) return match;
  if (deny) return undefined;
  // A lone unlabelled button, or a form without buttons, is taken as the approval.
  const neutral = buttons.filter((b) => classify(b.button) === undefined);
  if (neutral.length === 1 && buttons.length === 1) return neutral[0];
  if (buttons.length === 0 && forms.length === 1) return { form: forms[0]! };
  return undefined;
}

/** The request a browser sends when `submitter` submits `form` with `controls`. */
export function submit(
  form: HtmlForm,
  controls: FormControl[],
  submitter: FormControl | undefined,
): { url: URL; method: "GET" | "POST"; body?: URLSearchParams } {
  const data = new URLSearchParams(formData({ ...form, controls }, submitter));
  if (form.method === "POST") return { url: form.action, method: "POST", body: data };
  const url = new URL(form.action);
  url.search = data.toString();
  return { url, method: "GET" };
}
