/**
 * DPoP (RFC 9449), for servers that announce `dpop_signing_alg_values_supported`. The suite is the DPoP client: it
 * holds its own ES256 keys, signs a proof for every request, and answers a `use_dpop_nonce` once with the nonce it
 * was given (§8). It checks the proof rules at the token endpoint (§4.3), the binding of access tokens and of a
 * public client's refresh token (§5, §6), the code bound with `dpop_jkt` (§10), nonces, and the resource's side
 * (§7): a bound token only with the DPoP scheme and a fresh proof of its key.
 *
 * @module
 */
import { generateSigningKey, type Jwk, jwkThumbprint } from "../../lib/jose/jwk.ts";
import { signJws } from "../../lib/jose/jws.ts";
import { sha256 } from "../../lib/sha256.ts";
import type { CaseDef } from "../case.ts";
import { summary, type Tokens } from "../checks.ts";
import type { CaseContext, Fields } from "../context.ts";
import type { Reply } from "../http.ts";
import { randomString } from "../pkce.ts";
import { ALL, CONTROL } from "./profiles.ts";

const FEATURES = ["dpop"] as const;
const ASYMMETRIC = /^(ES|PS|RS)(256|384|512)$|^(EdDSA|Ed25519|Ed448|ES256K)$/;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const b64url = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
const b64 = (value: unknown): string => b64url(new TextEncoder().encode(JSON.stringify(value)));
const errorOf = (reply: Reply): unknown => (isObj(reply.json) ? reply.json.error : undefined);

/** A key the suite proves possession of: its private JWK, the public one a proof carries, its thumbprint. */
interface ProofKey {
  privateJwk: Jwk;
  jwk: Jwk;
  jkt: string;
}

async function proofKey(): Promise<ProofKey> {
  const { privateJwk, publicJwk } = await generateSigningKey("ES256");
  const jwk: Jwk = { kty: publicJwk.kty, crv: publicJwk.crv!, x: publicJwk.x!, y: publicJwk.y! };
  return { privateJwk, jwk, jkt: jwkThumbprint(jwk) };
}

/** What a proof says; `undefined` leaves a claim out, `age` sets `iat` that many seconds back (negative: ahead). */
interface Claims {
  htu: string;
  htm?: string | undefined;
  ath?: string | undefined;
  nonce?: string | undefined;
  jti?: string | undefined;
  age?: number;
}

/**
 * A proof (RFC 9449 §4.2) signed with `key`; `header` replaces header parameters (`typ`, `jwk`). Its `iat` is the
 * server's time as the run knows it (a run may have moved the server's clock).
 */
async function makeProof(ctx: CaseContext, key: ProofKey, claims: Claims, header: Record<string, unknown> = {}): Promise<string> {
  const { age = 0, ...rest } = claims;
  const payload: Record<string, unknown> = { jti: randomString(22), htm: "POST", iat: Math.floor(ctx.serverNow() / 1000) - age, ...rest };
  for (const name of Object.keys(payload)) if (payload[name] === undefined) delete payload[name];
  const protectedHeader: Record<string, unknown> = { alg: "ES256", typ: "dpop+jwt", jwk: key.jwk, ...header };
  for (const name of Object.keys(protectedHeader)) if (protectedHeader[name] === undefined) delete protectedHeader[name];
  return signJws(JSON.stringify(payload), protectedHeader as { alg: "ES256" }, key.privateJwk);
}

/** The `htu` of a URL: without query and fragment (RFC 9449 §4.2). */
const htuOf = (url: string | URL): string => {
  const u = new URL(url);
  return u.origin + u.pathname;
};

/**
 * A token request whose proof `make(nonce)` gives; a `use_dpop_nonce` answer with a `DPoP-Nonce` is retried once
 * with that nonce (RFC 9449 §8), as a DPoP client does.
 */
