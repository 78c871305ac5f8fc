/**
 * Deliberately broken DPoP around the reference server (JWT access tokens, DPoP on), each naming the cases that
 * must catch it: by rewriting requests and responses around its fetch handler, or by wrapping its store.
 */
import { normalizedHtu, verifyProof } from "../../lib/features/dpop_proof.ts";
import { sha256 } from "../../lib/sha256.ts";
import type { Storage } from "../../lib/storage/types.ts";
import { BASE, type Handler, jwtConfig, referenceApp, type TestApp } from "./reference.ts";
import type { Variant } from "./variants.ts";

const isToken = (url: URL) => url.searchParams.get("action") === "token" || url.pathname === "/token";
const isAuthorize = (url: URL) => url.searchParams.get("action") === "authorize" || url.pathname === "/authorize";
const isApi = (url: URL) => url.pathname.startsWith("/api/");

const dpopApp = (wrap: (storage: Storage) => Storage = (s) => s, requireNonce = false): Promise<TestApp> =>
  referenceApp(wrap, { config: { ...jwtConfig(), dpop: { enabled: true, require_nonce: requireNonce } } });

/** A store whose methods are `inner`'s, except `overrides`. */
function wrapStorage(inner: Storage, overrides: Partial<Storage>): Storage {
  return new Proxy(inner, {
    get(target, property) {
      if (property in overrides) return overrides[property as keyof Storage];
      const value: unknown = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Rewrites the JSON of 200 answers to requests that `match`. */
function editJson(inner: Handler, match: (url: URL) => boolean, edit: (body: Record<string, unknown>) => void): Handler {
  return async (request) => {
    const response = await inner(request);
    if (!match(new URL(request.url)) || response.status !== 200) return response;
    const body = await response.json() as Record<string, unknown>;
    edit(body);
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    return new Response(JSON.stringify(body), { status: 200, headers });
  };
}

/** A copy of `request` with its headers edited. */
async function withHeaders(request: Request, edit: (headers: Headers) => void): Promise<Request> {
  const headers = new Headers(request.headers);
  edit(headers);
  const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.text();
  return new Request(request.url, { method: request.method, headers, ...(body === undefined ? {} : { body }) });
}

/** The variants of this file. */
export const DPOP_VARIANTS: Variant[] = [
  {
    name: "dpop_signing_alg_values_supported that lists none and HS256",
    catches: ["DPOP-METADATA"],
    async build() {
      const app = await dpopApp();
      const fetch = editJson(app.fetch, (url) => url.pathname.startsWith("/.well-known/oauth-authorization-server"), (body) => {
        body.dpop_signing_alg_values_supported = ["ES256", "none", "HS256"];
      });
      return { ...app, fetch };
    },
  },
  {
    name: "a token endpoint that ignores a proof failing any check and issues a Bearer token instead",
    catches: ["DPOP-PROOF-TARGET", "DPOP-PROOF-IAT", "DPOP-PROOF-SIGNATURE", "DPOP-PROOF-TYP"],
    async build() {
      const app = await dpopApp();
      const fetch: Handler = async (request) => {
        const url = new URL(request.url);
        const proof = request.headers.get("dpop");
        if (request.method !== "POST" || !isToken(url) || proof === null) return app.fetch(request);
        const valid = await verifyProof(proof, { method: "POST", url: normalizedHtu(BASE + url.pathname)!, algorithms: ["ES256"], now: Date.now() })
          .then(() => true, () => false);
        return app.fetch(valid ? request : await withHeaders(request, (h) => h.delete("dpop")));
      };
      return { ...app, fetch };
    },
  },
  {
    name: "proofs never marked used (no replay detection at the token endpoint or the resource)",
    catches: ["DPOP-PROOF-REPLAY", "DPOP-RESOURCE-REPLAY"],
    build: () => dpopApp((inner) => wrapStorage(inner, {
      markOnce: (key, expiresAt, now) => (key.startsWith("dpop:") ? Promise.resolve(true) : inner.markOnce(key, expiresAt, now)),
    })),
  },
  {
    name: "a public client's refresh token that forgets its key",
    catches: ["DPOP-REFRESH-BOUND"],
    build: () => dpopApp((inner) => wrapStorage(inner, {
      findRefreshToken: async (hash, now) => {
        const record = await inner.findRefreshToken(hash, now);
        if (record === null) return null;
        const { jkt: _, ...unbound } = record;
        return unbound;
      },
    })),
  },
  {
    name: "an authorization endpoint that drops dpop_jkt",
    catches: ["DPOP-CODE-JKT"],
    async build() {
      const app = await dpopApp();
      const fetch: Handler = async (request) => {
        const url = new URL(request.url);
        if (!isAuthorize(url) || !url.searchParams.has("dpop_jkt")) return app.fetch(request);
        url.searchParams.delete("dpop_jkt");
        const body = request.method === "POST" ? await request.text() : undefined;
        return app.fetch(new Request(url, { method: request.method, headers: request.headers, redirect: "manual", ...(body === undefined ? {} : { body }) }));
      };
      return { ...app, fetch };
    },
  },
  {
    name: "use_dpop_nonce sent with 401, not the 400 of a token endpoint error",
    catches: ["DPOP-NONCE"],
    async build() {
      const app = await dpopApp((s) => s, true);
      const fetch: Handler = async (request) => {
        const response = await app.fetch(request);
        if (!isToken(new URL(request.url)) || response.status !== 400) return response;
        const text = await response.text();
        return new Response(text, { status: text.includes('"use_dpop_nonce"') ? 401 : 400, headers: response.headers });
      };
      return { ...app, fetch };
    },
  },
  {
    name: "introspection that hides the binding of a DPoP-bound token",
    catches: ["DPOP-INTROSPECTION"],
    async build() {
      const app = await dpopApp();
      const fetch = editJson(app.fetch, (url) => url.pathname === "/introspect", (body) => {
        delete body.cnf;
        if (body.token_type !== undefined) body.token_type = "Bearer";
      });
      return { ...app, fetch };
    },
  },
  {
    name: "a resource that takes any live token, whatever its scheme and proof",
    catches: ["DPOP-RESOURCE-AS-BEARER", "DPOP-RESOURCE-PROOF", "DPOP-RESOURCE-REPLAY", "DPOP-RESOURCE-CHALLENGE"],
    async build() {
      const app = await dpopApp();
      const fetch: Handler = async (request) => {
        const token = /^(?:Bearer|DPoP) (\S+)$/i.exec(request.headers.get("authorization") ?? "")?.[1];
        if (!isApi(new URL(request.url)) || token === undefined) return app.fetch(request);
        const live = await app.storage.findAccessToken(sha256(token), Date.now());
        return live === null ? app.fetch(request) : Response.json({ reports: [] });
      };
      return { ...app, fetch };
    },
  },
  {
    name: "a resource whose 401 names the Bearer scheme alone",
    catches: ["DPOP-RESOURCE-CHALLENGE"],
    async build() {
      const app = await dpopApp();
      const fetch: Handler = async (request) => {
        const response = await app.fetch(request);
        if (!isApi(new URL(request.url)) || response.status !== 401) return response;
        const headers = new Headers(response.headers);
        headers.set("www-authenticate", (headers.get("www-authenticate") ?? "").replace(/, DPoP .*$/, ""));
        return new Response(response.body, { status: 401, headers });
      };
      return { ...app, fetch };
    },
  },
];
