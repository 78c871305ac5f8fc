/**
 * JWT access tokens (RFC 9068) and the JWK Set that verifies them (RFC 7517 §5, RFC 8414 `jwks_uri`), for servers
 * that announce `jwks_uri`. A server may still issue opaque tokens to the suite's clients (the format is often
 * per resource or per client): those cases then skip. The suite checks tokens as a resource server would, with
 * its own allow-list of asymmetric algorithms, and presents forged tokens at the target's resource.
 *
 * @module
 */
import { isJwsAlgorithm, type JwsAlgorithm } from "../../lib/jose/algorithms.ts";
import { decodeSegment } from "../../lib/jose/encoding.ts";
import { localJwks } from "../../lib/jose/jwks.ts";
import { verifyJws } from "../../lib/jose/jws.ts";
import type { CaseDef } from "../case.ts";
import { summary } from "../checks.ts";
import type { CaseContext } from "../context.ts";
import type { Reply } from "../http.ts";
import { ALL } from "./profiles.ts";

/** What a resource server here accepts: asymmetric algorithms only (RFC 9068 §4, RFC 8725 §3.1). */
const ALGORITHMS: readonly JwsAlgorithm[] = ["ES256", "ES384", "EdDSA", "RS256", "PS256"];
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];
const FEATURES = ["jwt_access_tokens"] as const;