async function dpopToken(ctx: CaseContext, fields: Fields, make: (nonce: string | undefined) => Promise<string>): Promise<Reply> {
  const reply = await ctx.token(fields, { headers: { dpop: await make(undefined) } });
  const nonce = reply.headers.get("dpop-nonce");
  // Whatever the status: DPOP-NONCE judges that; the other cases want the nonce.
  if (errorOf(reply) === "use_dpop_nonce" && nonce !== null) {
    return ctx.token(fields, { headers: { dpop: await make(nonce) } });
  }
  return reply;
}

/** The client_credentials fields of the target's client. */
const ccFields = (ctx: CaseContext, scope?: string): Fields => {
  const client = ctx.target.clients.client_credentials;
  return { grant_type: "client_credentials", ...ctx.credentials(client), scope: scope ?? client.scope };
};

/** Expects a DPoP token response: tokens with token_type DPoP (case-insensitive, RFC 9449 §5). */
function expectDpopTokens(ctx: CaseContext, reply: Reply, what: string): Tokens {
  const body = isObj(reply.json) ? reply.json : {};
  if (reply.status !== 200 || typeof body.access_token !== "string") {
    return ctx.fail(`${what}: expected a token response, got ${summary(reply)}`, reply);
  }
  ctx.check(typeof body.token_type === "string" && body.token_type.toLowerCase() === "dpop", `${what}: token_type must be "DPoP" for a token bound to the proof's key (RFC 9449 §5), got ${JSON.stringify(body.token_type)}`, reply);
  const tokens: Tokens = { access_token: body.access_token, token_type: String(body.token_type), body, reply };
  if (typeof body.refresh_token === "string") tokens.refresh_token = body.refresh_token;
  return tokens;
}

/** Expects the token endpoint to refuse a proof: a 400 with no token, `invalid_dpop_proof` (or, where the case allows it, `use_dpop_nonce`). */
function expectRefused(ctx: CaseContext, reply: Reply, what: string, codes: readonly string[] = ["invalid_dpop_proof"]): void {
  if (reply.status >= 200 && reply.status < 300) ctx.fail(`${what}: the server issued tokens (RFC 9449 §4.3 says refuse it)`, reply);
  ctx.check(reply.status === 400, `${what}: expected 400, got ${reply.status}`, reply);
  const error = errorOf(reply);
  if (!codes.includes(String(error))) ctx.fail(`${what}: refused, but with error ${JSON.stringify(error)}, not ${codes.join(" or ")} (RFC 9449 §5)`, reply, true);
}

/** A DPoP-bound client_credentials token and the key it is bound to; the positive control of the later cases. */
async function boundToken(ctx: CaseContext, scope?: string): Promise<{ key: ProofKey; tokens: Tokens }> {
  const key = await proofKey();
  const htu = htuOf(ctx.target.token_url);
  const reply = await dpopToken(ctx, ccFields(ctx, scope), (nonce) => makeProof(ctx, key, { htu, nonce }));
  return { key, tokens: await ctx.control(() => expectDpopTokens(ctx, reply, "client_credentials with a DPoP proof")) };
}

/** The target's resource, for the cases at the resource; skips without one for client_credentials tokens. */
function resourceOf(ctx: CaseContext): { url: string; scope: string } {
  const r = ctx.target.resource;
  if (r !== undefined && r.client === "client_credentials") return { url: r.url, scope: r.scope };
  return ctx.skip("The target names no resource that takes the client_credentials client's token");
}

/** A request to the resource: `DPoP <token>` (or another scheme) with a proof, when given. */
function atResource(ctx: CaseContext, url: string, authorization: string, proof?: string): Promise<Reply> {
  const headers: Record<string, string> = { accept: "application/json", authorization };
  if (proof !== undefined) headers.dpop = proof;
  return ctx.http.send("GET", url, { headers });
}

/** A proof for a resource request with `token` (ath, htm GET, the resource's htu). */
const resourceProof = (ctx: CaseContext, key: ProofKey, url: string, token: string, claims: Partial<Claims> = {}) =>
  makeProof(ctx, key, { htu: htuOf(url), htm: "GET", ath: sha256(token), ...claims });

