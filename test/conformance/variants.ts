/**
 * Deliberately broken variants of the reference server, built without touching the core: by rewriting
 * requests and responses around its fetch handler, or by wrapping its store. Each names the case ids that
 * must catch it.
 */
import { sha256 } from "../../lib/crypto.ts";
import { DEMO_CONFIG } from "../../lib/reference/config.ts";
import type { Storage } from "../../lib/storage/types.ts";
import { s256 } from "../../conformance/pkce.ts";
import { type Handler, referenceApp } from "./reference.ts";

export interface Variant {
  name: string;
  /** The cases that must FAIL on this variant. */
  catches: string[];
  build(): Promise<Handler>;
}

const isToken = (url: URL) => url.searchParams.get("action") === "token" || url.pathname === "/token";
const isAuthorize = (url: URL) => url.searchParams.get("action") === "authorize" || url.pathname === "/authorize";
const CLIENTS = new Map(DEMO_CONFIG.clients.map((c) => [c.client_id, c]));
/** The one verifier the "PKCE not checked" variant puts everywhere. */
const FIXED_VERIFIER = "conformance-fixed-verifier-0123456789-abcdefghijklmnop";

/** A copy of `request` with a new URL and/or body. */
function rebuild(request: Request, url: URL, body: string | undefined): Request {
  const init: RequestInit = { method: request.method, headers: request.headers, redirect: "manual" };
  if (body !== undefined) init.body = body;
  return new Request(url, init);
}

/** Rewrites the form body of token requests. */
function editTokenForm(inner: Handler, edit: (form: URLSearchParams, request: Request) => void | Promise<void>): Handler {
  return async (request) => {
    const url = new URL(request.url);
    if (request.method !== "POST" || !isToken(url)) return inner(request);
    const form = new URLSearchParams(await request.text());
    await edit(form, request);
    return inner(rebuild(request, url, form.toString()));
  };
}

/** Rewrites the query of authorization requests (the login and consent POSTs carry it too). */
function editAuthorizeQuery(inner: Handler, edit: (query: URLSearchParams) => void | Promise<void>): Handler {
  return async (request) => {
    const url = new URL(request.url);
    if (!isAuthorize(url)) return inner(request);
    await edit(url.searchParams);
    const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.text();
    return inner(rebuild(request, url, body));
  };
}

/** Rewrites responses to requests that `match`. */
function editResponse(inner: Handler, match: (url: URL) => boolean, edit: (response: Response, request: Request) => Response | Promise<Response>): Handler {
  return async (request) => {
    const url = new URL(request.url);
    const response = await inner(request);
    return match(url) ? edit(response, request) : response;
  };
}

/** A store whose methods are the inner store's, except `overrides`. */
function wrapStorage(inner: Storage, overrides: (inner: Storage) => Partial<Storage>): Storage {
  const replaced = overrides(inner);
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property in replaced) return replaced[property as keyof Storage];
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Replaces the form's client authentication with that of `clientId` (its demo secret, if any). */
function authenticateAs(form: URLSearchParams, clientId: string): void {
  form.set("client_id", clientId);
  form.delete("client_secret");
  const secret = CLIENTS.get(clientId)?.client_secret;
  if (secret !== undefined) form.set("client_secret", secret);
}

const base = async () => (await referenceApp()).fetch;