/** A decoded JWT, as the server issued it. */
interface Jwt {
  token: string;
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  reply: Reply;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const json = (segment: string): unknown => JSON.parse(new TextDecoder().decode(decodeSegment(segment, "segment")));
const b64url = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
const b64 = (value: unknown): string => b64url(new TextEncoder().encode(JSON.stringify(value)));

/** The JWK Set at the metadata's `jwks_uri`; fails without one. */
async function keySet(ctx: CaseContext): Promise<{ keys: Record<string, unknown>[]; reply: Reply }> {
  const meta = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
  const uri = isObj(meta.json) ? meta.json.jwks_uri : undefined;
  if (typeof uri !== "string") return ctx.fail("The metadata has no jwks_uri", meta);
  const reply = await ctx.http.send("GET", uri, { headers: { accept: "application/jwk-set+json, application/json" } });
  const keys = isObj(reply.json) ? reply.json.keys : undefined;
  if (reply.status !== 200 || !Array.isArray(keys)) return ctx.fail(`jwks_uri answered ${summary(reply)}, not a JWK Set (RFC 7517 §5)`, reply);
  return { keys: keys.filter(isObj), reply };
}

/** A token of `role` (for `scope`), decoded; skips when it is not a JWT (the server issues opaque tokens to this client). */
async function issued(ctx: CaseContext, role: "client_credentials" | "public", scope?: string): Promise<Jwt> {
  const tokens = role === "client_credentials"
    ? await ctx.twin(await ctx.clientCredentials(ctx.target.clients.client_credentials, scope === undefined ? {} : { scope }), "client_credentials")
    : await ctx.tokens("public", scope === undefined ? {} : { scope });
  const parts = tokens.access_token.split(".");
  if (parts.length !== 3) return ctx.skip(`The ${role} access token is not a JWT: this server issues opaque tokens to this client`);
  let header: unknown;
  let claims: unknown;
  try {
    header = json(parts[0]!);
    claims = json(parts[1]!);
  } catch {
    return ctx.fail("The access token has three segments but is not a JWS of JSON objects (RFC 7515 §7.1)", tokens.reply);
  }
  if (!isObj(header) || !isObj(claims)) return ctx.fail("The access token's header or claims are not JSON objects", tokens.reply);
  return { token: tokens.access_token, header, claims, reply: tokens.reply };
}

/** Whether the token's signature verifies with a key of the set, chosen by kid and an allowed algorithm. */
async function verifies(token: string, keys: readonly Record<string, unknown>[]): Promise<boolean> {
  try {
    await verifyJws(token, { algorithms: ALGORITHMS, key: localJwks({ keys }) });
    return true;
  } catch {
    return false;
  }
}

/** The resource's URL and the role and scope whose token it accepts; skips without a resource. */
function resourceOf(ctx: CaseContext): { url: string; role: "client_credentials" | "public"; scope: string } {
  const r = ctx.target.resource;
  if (r !== undefined && (r.client === "client_credentials" || r.client === "public")) return { url: r.url, role: r.client, scope: r.scope };
  return ctx.skip("The target names no resource that accepts the client_credentials or public client's token");
}

const call = (ctx: CaseContext, url: string, token: string) =>
  ctx.http.send("GET", url, { headers: { accept: "application/json", authorization: `Bearer ${token}` } });

export const cases: CaseDef[] = [
  {
    id: "JWT-AT-JWKS",
    title: "jwks_uri serves a JWK Set of public keys, each with a distinct kid",
    area: "jwt_access_tokens",
    ref: "RFC 8414 §2 (jwks_uri); RFC 7517 §5, §4.5; RFC 7517 §9.2 (a published set holds no private key)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    security: true,
    positive: true,
    async run(ctx) {
      const { keys, reply } = await keySet(ctx);
      ctx.check(keys.length > 0, "The JWK Set holds no key", reply);
      for (const key of keys) {
        const leaked = PRIVATE_MEMBERS.filter((m) => key[m] !== undefined);
        ctx.check(leaked.length === 0, `A key of the set carries private members (${leaked.join(", ")}): the private key is public`, reply);
        ctx.check(typeof key.kty === "string", "A key of the set has no kty (RFC 7517 §4.1)", reply);
      }
      const kids = keys.map((k) => k.kid);
      ctx.check(kids.every((k) => typeof k === "string") && new Set(kids).size === kids.length, "The keys need distinct kids, so a token names one (RFC 7517 §4.5)", reply);
    },
  },
  {
    id: "JWT-AT-HEADER",
    title: "A JWT access token has typ at+jwt, an asymmetric alg, and the kid of a published key",
    area: "jwt_access_tokens",
    ref: "RFC 9068 §2.1 (typ at+jwt; never none), §4 (resource servers verify with the jwks_uri keys)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    positive: true,
    async run(ctx) {
      const jwt = await issued(ctx, "client_credentials");
      const { typ, alg, kid } = jwt.header;
      ctx.check(typeof typ === "string" && /^(application\/)?at\+jwt$/i.test(typ), `typ is ${JSON.stringify(typ)}, not "at+jwt"`, jwt.reply);
      ctx.check(isJwsAlgorithm(alg) && ALGORITHMS.includes(alg), `alg is ${JSON.stringify(alg)}: a resource server verifies access tokens with public keys only`, jwt.reply);
      const { keys, reply } = await keySet(ctx);
      ctx.check(typeof kid === "string" && keys.some((k) => k.kid === kid), `kid ${JSON.stringify(kid)} names no key of jwks_uri`, reply);
    },
  },
  {
    id: "JWT-AT-SIGNATURE",
    title: "The token verifies with the published key its kid names, from client_credentials and from the code flow",
    area: "jwt_access_tokens",
    ref: "RFC 9068 §4 (validate the signature with the keys of jwks_uri); RFC 7515 §5.2",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    positive: true,
    async run(ctx) {
      const { keys, reply } = await keySet(ctx);
      for (const role of ["client_credentials", "public"] as const) {
        const jwt = await issued(ctx, role);
        ctx.check(await verifies(jwt.token, keys), `The ${role} access token does not verify with the keys of jwks_uri`, [jwt.reply, reply]);
      }
    },
  },
  {
    id: "JWT-AT-CLAIMS",
    title: "The claims: iss the issuer, aud, sub, client_id, a jti, iat and a later exp, and the granted scope",
    area: "jwt_access_tokens",
    ref: "RFC 9068 §2.2 (iss, exp, aud, sub, client_id, iat, jti REQUIRED), §2.2.3 (scope)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    needs: ["JWT-AT-SIGNATURE"],
    async run(ctx) {
      const client = ctx.target.clients.client_credentials;
      const jwt = await issued(ctx, "client_credentials");
      const c = jwt.claims;
      ctx.check(c.iss === ctx.target.issuer, `iss is ${JSON.stringify(c.iss)}, not the issuer ${JSON.stringify(ctx.target.issuer)}`, jwt.reply);
      for (const name of ["sub", "client_id", "jti"]) ctx.check(typeof c[name] === "string" && c[name] !== "", `${name} is missing or not a string`, jwt.reply);
      ctx.check(typeof c.aud === "string" || (Array.isArray(c.aud) && c.aud.length > 0 && c.aud.every((a) => typeof a === "string")), "aud is missing", jwt.reply);
      ctx.check(typeof c.iat === "number" && typeof c.exp === "number" && c.exp > c.iat, `iat ${JSON.stringify(c.iat)} and exp ${JSON.stringify(c.exp)}: exp must follow iat`, jwt.reply);
      ctx.check(c.client_id === client.client_id, `client_id is ${JSON.stringify(c.client_id)}, not ${JSON.stringify(client.client_id)}`, jwt.reply);
      const granted = typeof jwt.reply.json === "object" && jwt.reply.json !== null ? (jwt.reply.json as { scope?: unknown }).scope ?? client.scope : client.scope;
      ctx.check(c.scope === granted, `scope is ${JSON.stringify(c.scope)}, the response granted ${JSON.stringify(granted)}`, jwt.reply);
      const again = await issued(ctx, "client_credentials");
      ctx.check(again.claims.jti !== c.jti, "Two tokens carry the same jti", again.reply);
    },
  },
  {
    id: "JWT-AT-SUB",
    title: "sub is the client for client_credentials and the user for the code flow",
    area: "jwt_access_tokens",
    ref: "RFC 9068 §2.2 (sub: the resource owner, or for client_credentials an identifier of the client)",
    level: "SHOULD",
    profiles: ALL,
    features: FEATURES,
    needs: ["JWT-AT-SIGNATURE"],
    async run(ctx) {
      const cc = await issued(ctx, "client_credentials");
      ctx.check(cc.claims.sub === ctx.target.clients.client_credentials.client_id, `client_credentials: sub is ${JSON.stringify(cc.claims.sub)}, not the client_id`, cc.reply);
      const user = await issued(ctx, "public");
      ctx.check(user.claims.client_id === ctx.target.clients.public.client_id, `code flow: client_id is ${JSON.stringify(user.claims.client_id)}`, user.reply);
      ctx.check(user.claims.sub !== user.claims.client_id, "code flow: sub is the client_id, not the user who approved", user.reply);
    },
  },
  {
    id: "JWT-AT-ALG-CONFUSION",
    title: "The resource refuses the token re-signed with alg none, with HS256 keyed by the public key, and with another key under the same kid",
    area: "jwt_access_tokens",
    ref: "RFC 9068 §4 (reject none and unexpected algorithms); RFC 8725 §2.1, §3.1; RFC 6750 §3.1",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    security: true,
    needs: ["JWT-AT-SIGNATURE"],
    async run(ctx) {
      const { url, role, scope } = resourceOf(ctx);
      const jwt = await issued(ctx, role, scope);
      await ctx.control(async () => {
        const reply = await call(ctx, url, jwt.token);
        ctx.check(reply.status >= 200 && reply.status < 300, `The genuine token was refused at the resource: ${reply.status}`, reply);
      });
      const { keys } = await keySet(ctx);
      const key = keys.find((k) => k.kid === jwt.header.kid) ?? keys[0]!;
      const [, payload] = jwt.token.split(".");
      const forged: [string, string][] = [["alg none", `${b64({ ...jwt.header, alg: "none" })}.${payload}.`]];
      // The classic confusion: the public key, as the server publishes it, used as an HMAC secret.
      for (const [what, secret] of [["the JWK", JSON.stringify(key)], ["its x or n member", String(key.x ?? key.n ?? "")]] as const) {
        const input = `${b64({ ...jwt.header, alg: "HS256" })}.${payload}`;
        const hmac = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
        const signature = new Uint8Array(await crypto.subtle.sign("HMAC", hmac, new TextEncoder().encode(input)));
        forged.push([`HS256 keyed with ${what}`, `${input}.${b64url(signature)}`]);
      }
      const own = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]) as CryptoKeyPair;
      const input = `${b64({ ...jwt.header, alg: "ES256" })}.${payload}`;
      const signature = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, own.privateKey, new TextEncoder().encode(input)));
      forged.push(["ES256 with the suite's own key under the server's kid", `${input}.${b64url(signature)}`]);
      for (const [what, token] of forged) {
        const reply = await call(ctx, url, token);
        ctx.check(reply.status === 401, `The token forged with ${what} was answered ${reply.status}, not 401`, reply);
      }
    },
  },
  {
    id: "JWT-AT-ROTATION",
    title: "After a key rotation, jwks_uri publishes the new key before it signs and keeps the old one for the tokens it signed",
    area: "jwt_access_tokens",
    ref: "RFC 7517 §5 (a set of keys); RFC 9068 §4 (tokens verify with the published keys); RFC 8414 §2 (jwks_uri)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    needs: ["JWT-AT-SIGNATURE"],
    async run(ctx) {
      const rotate = ctx.rotateKeys ?? ctx.skip("The run has no way to rotate the server's keys (an in-process run passes rotateKeys)");
      const before = await issued(ctx, "client_credentials");
      const old = await keySet(ctx);
      await rotate();
      const after = await keySet(ctx);
      const added = after.keys.filter((k) => !old.keys.some((o) => o.kid === k.kid));
      ctx.check(added.length > 0, "No new key appeared at jwks_uri after the rotation", after.reply);
      ctx.check(after.keys.some((k) => k.kid === before.header.kid), "The key that signed the earlier token left jwks_uri at the rotation", after.reply);
      ctx.check(await verifies(before.token, after.keys), "The token signed before the rotation no longer verifies", after.reply);
      if (!ctx.hasClock) return "the new key's first tokens were not checked: the target has no settable clock";
      // Long enough for a key published ahead to take over, short of a one-hour token's expiry.
      await ctx.advanceClock(30 * 60_000);
      const next = await issued(ctx, "client_credentials");
      ctx.check(added.some((k) => k.kid === next.header.kid) || next.header.kid === before.header.kid, "A token is signed by a key that was not published at the rotation", next.reply);
      ctx.check(await verifies(before.token, (await keySet(ctx)).keys), "The token signed before the rotation no longer verifies half an hour later", next.reply);
      return undefined;
    },
  },
];
