/**
 * The login and consent pages: they must not be framed (clickjacking, RFC 9700 §4.16) and a consent must not
 * be given by a request forged from another site (RFC 6749 §10.12: the authorization server MUST implement
 * CSRF protection for its authorization endpoint). Run with a fresh cookie jar, as a new browser would.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import type { CaseContext } from "../context.ts";
import { CookieJar } from "../drivers/cookies.ts";
import { isRedirectTo, pageSummary } from "../drivers/driver.ts";
import { type FormControl, type HtmlForm, isSubmit, parseForms } from "../drivers/forms.ts";
import { chooseConsent, fillLogin, submit } from "../drivers/html_form.ts";
import { followRedirects } from "../drivers/redirects.ts";
import { makeVerifier, s256 } from "../pkce.ts";
import { ALL, BCP, CONTROL } from "./profiles.ts";

/** A valid authorization request of the public client. */
async function authorizeUrl(ctx: CaseContext): Promise<URL> {
  const client = ctx.target.clients.public;
  return ctx.authorizeUrl({ ...ctx.authorizeParams(client), code_challenge: await s256(makeVerifier()), code_challenge_method: "S256" });
}

type Step = { url: URL; method: "GET" | "POST"; body?: URLSearchParams };
type Page = { kind: "page"; url: URL; response: Response; html: string; forms: HtmlForm[] } | { kind: "arrived"; url: URL };

/** Follows a request until a page or the redirect_uri; reads the page. */
async function open(ctx: CaseContext, jar: CookieJar, redirectUri: string, step: Step, crossSite = false): Promise<Page> {
  const headers = crossSite ? { origin: "https://attacker.example", referer: "https://attacker.example/", "sec-fetch-site": "cross-site" } : {};
  const end = await followRedirects(ctx.http.fetch, step.url, { jar, until: (u) => isRedirectTo(u, redirectUri), headers, crossSite }, step.method, step.body);
  if (end.kind === "arrived") return end;
  const html = await end.response.text();
  return { kind: "page", url: end.url, response: end.response, html, forms: parseForms(html, end.url) };
}

const isLogin = (forms: HtmlForm[]) => forms.find((f) => f.controls.some((c) => c.tag === "input" && c.type === "password"));

/** A hidden input that looks like an anti-CSRF token. */
const CSRF_NAME = /csrf|xsrf|token|nonce|authenticity|state_key|_key$/i;

export const cases: CaseDef[] = [
  {
    id: "PAGES-FRAMING",
    title: "The login or consent page forbids framing (X-Frame-Options or CSP frame-ancestors)",
    area: "pages",
    ref: "RFC 9700 §4.16 (MUST prevent clickjacking: CSP frame-ancestors, X-Frame-Options); RFC 6749 §10.13",
    level: "MUST",
    profiles: BCP,
    needs: [CONTROL.authorize],
    security: true,
    async run(ctx) {
      const page = await open(ctx, new CookieJar(), ctx.target.clients.public.redirect_uri, { url: await authorizeUrl(ctx), method: "GET" });
      if (page.kind === "arrived") return ctx.skip("No page was shown to a new browser: the server redirected at once");
      if (page.response.status !== 200) return ctx.control(() => ctx.fail(`The authorization page answered ${page.response.status}: ${pageSummary(page.html)}`));
      const xfo = (page.response.headers.get("x-frame-options") ?? "").trim().toLowerCase();
      const csp = page.response.headers.get("content-security-policy") ?? "";
      const ancestors = /(?:^|;)\s*frame-ancestors\s+([^;]*)/i.exec(csp)?.[1]?.trim() ?? "";
      const cspOk = ancestors !== "" && !/(^|\s)(\*|https?:|http:\/\/\*|https:\/\/\*)(\s|$)/i.test(ancestors);
      ctx.check(
        xfo === "deny" || xfo === "sameorigin" || cspOk,
        `The page "${pageSummary(page.html)}" can be framed: X-Frame-Options ${JSON.stringify(xfo || null)}, frame-ancestors ${JSON.stringify(ancestors || null)}`,
      );
    },
  },
  {
    id: "PAGES-CSRF",
    title: "A consent forged from another site (without its anti-CSRF token, or cross-site as a browser sends it) issues no code",
    area: "pages",
    ref: "RFC 6749 §10.12 (the authorization server MUST implement CSRF protection for its authorization endpoint); RFC 9700 §4.7",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    security: true,
    async run(ctx) {
      const a = ctx.target.approval;
      if (a.driver !== "html_form") return ctx.skip("Needs the HTML-form driver: a custom driver's pages are not known to the suite");
      const redirectUri = ctx.target.clients.public.redirect_uri;
      const jar = new CookieJar();
      /** Logs in if asked, and returns the consent page (or the redirect, when consent is not asked). */
      const consentPage = async (): Promise<Page> => {
        let page = await open(ctx, jar, redirectUri, { url: await authorizeUrl(ctx), method: "GET" });
        for (let i = 0; page.kind === "page" && i < 2; i++) {
          const login = isLogin(page.forms);
          if (!login) break;
          page = await open(ctx, jar, redirectUri, submit(login, fillLogin(login, a), login.controls.find(isSubmit)));
        }
        return page;
      };
      const attackPage = await consentPage();
      if (attackPage.kind === "arrived") return ctx.skip("No consent page: the server issued the code without asking (remembered consent)");
      const choice = chooseConsent(attackPage.forms, false);
      if (!choice) return ctx.control(() => ctx.fail(`No Allow button on the consent page "${pageSummary(attackPage.html)}"`));
      // The forgery: the form without its anti-CSRF token if it has one, else sent as from another site.
      const tokens = choice.form.controls.filter((c) => c.tag === "input" && c.type === "hidden" && CSRF_NAME.test(c.name ?? ""));
      const controls: FormControl[] = choice.form.controls.filter((c) => !tokens.includes(c));
      // Sent from another site, a browser attaches only SameSite=None cookies: so does the jar.
      const forged = await open(ctx, jar, redirectUri, submit(choice.form, controls, choice.button), tokens.length === 0);
      const how = tokens.length > 0 ? `without its ${tokens.map((t) => t.name).join(", ")}` : "from another site's Origin";
      ctx.check(!(forged.kind === "arrived" && forged.url.searchParams.has("code")), `The consent form submitted ${how} issued a code`);
      // The control: the same consent, submitted intact from the page itself, issues a code.
      const page = await consentPage();
      const intact = page.kind === "page" ? chooseConsent(page.forms, false) : undefined;
      const ok = page.kind === "arrived" ? page : intact && page.kind === "page" ? await open(ctx, jar, redirectUri, submit(intact.form, intact.form.controls, intact.button)) : undefined;
      if (ok?.kind !== "arrived" || !ok.url.searchParams.has("code")) {
        return ctx.control(() => ctx.fail("The intact consent form issued no code either"));
      }
      return `The forged consent (${how}) was refused`;
    },
  },
];