export const VARIANTS: Variant[] = [
  {
    name: "PKCE verifier not checked",
    catches: ["SEC-PKCE-VERIFIER-MISMATCH", "SEC-PKCE-VERIFIER-SYNTAX"],
    async build() {
      const challenge = await s256(FIXED_VERIFIER);
      let app = await base();
      app = editAuthorizeQuery(app, (q) => {
        if (q.has("code_challenge")) q.set("code_challenge", challenge);
      });
      return editTokenForm(app, (form) => {
        if (form.has("code_verifier")) form.set("code_verifier", FIXED_VERIFIER);
      });
    },
  },
  {
    name: "a code redeemable twice",
    catches: ["SEC-CODE-REPLAY"],
    async build() {
      // redeemCode stores the tokens but never marks the code redeemed.
      const app = await referenceApp((store) =>
        wrapStorage(store, (inner) => ({
          async redeemCode(hash, tokens, now) {
            const code = await inner.findCode(hash, now);
            if (code === null) return null;
            await inner.saveTokens(tokens, now);
            return code;
          },
        }))
      );
      return app.fetch;
    },
  },
  {
    name: "redirect_uri not compared at the token endpoint",
    catches: ["SEC-CODE-REDIRECT_URI-MISMATCH"],
    async build() {
      return editTokenForm(await base(), (form) => {
        const registered = CLIENTS.get(form.get("client_id") ?? "")?.redirect_uris[0];
        if (form.get("grant_type") === "authorization_code" && form.has("redirect_uri") && registered) {
          form.set("redirect_uri", registered);
        }
      });
    },
  },
  {
    name: "scope not checked against the client",
    catches: ["AUTHZ-SCOPE-NOT-ALLOWED", "TOKEN-CC-SCOPE-NOT-ALLOWED"],
    async build() {
      const all = DEMO_CONFIG.scopes.map((s) => s.name);
      const app = await referenceApp((store) =>
        wrapStorage(store, (inner) => ({
          async getClient(clientId) {
            const client = await inner.getClient(clientId);
            return client && { ...client, scopes: all };
          },
        }))
      );
      return app.fetch;
    },
  },
  {
    name: "client_credentials accepted without a secret",
    catches: ["TOKEN-CC-CLIENT_SECRET-REQUIRED"],
    async build() {
      return editTokenForm(await base(), (form, request) => {
        const secret = CLIENTS.get(form.get("client_id") ?? "")?.client_secret;
        if (form.get("grant_type") === "client_credentials" && !form.has("client_secret") && !request.headers.has("authorization") && secret) {
          form.set("client_secret", secret);
        }
      });
    },
  },
  {
    name: "no Cache-Control: no-store",
    catches: ["RESP-NO-STORE"],
    async build() {
      return editResponse(await base(), isToken, (response) => {
        const headers = new Headers(response.headers);
        headers.delete("cache-control");
        return new Response(response.body, { status: response.status, headers });
      });
    },
  },
  {
    name: "errors redirected to an unregistered redirect_uri",
    catches: ["AUTHZ-REDIRECT-UNREGISTERED-NO-REDIRECT", "AUTHZ-REDIRECT-EXACT-MATCH"],
    async build() {
      return editResponse(await base(), isAuthorize, (response, request) => {
        const uri = new URL(request.url).searchParams.get("redirect_uri");
        if (response.status !== 400 || uri === null || !URL.canParse(uri)) return response;
        const location = new URL(uri);
        location.searchParams.set("error", "invalid_request");
        return new Response(null, { status: 302, headers: { location: location.href } });
      });
    },
  },
  {
    name: "a refresh token usable by another client",
    catches: ["SEC-REFRESH-CLIENT-BINDING"],
    async build() {
      const { fetch, storage } = await referenceApp();
      return editTokenForm(fetch, async (form) => {
        const token = form.get("refresh_token");
        if (form.get("grant_type") !== "refresh_token" || token === null) return;
        // Present the token on behalf of its owner, whoever sent it.
        const record = await storage.findRefreshToken(await sha256(token), Date.now());
        if (record !== null && record.client_id !== form.get("client_id")) authenticateAs(form, record.client_id);
      });
    },
  },
  {
    name: "a rotated refresh token still accepted",
    catches: ["SEC-REFRESH-ROTATED-REJECTED"],
    async build() {
      const app = await base();
      const newer = new Map<string, string>();
      return async (request) => {
        const url = new URL(request.url);
        if (request.method !== "POST" || !isToken(url)) return app(request);
        const form = new URLSearchParams(await request.text());
        let token = form.get("refresh_token");
        if (form.get("grant_type") !== "refresh_token" || token === null) return app(rebuild(request, url, form.toString()));
        // Swap a rotated token for the newest of its chain.
        while (newer.has(token)) token = newer.get(token)!;
        const sent = token;
        form.set("refresh_token", sent);
        const response = await app(rebuild(request, url, form.toString()));
        const body = await response.clone().json().catch(() => null) as { refresh_token?: string } | null;
        if (response.status === 200 && body?.refresh_token) newer.set(sent, body.refresh_token);
        return response;
      };
    },
  },
  {
    name: "two scopes accepted in one request",
    catches: ["AUTHZ-SCOPE-TWO", "TOKEN-CC-SCOPE-TWO"],
    async build() {
      const first = (params: URLSearchParams) => {
        const scope = params.get("scope");
        if (scope !== null && scope.includes(" ")) params.set("scope", scope.split(" ")[0]!);
      };
      return editTokenForm(editAuthorizeQuery(await base(), first), first);
    },
  },
  {
    name: "state dropped from the redirect",
    catches: ["AUTHZ-STATE-PASSTHROUGH", "AUTHZ-DENY-ACCESS_DENIED"],
    async build() {
      return editResponse(await base(), isAuthorize, (response) => {
        const location = response.headers.get("location");
        if (location === null || !location.startsWith("http://127.0.0.1:9999/")) return response;
        const url = new URL(location);
        url.searchParams.delete("state");
        const headers = new Headers(response.headers);
        headers.set("location", url.href);
        return new Response(null, { status: response.status, headers });
      });
    },
  },
  {
    name: "repeated parameters collapsed instead of refused",
    catches: ["TOKEN-PARAM-REPEATED", "AUTHZ-PARAM-REPEATED"],
    async build() {
      const dedupe = (params: URLSearchParams) => {
        const seen = new Map<string, string>();
        for (const [k, v] of params) if (!seen.has(k)) seen.set(k, v);
        for (const k of [...params.keys()]) params.delete(k);
        for (const [k, v] of seen) params.append(k, v);
      };
      return editTokenForm(editAuthorizeQuery(await base(), dedupe), dedupe);
    },
  },
  {
    name: "a public client gets tokens without PKCE",
    catches: ["SEC-PKCE-PUBLIC-REQUIRED"],
    async build() {
      const challenge = await s256(FIXED_VERIFIER);
      const isPublic = (id: string | null) => id !== null && CLIENTS.get(id)?.client_secret === undefined;
      const app = editAuthorizeQuery(await base(), (q) => {
        if (isPublic(q.get("client_id")) && !q.has("code_challenge")) {
          q.set("code_challenge", challenge);
          q.set("code_challenge_method", "S256");
        }
      });
      return editTokenForm(app, (form) => {
        if (form.get("grant_type") === "authorization_code" && isPublic(form.get("client_id")) && !form.has("code_verifier")) {
          form.set("code_verifier", FIXED_VERIFIER);
        }
      });
    },
  },
  {
    name: "a code redeemable by another client",
    catches: ["SEC-CODE-CLIENT-BINDING"],
    async build() {
      const { fetch, storage } = await referenceApp();
      return editTokenForm(fetch, async (form) => {
        const code = form.get("code");
        if (form.get("grant_type") !== "authorization_code" || code === null) return;
        const record = await storage.findCode(await sha256(code), Date.now());
        if (record !== null && record.client_id !== form.get("client_id")) authenticateAs(form, record.client_id);
      });
    },
  },
  {
    name: "401 without WWW-Authenticate at the token endpoint",
    catches: ["TOKEN-BASIC-AUTH-WRONG-401"],
    async build() {
      return editResponse(await base(), isToken, (response) => {
        const headers = new Headers(response.headers);
        headers.delete("www-authenticate");
        return new Response(response.body, { status: response.status, headers });
      });
    },
  },
  {
    name: "no Bearer challenge at the resource",
    catches: ["BEARER-MISSING", "BEARER-INVALID"],
    async build() {
      return editResponse(await base(), (url) => url.pathname.startsWith("/api/"), (response) => {
        const headers = new Headers(response.headers);
        headers.delete("www-authenticate");
        return new Response(response.body, { status: response.status, headers });
      });
    },
  },
];
