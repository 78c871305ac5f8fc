/**
 * The connected-apps page, `/account/apps`: a signed-in user sees the applications they authorized (which
 * client, which scopes, when granted, when last used) and can revoke one, which revokes its grant and so every
 * code, access token and refresh token of it (Storage `revokeGrant`).
 *
 * Sign-in is the server's own hook (the same form and session cookie as the authorization endpoint). A revoke is
 * a POST carrying a CSRF token bound to the session (HMAC of the user and the session cookie), from this
 * origin only; the page cannot be framed (`frame-ancestors 'none'`, `X-Frame-Options: DENY`), and a user can
 * only revoke their own grants.
 *
 * @module
 */
import { escapeHtml, errorPage, htmlPage } from "../consent/pages.ts";
import { hmac, hmacKey, timingSafeEqual } from "../crypto.ts";
import { isFormContentType, readText, redirectResponse, remoteAddressOf, respond, type ResponseParts } from "../http.ts";
import type { AuthenticateUser } from "../options.ts";
import type { Storage } from "../storage/types.ts";

/** Options of {@link connectedApps}. */
export interface ConnectedAppsOptions {
  storage: Storage;
  /** The same sign-in hook as the authorization endpoint's. */
  authenticateUser: AuthenticateUser;
  /** Scope descriptions, shown beside each scope. */
  scopes: Record<string, string>;
  /** Key of the page's CSRF tokens (at least 32 bytes). */
  secret: string | Uint8Array;
  /** The session cookie of the sign-in hook, to which CSRF tokens are bound. Default `oauth2_session`. */
  cookieName?: string;
  clock: () => number;
  /** The issuer: POSTs from its origin (or the request's own) are accepted. */
  issuer: string;
  /** The client's address for the sign-in throttle (behind trusted proxies, the forwarded one). Default the peer. */
  clientAddress?: (peer: string | undefined, header: (name: string) => string | null) => string | undefined;
}

const LABEL = "oauth2-fetch-server/connected-apps:";
const MAX_BODY = 4096;

/** The handler of `/account/apps` (GET shows, POST signs in or revokes). */
export function connectedApps(options: ConnectedAppsOptions): (request: Request, info?: unknown) => Promise<Response> {
  const key = hmacKey(options.secret);
  const cookieName = options.cookieName ?? "oauth2_session";
  const issuerOrigin = new URL(options.issuer).origin;
  const csrfFor = async (userId: string, request: Request) => {
    const session = cookieValue(request.headers.get("cookie"), cookieName) ?? "";
    return hmac(await key, `${LABEL}${userId}\n${session}`);
  };

  return async (request, info) => {
    const answer = await page(request, info);
    return answer instanceof Response ? answer : respond(request, answer);
  };

  async function page(request: Request, info: unknown): Promise<ResponseParts | Response> {
    if (request.method !== "GET" && request.method !== "HEAD" && request.method !== "POST") {
      const page = errorPage(405, "Method not allowed", "Use the page's buttons.");
      page.headers.push(["allow", "GET, HEAD, POST"]);
      return page;
    }
    let form: URLSearchParams | null = null;
    if (request.method === "POST") {
      if (!isFormContentType(request.headers.get("content-type"))) return errorPage(415, "Unsupported request", "The form could not be read.");
      // A POST from another origin is refused before anything else (CSRF defence in depth, beside the token).
      // "null" is what Chromium sends from our own no-referrer pages, so only a named origin is judged.
      const origin = request.headers.get("origin");
      if (origin !== null && origin !== "null" && origin !== issuerOrigin && origin !== new URL(request.url).origin) return errorPage(403, "Request refused", "This form can only be sent from this site.");
      let text: string;
      try {
        text = await readText(request, MAX_BODY);
      } catch {
        // Too large (or cut off): an error page, as at /logout, never an exception out of the handler (a 500).
        return errorPage(413, "Request refused", "The form is too large.");
      }
      form = new URLSearchParams(text);
    }
    const signedIn = await options.authenticateUser(request, {
      form,
      client: { client_id: "connected-apps", name: "Connected apps" },
      scope: "",
      remoteAddress: options.clientAddress
        ? options.clientAddress(remoteAddressOf(request, info), (name) => request.headers.get(name))
        : remoteAddressOf(request, info),
      issuer: options.issuer,
    });
    // The sign-in page, or the redirect back here after signing in.
    if (signedIn instanceof Response) return signedIn;
    const user = signedIn;
    const now = options.clock();

    if (form !== null && form.has("grant_id")) {
      const token = form.get("csrf") ?? "";
      if (!timingSafeEqual(await csrfFor(user.id, request), token)) {
        return errorPage(403, "Request refused", "This page has expired. Please reload it and try again.");
      }
      const grantId = form.get("grant_id") ?? "";
      // Only the user's own grants: another user's grant id revokes nothing.
      const grant = (await options.storage.listGrants(user.id, now)).find((g) => g.grant_id === grantId);
      if (grant) await options.storage.revokeGrant(grant.grant_id);
      const back = new URL(request.url);
      back.search = grant ? "?revoked=1" : "";
      return redirectResponse(back.href, 303);
    }

    const grants = (await options.storage.listGrants(user.id, now)).sort((a, b) => b.last_used_at - a.last_used_at);
    const clients = new Map(await Promise.all([...new Set(grants.map((g) => g.client_id))].map(async (id) => [id, await options.storage.getClient(id)] as const)));
    const csrf = await csrfFor(user.id, request);
    const action = new URL(request.url).pathname;
    const revoked = new URLSearchParams(new URL(request.url).search).get("revoked") === "1";
    const items = grants.map((g) => {
      const client = clients.get(g.client_id);
      const scopes = g.scope.split(" ").filter((s) => s !== "").map((s) =>
        `<li><strong>${escapeHtml(s)}</strong>${options.scopes[s] ? `: ${escapeHtml(options.scopes[s])}` : ""}</li>`
      ).join("");
      return `<li class="app" data-grant>\n<h2>${escapeHtml(client?.name ?? g.client_id)}</h2>\n` +
        `<p class="muted small">${escapeHtml(g.client_id)}</p>\n<ul class="scopes">${scopes}</ul>\n` +
        `<p class="small">Authorized <time datetime="${iso(g.created_at)}">${day(g.created_at)}</time> · ` +
        `last used <time datetime="${iso(g.last_used_at)}">${day(g.last_used_at)}</time></p>\n` +
        `<form method="post" action="${escapeHtml(action)}">\n` +
        `<input type="hidden" name="csrf" value="${escapeHtml(csrf)}">\n` +
        `<input type="hidden" name="grant_id" value="${escapeHtml(g.grant_id)}">\n` +
        `<button type="submit" class="secondary">Revoke access</button>\n</form>\n</li>`;
    });
    const main = `<h1>Connected apps</h1>\n` +
      `<p class="muted">Signed in as <strong class="text">${escapeHtml(user.name ?? user.id)}</strong>. ` +
      `These applications can act on your account. Revoking one signs it out at once.</p>\n` +
      (revoked ? `<p class="alert" role="status">Access revoked.</p>\n` : "") +
      (items.length === 0
        ? `<p id="empty">No application has access to your account.</p>`
        : `<ul class="apps stack">\n${items.join("\n")}\n</ul>`);
    return htmlPage(200, { title: "Connected apps", main });
  }
}

/** The first value of a cookie, or null. */
function cookieValue(header: string | null, name: string): string | null {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

const iso = (ms: number) => new Date(ms).toISOString();
const day = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ") + " UTC";
