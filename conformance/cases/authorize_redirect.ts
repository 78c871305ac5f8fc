/**
 * Authorization endpoint, redirect URI validation: the server must never redirect to a redirect_uri it cannot
 * match exactly against the client's registration, nor for a client it does not know (RFC 6749 §3.1.2.4,
 * §4.1.2.1; RFC 9700 §2.1, §4.1.3). Every exchange of the attempt is searched for such a redirect.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { ALL, CONTROL } from "./profiles.ts";
import type { AuthzOutcome, CaseContext, Fields } from "../context.ts";
import { isRedirectTo } from "../drivers/driver.ts";
import { makeVerifier, s256 } from "../pkce.ts";
import type { Exchange } from "../types.ts";

/** An address no client registered; `.example` never resolves (RFC 2606). */
const ATTACKER = "https://attacker.example/callback";

/** Sends the public client's authorization request with `change`. */
async function attempt(ctx: CaseContext, change: Fields): Promise<AuthzOutcome> {
  const client = ctx.target.clients.public;
  const params: Fields = {
    ...ctx.authorizeParams(client),
    code_challenge: await s256(makeVerifier()),
    code_challenge_method: "S256",
    ...change,
  };
  return ctx.outcome(ctx.authorizeUrl(params));
}

/** The exchanges of an attempt that redirected to `uri`. */
function redirectsTo(outcome: AuthzOutcome, uri: string): Exchange[] {
  return outcome.exchanges.filter((e) => {
    const location = e.response?.headers.location;
    return location !== undefined && URL.canParse(location, e.request.url) && isRedirectTo(new URL(location, e.request.url), uri);
  });
}

/** Sends the public client's request with `change`, and fails if any response redirects to `forbidden`. */
async function expectNoRedirect(ctx: CaseContext, change: Fields, forbidden: string, what: string): Promise<void> {
  const outcome = await attempt(ctx, change);
  const bad = redirectsTo(outcome, forbidden)[0];
  if (bad) ctx.fail(`${what}: the server redirected to ${forbidden} (RFC 6749 §4.1.2.1: MUST NOT redirect)`, bad);
  if (outcome.kind === "redirect" && isRedirectTo(outcome.url, forbidden)) {
    ctx.fail(`${what}: the approval ended at ${outcome.url.href}`, outcome.exchanges.slice(-1));
  }
}

/** Variants of a registered redirect URI that exact string matching must refuse. */
function variants(registered: string): [string, string][] {
  const url = new URL(registered);
  const list: [string, string][] = [];
  const path = (p: string) => {
    const u = new URL(url);
    u.pathname = p;
    return u.href;
  };
  list.push(["a longer path", path(`${url.pathname}x`)]);
  list.push(["a trailing slash", path(url.pathname.endsWith("/") ? `${url.pathname}x/` : `${url.pathname}/`)]);
  const upper = url.pathname.toUpperCase();
  if (upper !== url.pathname) list.push(["a path in upper case", path(upper)]);
  const q = new URL(url);
  q.searchParams.append("x_conformance", "1");
  list.push(["an extra query parameter", q.href]);
  return list;
}

export const cases: CaseDef[] = [
  {
    id: "AUTHZ-REDIRECT-UNREGISTERED-NO-REDIRECT",
    title: "An unregistered redirect_uri is refused without redirecting to it",
    area: "authorize",
    ref: "RFC 6749 §3.1.2.4, §4.1.2.1; RFC 9700 §4.1",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      await expectNoRedirect(ctx, { redirect_uri: ATTACKER }, ATTACKER, `redirect_uri ${ATTACKER}`);
    },
  },
  {
    id: "AUTHZ-REDIRECT-EXACT-MATCH",
    title: "redirect_uri is compared by exact string match: near variants are refused without redirect",
    area: "authorize",
    ref: "spec §2 Client (redirect_uri must match); RFC 9700 §2.1, §4.1.3",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      for (const [what, uri] of variants(ctx.target.clients.public.redirect_uri)) {
        await expectNoRedirect(ctx, { redirect_uri: uri }, uri, `redirect_uri with ${what} (${uri})`);
      }
    },
  },
  {
    id: "AUTHZ-CLIENT-UNKNOWN-NO-REDIRECT",
    title: "An unknown client_id is refused without redirecting",
    area: "authorize",
    ref: "RFC 6749 §4.1.2.1 (invalid client identifier: MUST NOT redirect)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      const client = ctx.target.clients.public;
      const uri = client.redirect_uri;
      await expectNoRedirect(ctx, { client_id: `${client.client_id}-unknown-conformance` }, uri, "an unknown client_id");
    },
  },
  {
    id: "AUTHZ-CLIENT-MISSING-NO-REDIRECT",
    title: "A request without client_id is refused without redirecting",
    area: "authorize",
    ref: "RFC 6749 §4.1.2.1 (missing client identifier: MUST NOT redirect)",
    level: "MUST",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      await expectNoRedirect(ctx, { client_id: undefined }, ctx.target.clients.public.redirect_uri, "no client_id");
    },
  },
  {
    id: "AUTHZ-REDIRECT-MISSING",
    title: "A request without redirect_uri gets no code",
    area: "authorize",
    ref: "spec §4.1 (redirect_uri: all requests); RFC 6749 §3.1.2.3 allows the one registered URI instead",
    level: "SHOULD",
    profiles: ALL,
    needs: [CONTROL.authorize],
    async run(ctx) {
      const registered = ctx.target.clients.public.redirect_uri;
      const outcome = await attempt(ctx, { redirect_uri: undefined });
      const codes = redirectsTo(outcome, registered)
        .filter((e) => new URL(e.response!.headers.location!, e.request.url).searchParams.has("code"));
      ctx.check(codes.length === 0, "A code was issued for a request without redirect_uri", codes);
    },
  },
];
