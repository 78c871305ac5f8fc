/**
 * Authorization endpoint, redirect URI validation: the server must never redirect to a redirect_uri it cannot
 * match exactly against the client's registration, nor for a client it does not know (RFC 6749 §3.1.2.4,
 * §4.1.2.1; RFC 9700 §2.1, §4.1.3). Every exchange of the attempt is searched for such a redirect.
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { ALL, CONTROL, MODERN, SPEC } from "./profiles.ts";
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
  const q = new URL(url);
  q.searchParams.append("x_conformance", "1");
  list.push(["an extra query parameter", q.href]);
  return list;
}

/** The registered URI split as written (no parsing: a parser would normalise what the cases vary). */
function parts(uri: string): { scheme: string; authority: string; path: string; rest: string } | undefined {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(.*)$/i.exec(uri);
  return m ? { scheme: m[1]!, authority: m[2]!, path: m[3]!, rest: m[4]! } : undefined;
}

/** Whether a URI is an http loopback one (RFC 8252 §7.3: any port must match). */
function isLoopback(uri: string): boolean {
  return /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(:\d+)?([/?#]|$)/i.test(uri);
}

/** One way a redirect URI can differ from the registered one, which exact string matching must refuse. */
interface Variant {
  id: string;
  what: string;
  /** The variant of `registered`, or a reason to skip. */
  make(registered: string): string | { skip: string };
}

const SEGMENT = /[^/]+\/?$/;

/** The variants of RFC 9700 §4.1.3's exact matching, each a case of its own so that each is proven alone. */
export const REDIRECT_VARIANTS: readonly Variant[] = [
  {
    id: "PORT",
    what: "another port",
    make(r) {
      if (isLoopback(r)) return { skip: "The registered redirect_uri is a loopback one, which may match on any port (RFC 8252 §7.3)" };
      const p = parts(r)!;
      const m = /^(.*?)(?::(\d+))?$/.exec(p.authority)!;
      const port = m[2] === undefined ? (p.scheme.toLowerCase() === "https" ? 8443 : 8080) : Number(m[2]) + 1;
      return `${p.scheme}://${m[1]}:${port}${p.path}${p.rest}`;
    },
  },
  {
    id: "SCHEME",
    what: "the other scheme",
    make(r) {
      const p = parts(r)!;
      const other = p.scheme.toLowerCase() === "https" ? "http" : "https";
      return `${other}://${p.authority}${p.path}${p.rest}`;
    },
  },
  {
    id: "HOST-SUFFIX",
    what: "a suffix on the host",
    make(r) {
      const p = parts(r)!;
      const m = /^(\[[^\]]*\]|[^:]*)(:\d+)?$/.exec(p.authority)!;
      if (m[1]!.startsWith("[")) return { skip: "The registered host is an IPv6 literal" };
      return `${p.scheme}://${m[1]}.attacker.example${m[2] ?? ""}${p.path}${p.rest}`;
    },
  },
  {
    id: "USERINFO",
    what: "userinfo before the host",
    make(r) {
      const p = parts(r)!;
      return `${p.scheme}://attacker@${p.authority}${p.path}${p.rest}`;
    },
  },
  {
    id: "DOT-SEGMENTS",
    what: "dot segments in the path",
    make(r) {
      const p = parts(r)!;
      const path = p.path === "" ? "/" : p.path;
      return `${p.scheme}://${p.authority}${path.replace(SEGMENT, (last) => `x/../${last}`)}${p.rest}`;
    },
  },
  {
    id: "PERCENT-ENCODING",
    what: "a percent-encoded character in the path",
    make(r) {
      const p = parts(r)!;
      const i = p.path.search(/[a-z0-9]/i);
      if (i === -1) return { skip: "The registered path has no character to encode" };
      const hex = p.path.charCodeAt(i).toString(16).toUpperCase();
      return `${p.scheme}://${p.authority}${p.path.slice(0, i)}%${hex}${p.path.slice(i + 1)}${p.rest}`;
    },
  },
  {
    id: "FRAGMENT",
    what: "a fragment",
    make(r) {
      return r.includes("#") ? { skip: "The registered redirect_uri has a fragment" } : `${r}#x-conformance`;
    },
  },
  {
    id: "CASE",
    what: "the path in another case",
    make(r) {
      const p = parts(r)!;
      const swapped = [...p.path].map((c) => c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()).join("");
      if (swapped === p.path) return { skip: "The registered path has no letters" };
      return `${p.scheme}://${p.authority}${swapped}${p.rest}`;
    },
  },
  {
    id: "TRAILING-SLASH",
    what: "a trailing slash",
    make(r) {
      const p = parts(r)!;
      const path = p.path.endsWith("/") ? p.path.slice(0, -1) : `${p.path}/`;
      if (path === "") return { skip: "The registered path is only a slash" };
      return `${p.scheme}://${p.authority}${path}${p.rest}`;
    },
  },
];

/** One case per variant: never a redirect to it (nor a code for it). */
const variantCases: CaseDef[] = REDIRECT_VARIANTS.map((v): CaseDef => ({
  id: `AUTHZ-REDIRECT-VARIANT-${v.id}`,
  title: `A redirect_uri that differs from the registered one only by ${v.what} is refused without redirect`,
  area: "authorize",
  ref: "RFC 6749 §3.1.2.4, §4.1.2.1; RFC 9700 §2.1, §4.1.3 (exact string matching)",
  level: "MUST",
  profiles: ALL,
  needs: [CONTROL.authorize],
  security: true,
  async run(ctx) {
    const made = v.make(ctx.target.clients.public.redirect_uri);
    if (typeof made !== "string") return ctx.skip(made.skip);
    await expectNoRedirect(ctx, { redirect_uri: made }, made, `redirect_uri with ${v.what} (${made})`);
  },
}));

export const cases: CaseDef[] = [
  ...variantCases,
  {
    id: "AUTHZ-REDIRECT-LOOPBACK-ANY-PORT",
    title: "A loopback redirect_uri is accepted on any port",
    area: "authorize",
    ref: "RFC 8252 §7.3, §8.3 (loopback: any port); RFC 9700 §2.1; OAuth 2.1 §8.4.2",
    level: "MUST",
    profiles: MODERN,
    needs: [CONTROL.authorize],
    positive: true,
    async run(ctx) {
      const registered = ctx.target.clients.public.redirect_uri;
      if (!isLoopback(registered)) ctx.skip("The public client's registered redirect_uri is not a loopback one");
      const p = parts(registered)!;
      const host = p.authority.replace(/:\d+$/, "");
      const port = /:(\d+)$/.exec(p.authority)?.[1] === "54321" ? 54322 : 54321;
      const uri = `${p.scheme}://${host}:${port}${p.path}${p.rest}`;
      const grant = await ctx.code("public", { params: { redirect_uri: uri } });
      ctx.check(isRedirectTo(grant.redirect, uri), `The code came back to ${grant.redirect.href}, not to ${uri}`);
      await ctx.twin(await ctx.redeem(grant), `redeeming the code issued for ${uri}`);
    },
  },
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
    profiles: SPEC,
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
