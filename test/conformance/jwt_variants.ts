/**
 * Deliberately broken JWT access tokens and JWK Sets around the reference server (issuing JWTs), each naming the
 * case that must catch it. Claims and headers are broken by an issuer in the middle that re-signs every access
 * token with its own key and publishes that key instead: the signature still verifies, so the case under test
 * runs instead of being blocked by its control.
 */
import { generateSigningKey } from "../../lib/jose/jwk.ts";
import { signJwt } from "../../lib/jose/jwt.ts";
import { type Handler, jwtConfig, referenceApp, type TestApp } from "./reference.ts";
import type { Variant } from "./variants.ts";

const isToken = (url: URL) => url.searchParams.get("action") === "token" || url.pathname === "/token";
const isJwks = (url: URL) => url.pathname === "/jwks";
const decode = (segment: string) => JSON.parse(atob(segment.replace(/-/g, "+").replace(/_/g, "/"))) as Record<string, unknown>;

const jwtApp = (): Promise<TestApp> => referenceApp((s) => s, { config: jwtConfig() });

/** Rewrites the JSON of answers to requests that `match`. */
function editJson(inner: Handler, match: (url: URL) => boolean, edit: (body: Record<string, unknown>) => Promise<void> | void): Handler {
  return async (request) => {
    const response = await inner(request);
    if (!match(new URL(request.url)) || response.status !== 200) return response;
    const body = await response.json() as Record<string, unknown>;
    await edit(body);
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    return new Response(JSON.stringify(body), { status: 200, headers });
  };
}

/** The JWT app behind an issuer in the middle: `edit` changes each token's header and claims before it re-signs. */
async function resigned(edit: (header: Record<string, unknown>, claims: Record<string, unknown>) => void): Promise<TestApp> {
  const app = await jwtApp();
  const pair = await generateSigningKey("ES256");
  let fetch = editJson(app.fetch, isToken, async (body) => {
    const [head, payload] = String(body.access_token).split(".");
    const header: Record<string, unknown> = { ...decode(head!), kid: pair.publicJwk.kid };
    const claims = decode(payload!);
    edit(header, claims);
    const { alg: _, ...rest } = header;
    const token = await signJwt(claims, { alg: "ES256", key: pair.privateJwk, kid: String(rest.kid), ...(rest.typ === undefined ? {} : { typ: String(rest.typ) }) });
    body.access_token = token;
  });
  fetch = editJson(fetch, isJwks, (body) => void (body.keys = [pair.publicJwk]));
  return { ...app, fetch };
}

/** The variants of this file. */
export const JWT_VARIANTS: Variant[] = [
  {
    name: "a JWK Set that publishes the private key",
    catches: ["JWT-AT-JWKS"],
    async build() {
      const app = await jwtApp();
      return { ...app, fetch: editJson(app.fetch, isJwks, (body) => void (body.keys as Record<string, unknown>[]).forEach((k) => (k.d = "bGVha2Vk"))) };
    },
  },
  {
    name: "JWT access tokens typed JWT, not at+jwt",
    catches: ["JWT-AT-HEADER"],
    build: () => resigned((header) => void (header.typ = "JWT")),
  },
  {
    name: "JWT access tokens without jti",
    catches: ["JWT-AT-CLAIMS"],
    build: () => resigned((_, claims) => void delete claims.jti),
  },
  {
    name: "client_credentials tokens whose sub is not the client",
    catches: ["JWT-AT-SUB"],
    build: () => resigned((_, claims) => void (claims.sub === claims.client_id && (claims.sub = "service-account-7"))),
  },
  {
    name: "a resource that reads JWTs without verifying their signature",
    catches: ["JWT-AT-ALG-CONFUSION"],
    async build() {
      const app = await jwtApp();
      const fetch: Handler = async (request) => {
        const token = /^Bearer (\S+\.\S+\.\S*)$/.exec(request.headers.get("authorization") ?? "")?.[1];
        if (new URL(request.url).pathname !== "/api/reports" || token === undefined) return app.fetch(request);
        const claims = decode(token.split(".")[1]!);
        return typeof claims.client_id === "string" ? Response.json({ reports: [] }) : app.fetch(request);
      };
      return { ...app, fetch };
    },
  },
  {
    name: "a rotation that drops the old key from the JWK Set at once",
    catches: ["JWT-AT-ROTATION"],
    async build() {
      const app = await jwtApp();
      let dropped: string[] = [];
      const fetch = editJson(app.fetch, isJwks, (body) => {
        body.keys = (body.keys as { kid: string }[]).filter((k) => !dropped.includes(k.kid));
      });
      const rotateKeys = async () => {
        const before = await (await app.fetch(new Request("http://127.0.0.1:8080/jwks"))).json() as { keys: { kid: string }[] };
        await app.rotateKeys!();
        dropped = before.keys.map((k) => k.kid);
      };
      return { ...app, fetch, rotateKeys };
    },
  },
];