/** The public client's tokens from a code flow whose token request carries a proof of `key`. */
async function publicTokens(ctx: CaseContext, key: ProofKey, params: Fields = {}): Promise<Tokens> {
  const grant = await ctx.code("public", { params });
  const htu = htuOf(ctx.target.token_url);
  const fields: Fields = {
    grant_type: "authorization_code", client_id: grant.client.client_id, redirect_uri: grant.redirect_uri, code: grant.code, code_verifier: grant.verifier,
  };
  return expectDpopTokens(ctx, await dpopToken(ctx, fields, (nonce) => makeProof(ctx, key, { htu, nonce })), "the code redeemed with a DPoP proof");
}

export const cases: CaseDef[] = [
  {
    id: "DPOP-METADATA",
    title: "dpop_signing_alg_values_supported lists asymmetric JWS algorithms only",
    area: "dpop",
    ref: "RFC 9449 §5.1 (dpop_signing_alg_values_supported), §4.2 (an asymmetric alg; never none or a MAC)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    positive: true,
    async run(ctx) {
      const reply = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
      const algs = isObj(reply.json) ? reply.json.dpop_signing_alg_values_supported : undefined;
      ctx.check(Array.isArray(algs) && algs.length > 0, "dpop_signing_alg_values_supported is not a non-empty list", reply);
      const bad = (algs as unknown[]).filter((a) => typeof a !== "string" || !ASYMMETRIC.test(a));
      ctx.check(bad.length === 0, `dpop_signing_alg_values_supported lists ${JSON.stringify(bad)}: a proof must use an asymmetric algorithm`, reply);
    },
  },
  {
    id: "DPOP-TOKEN-BOUND",
    title: "A token request with a valid proof gets token_type DPoP, and a JWT access token carries cnf.jkt of the proof's key",
    area: "dpop",
    ref: "RFC 9449 §5 (token_type DPoP), §6.1 (cnf.jkt: the JWK SHA-256 thumbprint)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    positive: true,
    async run(ctx) {
      const { key, tokens } = await boundToken(ctx);
      const parts = tokens.access_token.split(".");
      if (parts.length !== 3) return "the access token is opaque: its binding is not visible to the suite";
      let claims: unknown;
      try {
        claims = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(parts[1]!.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0))));
      } catch {
        return "the access token is not a JWT: its binding is not visible to the suite";
      }
      const cnf = isObj(claims) ? claims.cnf : undefined;
      ctx.check(isObj(cnf) && cnf.jkt === key.jkt, `The JWT access token's cnf is ${JSON.stringify(cnf)}, not { "jkt": "${key.jkt}" } (RFC 9449 §6.1)`, tokens.reply);
      return undefined;
    },
  },
  {
    id: "DPOP-INTROSPECTION",
    title: "Introspection of a DPoP-bound token says token_type DPoP and names the key in cnf.jkt",
    area: "dpop",
    ref: "RFC 9449 §6.2 (cnf.jkt in the introspection response); RFC 7662 §2.2",
    level: "SHOULD",
    profiles: ALL,
    features: ["dpop", "introspection"],
    needs: ["DPOP-TOKEN-BOUND"],
    async run(ctx) {
      const { key, tokens } = await boundToken(ctx);
      const meta = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
      const endpoint = isObj(meta.json) ? meta.json.introspection_endpoint : undefined;
      if (typeof endpoint !== "string") return ctx.skip("The metadata names no introspection_endpoint");
      const client = ctx.target.clients.client_credentials;
      const form: [string, string][] = [["token", tokens.access_token], ["client_id", client.client_id]];
      if (client.client_secret !== undefined) form.push(["client_secret", client.client_secret]);
      const reply = await ctx.http.send("POST", endpoint, { form, headers: { accept: "application/json" } });
      const body = isObj(reply.json) ? reply.json : {};
      if (body.active !== true) return ctx.skip(`The client_credentials client may not introspect its own token here (${summary(reply)})`);
      ctx.check(isObj(body.cnf) && body.cnf.jkt === key.jkt, `cnf is ${JSON.stringify(body.cnf)}, not { "jkt": "${key.jkt}" }`, reply);
      ctx.check(typeof body.token_type !== "string" || body.token_type.toLowerCase() === "dpop", `token_type is ${JSON.stringify(body.token_type)}, not "DPoP"`, reply);
      return undefined;
    },
  },
  {
    id: "DPOP-PROOF-REPLAY",
    title: "A proof is used once: the same proof sent again is refused",
    area: "dpop",
    ref: "RFC 9449 §11.1 (servers should remember the jti of each proof for its window and refuse it when seen again)",
    level: "SHOULD",
    profiles: ALL,
    features: FEATURES,
    security: true,
    needs: ["DPOP-TOKEN-BOUND"],
    async run(ctx) {
      const key = await proofKey();
      const htu = htuOf(ctx.target.token_url);
      // The first request learns the nonce, if the server wants one; the proof under test carries it.
      const first = await dpopToken(ctx, ccFields(ctx), (nonce) => makeProof(ctx, key, { htu, nonce }));
      await ctx.control(() => expectDpopTokens(ctx, first, "client_credentials with a DPoP proof"));
      const once = await makeProof(ctx, key, { htu, nonce: first.headers.get("dpop-nonce") ?? undefined });
      await ctx.control(async () => expectDpopTokens(ctx, await ctx.token(ccFields(ctx), { headers: { dpop: once } }), "a fresh proof"));
      // §11.1 names no error code for a replay: any refusal will do.
      const again = await ctx.token(ccFields(ctx), { headers: { dpop: once } });
      if (again.status >= 200 && again.status < 300) ctx.fail("The same proof sent again got tokens", again);
      ctx.check(again.status === 400 && typeof errorOf(again) === "string", `The same proof sent again was answered ${summary(again)}, not a 400 error`, again);
    },
  },
  {
    id: "DPOP-PROOF-TARGET",
    title: "A proof for another method, another path or another origin is refused",
    area: "dpop",
    ref: "RFC 9449 §4.3 (check 8: htm; check 9: htu, without query and fragment)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    security: true,
    needs: ["DPOP-TOKEN-BOUND"],
    async run(ctx) {
      const key = await proofKey();
      const htu = new URL(htuOf(ctx.target.token_url));
      const elsewhere = [
        ["htm GET", { htu: htu.href, htm: "GET" }],
        ["another path", { htu: `${htu.origin}${htu.pathname.replace(/\/?$/, "-elsewhere")}` }],
        ["another origin", { htu: `https://dpop-elsewhere.example${htu.pathname}` }],
      ] as const;
      for (const [what, claims] of elsewhere) {
        expectRefused(ctx, await dpopToken(ctx, ccFields(ctx), (nonce) => makeProof(ctx, key, { ...claims, nonce })), `A proof with ${what}`);
      }
    },
  },
  {
    id: "DPOP-PROOF-IAT",
    title: "A proof made an hour ago, or an hour ahead, is refused",
    area: "dpop",
    ref: "RFC 9449 §4.3 (check 11: iat within an acceptable window), §11.1",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    security: true,
    needs: ["DPOP-TOKEN-BOUND"],
    async run(ctx) {
      const key = await proofKey();
      const htu = htuOf(ctx.target.token_url);
      for (const [what, age] of [["an hour old", 3600], ["an hour ahead", -3600]] as const) {
        // Without a nonce: a server nonce is another way to judge freshness (§4.3), so a server may ask for one.
        const reply = await dpopToken(ctx, ccFields(ctx), () => makeProof(ctx, key, { htu, age }));
        expectRefused(ctx, reply, `A proof ${what}`, ["invalid_dpop_proof", "use_dpop_nonce"]);
      }
    },
  },
  {
    id: "DPOP-PROOF-SIGNATURE",
    title: "A proof not signed by its jwk, signed with none or HS256, or carrying a private key, is refused",
    area: "dpop",
    ref: "RFC 9449 §4.3 (checks 5-7: an asymmetric alg, the signature by the jwk, no private key); RFC 8725 §3.1",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    security: true,
    needs: ["DPOP-TOKEN-BOUND"],
    async run(ctx) {
      const key = await proofKey();
      const other = await proofKey();
      const htu = htuOf(ctx.target.token_url);
      const claims = (nonce: string | undefined) => ({ jti: randomString(22), htm: "POST", htu, iat: Math.floor(ctx.serverNow() / 1000), ...(nonce ? { nonce } : {}) });
      const forged: [string, (nonce: string | undefined) => Promise<string>][] = [
        ["the jwk of another key", (nonce) => makeProof(ctx, key, { htu, nonce }, { jwk: other.jwk })],
        ["alg none", async (nonce) => `${b64({ alg: "none", typ: "dpop+jwt", jwk: key.jwk })}.${b64(claims(nonce))}.`],
        ["HS256 keyed with the jwk's x", async (nonce) => {
          const input = `${b64({ alg: "HS256", typ: "dpop+jwt", jwk: key.jwk })}.${b64(claims(nonce))}`;
          const hmac = await crypto.subtle.importKey("raw", new TextEncoder().encode(String(key.jwk.x)), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
          return `${input}.${b64url(new Uint8Array(await crypto.subtle.sign("HMAC", hmac, new TextEncoder().encode(input))))}`;
        }],
        ["the private key in the jwk", (nonce) => makeProof(ctx, key, { htu, nonce }, { jwk: { ...key.jwk, d: key.privateJwk.d } })],
      ];
      for (const [what, make] of forged) expectRefused(ctx, await dpopToken(ctx, ccFields(ctx), make), `A proof with ${what}`);
    },
  },
  {
    id: "DPOP-PROOF-TYP",
    title: "A proof typed JWT, or untyped, is refused",
    area: "dpop",
    ref: "RFC 9449 §4.3 (check 4: typ dpop+jwt); RFC 8725 §3.11",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    needs: ["DPOP-TOKEN-BOUND"],
    async run(ctx) {
      const key = await proofKey();
      const htu = htuOf(ctx.target.token_url);
      for (const [what, typ] of [["typ JWT", "JWT"], ["no typ", undefined]] as const) {
        expectRefused(ctx, await dpopToken(ctx, ccFields(ctx), (nonce) => makeProof(ctx, key, { htu, nonce }, { typ })), `A proof with ${what}`);
      }
    },
  },
  {
    id: "DPOP-NONCE",
    title: "A server that asks for a nonce sends it in DPoP-Nonce, and takes the retry that carries it",
    area: "dpop",
    ref: "RFC 9449 §8 (use_dpop_nonce with the DPoP-Nonce header; the client retries with it)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    needs: ["DPOP-TOKEN-BOUND"],
    async run(ctx) {
      const key = await proofKey();
      const htu = htuOf(ctx.target.token_url);
      const first = await ctx.token(ccFields(ctx), { headers: { dpop: await makeProof(ctx, key, { htu }) } });
      if (first.status === 200) return ctx.skip("The server took a proof without a nonce: it does not ask for nonces here");
      ctx.check(first.status === 400 && errorOf(first) === "use_dpop_nonce", `A proof without a nonce was answered ${summary(first)}`, first);
      const nonce = first.headers.get("dpop-nonce");
      ctx.check(nonce !== null && nonce !== "", "use_dpop_nonce came without a DPoP-Nonce header: the client cannot know the nonce", first);
      expectDpopTokens(ctx, await ctx.token(ccFields(ctx), { headers: { dpop: await makeProof(ctx, key, { htu, nonce: nonce! }) } }), "the retry with the nonce");
      return undefined;
    },
  },
  {
    id: "DPOP-REFRESH-BOUND",
    title: "A public client's refresh token is bound to its key: a refresh with another key is refused, with its own it works",
    area: "dpop",
    ref: "RFC 9449 §5 (refresh tokens issued to public clients are bound to the key)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    security: true,
    needs: ["DPOP-TOKEN-BOUND", CONTROL.refreshPublic],
    async run(ctx) {
      const key = await proofKey();
      const htu = htuOf(ctx.target.token_url);
      const refreshWith = (token: string, signer: ProofKey) =>
        dpopToken(ctx, { grant_type: "refresh_token", client_id: ctx.target.clients.public.client_id, refresh_token: token }, (nonce) => makeProof(ctx, signer, { htu, nonce }));
      const tokens = await ctx.control(() => publicTokens(ctx, key));
      const first = tokens.refresh_token ?? ctx.skip("The public client got no refresh token");
      // The control first: the client's own key refreshes (what a refused attempt does to the token is the server's call).
      const own = await ctx.control(async () => expectDpopTokens(ctx, await refreshWith(first, key), "the refresh with the client's own key"));
      const next = own.refresh_token ?? first;
      const stolen = await refreshWith(next, await proofKey());
      if (stolen.status >= 200 && stolen.status < 300) ctx.fail("The refresh token was used with a proof of another key", stolen);
      ctx.check(stolen.status === 400, `A refresh with another key's proof was answered ${stolen.status}, not 400`, stolen);
    },
  },
  {
    id: "DPOP-CODE-JKT",
    title: "A code requested with dpop_jkt goes only to a proof of that key",
    area: "dpop",
    ref: "RFC 9449 §10 (dpop_jkt binds the authorization code to the key)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    security: true,
    needs: ["DPOP-TOKEN-BOUND", CONTROL.codePublic],
    async run(ctx) {
      const key = await proofKey();
      const htu = htuOf(ctx.target.token_url);
      const redeemWith = async (signer: ProofKey) => {
        const grant = await ctx.code("public", { params: { dpop_jkt: key.jkt } });
        const fields: Fields = {
          grant_type: "authorization_code", client_id: grant.client.client_id, redirect_uri: grant.redirect_uri, code: grant.code, code_verifier: grant.verifier,
        };
        return dpopToken(ctx, fields, (nonce) => makeProof(ctx, signer, { htu, nonce }));
      };
      // Two codes: the control redeems one with the key dpop_jkt named; the other goes to another key.
      await ctx.control(async () => expectDpopTokens(ctx, await redeemWith(key), "the redemption with the key dpop_jkt named"));
      const stolen = await redeemWith(await proofKey());
      if (stolen.status >= 200 && stolen.status < 300) ctx.fail("The code bound with dpop_jkt was redeemed with a proof of another key", stolen);
      ctx.check(stolen.status === 400, `The redemption with another key's proof was answered ${stolen.status}, not 400`, stolen);
    },
  },
  {
    id: "DPOP-RESOURCE",
    title: "The resource takes a DPoP-bound token with the DPoP scheme and a proof of its key",
    area: "dpop",
    ref: "RFC 9449 §7.1 (the DPoP scheme, the proof with ath)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    positive: true,
    async run(ctx) {
      const { url, scope } = resourceOf(ctx);
      const { key, tokens } = await boundToken(ctx, scope);
      const reply = await atResource(ctx, url, `DPoP ${tokens.access_token}`, await resourceProof(ctx, key, url, tokens.access_token));
      ctx.check(reply.status >= 200 && reply.status < 300, `The bound token with its proof was answered ${reply.status}`, reply);
    },
  },
  {
    id: "DPOP-RESOURCE-AS-BEARER",
    title: "The resource refuses a DPoP-bound token sent as a Bearer token",
    area: "dpop",
    ref: "RFC 9449 §7.2 (a DPoP-bound token must not be accepted as a bearer token)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    security: true,
    needs: ["DPOP-RESOURCE"],
    async run(ctx) {
      const { url, scope } = resourceOf(ctx);
      const { key, tokens } = await boundToken(ctx, scope);
      for (const [what, proof] of [["without a proof", undefined], ["with a proof", await resourceProof(ctx, key, url, tokens.access_token)]] as const) {
        const reply = await atResource(ctx, url, `Bearer ${tokens.access_token}`, proof);
        ctx.check(reply.status === 401, `The bound token as a Bearer token ${what} was answered ${reply.status}, not 401`, reply);
      }
    },
  },
  {
    id: "DPOP-RESOURCE-PROOF",
    title: "The resource refuses the bound token without a proof, with a proof of another key, for another URI, or without its ath",
    area: "dpop",
    ref: "RFC 9449 §7.1 (check the proof per §4.3, its ath, and that its key is the token's)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    security: true,
    needs: ["DPOP-RESOURCE"],
    async run(ctx) {
      const { url, scope } = resourceOf(ctx);
      const { key, tokens } = await boundToken(ctx, scope);
      const token = tokens.access_token;
      const thief = await proofKey();
      const broken: [string, string | undefined][] = [
        ["no proof", undefined],
        ["a proof of another key", await resourceProof(ctx, thief, url, token)],
        ["a proof for another path", await makeProof(ctx, key, { htu: `${htuOf(url)}-elsewhere`, htm: "GET", ath: sha256(token) })],
        ["a proof without ath", await resourceProof(ctx, key, url, token, { ath: undefined })],
        ["a proof whose ath is another token's", await resourceProof(ctx, key, url, token, { ath: sha256(`${token}x`) })],
      ];
      for (const [what, proof] of broken) {
        const reply = await atResource(ctx, url, `DPoP ${token}`, proof);
        ctx.check(reply.status === 401, `The bound token with ${what} was answered ${reply.status}, not 401`, reply);
      }
    },
  },
  {
    id: "DPOP-RESOURCE-REPLAY",
    title: "The resource refuses a proof it has seen before",
    area: "dpop",
    ref: "RFC 9449 §11.1 (a resource server should keep the jti of proofs within their window)",
    level: "SHOULD",
    profiles: ALL,
    features: FEATURES,
    needs: ["DPOP-RESOURCE"],
    async run(ctx) {
      const { url, scope } = resourceOf(ctx);
      const { key, tokens } = await boundToken(ctx, scope);
      const proof = await resourceProof(ctx, key, url, tokens.access_token);
      const first = await atResource(ctx, url, `DPoP ${tokens.access_token}`, proof);
      await ctx.control(() => ctx.check(first.status >= 200 && first.status < 300, `The first use was answered ${first.status}`, first));
      const again = await atResource(ctx, url, `DPoP ${tokens.access_token}`, proof);
      ctx.check(again.status === 401, `The same proof sent again was answered ${again.status}, not 401`, again);
    },
  },
  {
    id: "DPOP-RESOURCE-CHALLENGE",
    title: "The resource's 401 names the DPoP scheme and its algs, with the error on the scheme the request used",
    area: "dpop",
    ref: "RFC 9449 §7.1 (WWW-Authenticate: DPoP with algs; error invalid_token or invalid_dpop_proof)",
    level: "SHOULD",
    profiles: ALL,
    features: FEATURES,
    needs: ["DPOP-RESOURCE"],
    async run(ctx) {
      const { url, scope } = resourceOf(ctx);
      const { tokens } = await boundToken(ctx, scope);
      const reply = await atResource(ctx, url, `DPoP ${tokens.access_token}`);
      const header = reply.headers.get("www-authenticate") ?? "";
      const dpop = /(?:^|,)\s*DPoP\b(.*)$/i.exec(header)?.[1];
      if (dpop === undefined) return ctx.fail(`The 401 names no DPoP challenge: ${JSON.stringify(header)}`, reply);
      ctx.check(/\balgs\s*=\s*"[^"]+"/.test(dpop), `The DPoP challenge has no algs: ${JSON.stringify(header)}`, reply);
      ctx.check(/\berror\s*=\s*"?(invalid_dpop_proof|invalid_token)"?/.test(dpop), `The DPoP challenge does not carry the error: ${JSON.stringify(header)}`, reply);
      return undefined;
    },
  },
];
