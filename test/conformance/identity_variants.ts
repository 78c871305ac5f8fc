/**
 * Deliberately broken variants of the MCP deployment's identity features (private_key_jwt, the jwt-bearer grant,
 * token exchange), each naming the cases that must catch it: a jti store that forgets, a token endpoint that
 * takes any client assertion or any JWT, metadata that says too much or too little, a refresh token where none
 * belongs, a delegation without its actor. Built around the server, without touching it.
 */
import { memoryStorage } from "../../lib/storage/memory.ts";
import type { Storage } from "../../lib/storage/types.ts";
import { referenceMcpApp } from "../../conformance/targets/reference_mcp_app.ts";
import { DOCUMENTS, type Handler } from "./reference.ts";
import type { Variant } from "./variants.ts";

const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const SIGNER_SECRET = "conformance-signer-secret-0123456789";

const isToken = (url: URL) => url.searchParams.get("action") === "token" || url.pathname === "/token";
const isMetadata = (url: URL) => url.pathname.startsWith("/.well-known/oauth-authorization-server");

const mcpApp = (options: Parameters<typeof referenceMcpApp>[0] = {}) =>
  referenceMcpApp({ passwordIterations: 1, documentOrigin: DOCUMENTS.origin, ...options });

/** A token response for a request the broken server "accepts" without looking. */
const accepted = (form: URLSearchParams) =>
  Response.json({ access_token: `accepted-${crypto.randomUUID()}`, token_type: "Bearer", expires_in: 3600, scope: form.get("scope") ?? "", issued_token_type: "urn:ietf:params:oauth:token-type:access_token" }, {
    headers: { "cache-control": "no-store", pragma: "no-cache" },
  });

/** Answers token requests of `grantType` with a token, whatever they carry. */
async function acceptsAny(grantType: string): Promise<Handler> {
  const inner = await mcpApp();
  return async (request) => {
    const url = new URL(request.url);
    if (request.method !== "POST" || !isToken(url)) return inner(request);
    const body = await request.text();
    const form = new URLSearchParams(body);
    if (form.get("grant_type") === grantType) return accepted(form);
    return inner(new Request(request.url, { method: "POST", headers: request.headers, body }));
  };
}

/** Rewrites the JSON answers to requests that `match`. */
function editJson(inner: Handler, match: (url: URL) => boolean, edit: (body: Record<string, unknown>, request: Request) => void): Handler {
  return async (request) => {
    const response = await inner(request.clone());
    if (!match(new URL(request.url)) || response.status !== 200) return response;
    const body = await response.json() as Record<string, unknown>;
    edit(body, request);
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    return new Response(JSON.stringify(body), { status: 200, headers });
  };
}

/** The variants of this file. */
export const IDENTITY_VARIANTS: Variant[] = [
  {
    name: "a jti store that forgets: assertions replay",
    catches: ["ID-PKJWT-REPLAY", "ID-JAG-REPLAY"],
    mcp: true,
    profile: "mcp",
    build: () => {
      const inner = memoryStorage();
      const forgetful: Storage = new Proxy(inner, {
        get(target, property, receiver) {
          if (property === "markOnce") return (key: string, expiresAt: number, now: number) => (key.startsWith("jti:") ? Promise.resolve(true) : inner.markOnce(key, expiresAt, now));
          const value: unknown = Reflect.get(target, property, receiver);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      return mcpApp({ storage: forgetful });
    },
  },
  {
    name: "private_key_jwt that checks nothing: any client assertion signs the client in",
    catches: [
      "ID-PKJWT-ALG-NONE", "ID-PKJWT-HMAC", "ID-PKJWT-UNTRUSTED-KEY", "ID-PKJWT-EXPIRED", "ID-PKJWT-AUDIENCE", "ID-PKJWT-AUDIENCE-SOLE",
      "ID-PKJWT-SUBJECT", "ID-PKJWT-LIFETIME",
    ],
    mcp: true,
    profile: "mcp",
    async build() {
      // The signer has a secret here; an assertion in a request is swapped for it, unread.
      const inner = await mcpApp({
        configure: (c) => ({
          ...c,
          clients: c.clients.map((client) => client.client_id === "conformance-signer" ? { client_id: client.client_id, name: client.name, redirect_uris: [], scopes: client.scopes, grant_types: client.grant_types, client_secret: SIGNER_SECRET } : client),
        }),
      });
      return async (request) => {
        const url = new URL(request.url);
        if (request.method !== "POST" || !isToken(url)) return inner(request);
        const form = new URLSearchParams(await request.text());
        if (form.has("client_assertion")) {
          form.delete("client_assertion");
          form.delete("client_assertion_type");
          form.set("client_id", "conformance-signer");
          form.set("client_secret", SIGNER_SECRET);
        }
        return inner(new Request(request.url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString() }));
      };
    },
  },
  {
    name: "a jwt-bearer grant that checks nothing: any JWT becomes a token",
    catches: [
      "ID-JAG-TYP", "ID-JAG-AUDIENCE", "ID-JAG-CLIENT", "ID-JAG-EXPIRED", "ID-JAG-UNTRUSTED-KEY", "ID-JAG-UNKNOWN-ISSUER", "ID-JAG-UNKNOWN-USER",
      "ID-WORKLOAD-AUDIENCE", "ID-WORKLOAD-EXPIRED", "ID-WORKLOAD-UNTRUSTED-KEY", "ID-WORKLOAD-UNKNOWN-ISSUER",
    ],
    mcp: true,
    profile: "mcp",
    build: () => acceptsAny(JWT_BEARER),
  },
  {
    name: "a token exchange that checks nothing: any subject, any scope",
    catches: ["ID-TX-SCOPE-WIDER", "ID-TX-REVOKED", "ID-TX-INVALID-SUBJECT"],
    mcp: true,
    profile: "mcp",
    build: () => acceptsAny(TOKEN_EXCHANGE),
  },
  {
    name: "a refresh token for an identity assertion",
    catches: ["ID-JAG-NO-REFRESH"],
    mcp: true,
    profile: "mcp",
    build: async () => editJson(await mcpApp(), isToken, (body) => void (body.refresh_token = `rt-${crypto.randomUUID()}`)),
  },
  {
    name: "metadata offering HS256 for private_key_jwt and not announcing the ID-JAG profile",
    catches: ["ID-PKJWT-METADATA", "ID-JAG-PROFILE"],
    mcp: true,
    profile: "mcp",
    build: async () =>
      editJson(await mcpApp(), isMetadata, (body) => {
        body.token_endpoint_auth_signing_alg_values_supported = ["HS256", "ES256"];
        delete body.authorization_grant_profiles_supported;
      }),
  },
  {
    name: "a delegation whose token does not name its actor",
    catches: ["ID-TX-ACT"],
    mcp: true,
    profile: "mcp",
    build: async () => editJson(await mcpApp(), (url) => url.pathname === "/introspect", (body) => void delete body.act),
  },
];
