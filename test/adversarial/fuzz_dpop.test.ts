// DPoP proofs (RFC 9449 §4.3, §7.1) fuzzed through `fetch` and `server.protect`: valid proofs with random sets of
// changes, each known either to keep the proof valid (an htu with its default port, a query or a fragment, an
// unknown claim or header) or to break it (htm, htu, iat, jti, typ, alg, jwk, signature, ath, the scheme), and
// malformed headers. Properties: never a 5xx or an internal detail; a token (or the handler) only when no change
// broke the proof, bound to the proof's key; otherwise 400 invalid_dpop_proof at the token endpoint and a 401
// with a DPoP challenge at the resource.
import fc from "fast-check";
import { expect, test } from "vitest";
import { ath, dpopToken, proof, type ProofClaims, type ProofKey, proofKey, TOKEN_ENDPOINT } from "../dpop_helpers.ts";
import { fixture, ISSUER, SECRETS } from "../helpers.ts";
import { envInt, figures } from "./support.ts";

const RUNS = Math.max(50, Math.round(envInt("FUZZ_RUNS", 20_480) / 80));
const STACK = /\n\s+at |TypeError|ReferenceError|node_modules|\.ts:\d+/;
const CC = { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" };
const API = `${ISSUER}/api/export`;

/** What a change does to a proof: its claims, its protected header, or the signed JWS. */
interface Change {
  name: string;
  breaks: boolean;
  claims?: (claims: Record<string, unknown>, now: number) => void;
  header?: (header: Record<string, unknown>, key: ProofKey, other: ProofKey) => void;
  jws?: (jws: string) => string;
}

/** Moves a URL's path and origin as a change of `htu` would. */
const htuVariant = (url: string, edit: (u: URL) => string) => edit(new URL(url));

/** Changes that apply wherever a proof goes; `target` is the URL the proof is for. */
const changes = (target: string): Change[] => [
  // Kept valid: §4.3's htu is compared without query and fragment, after RFC 3986 normalisation.
  { name: "htu with the default port", breaks: false, claims: (c) => void (c.htu = htuVariant(target, (u) => `${u.protocol}//${u.hostname}:443${u.pathname}`)) },
  { name: "htu with a query", breaks: false, claims: (c) => void (c.htu = `${target}?x=1`) },
  { name: "htu with a fragment", breaks: false, claims: (c) => void (c.htu = `${target}#f`) },
  { name: "htu with an upper-case host", breaks: false, claims: (c) => void (c.htu = htuVariant(target, (u) => `${u.protocol}//${u.hostname.toUpperCase()}${u.pathname}`)) },
  { name: "an unknown claim", breaks: false, claims: (c) => void (c.extra = { nested: [1, "x"] }) },
  { name: "an unknown header parameter", breaks: false, header: (h) => void (h.kid = "some-kid") },
  // Broken.
  { name: "htm in lower case", breaks: true, claims: (c) => void (c.htm = String(c.htm).toLowerCase()) },
  // A method that neither endpoint uses, so that no pair of changes can bring htm back to the right one.
  { name: "another htm", breaks: true, claims: (c) => void (c.htm = "PATCH") },
  { name: "htu of another path", breaks: true, claims: (c) => void (c.htu = `${target}/more`) },
  { name: "htu of another origin", breaks: true, claims: (c) => void (c.htu = htuVariant(target, (u) => `https://elsewhere.example${u.pathname}`)) },
  { name: "htu of http", breaks: true, claims: (c) => void (c.htu = htuVariant(target, (u) => `http://${u.host}${u.pathname}`)) },
  { name: "htu not a URL", breaks: true, claims: (c) => void (c.htu = "not a url") },
  { name: "htu a number", breaks: true, claims: (c) => void (c.htu = 42) },
  { name: "no htu", breaks: true, claims: (c) => void delete c.htu },
  { name: "iat too old", breaks: true, claims: (c, now) => void (c.iat = Math.floor(now / 1000) - 400) },
  { name: "iat ahead", breaks: true, claims: (c, now) => void (c.iat = Math.floor(now / 1000) + 600) },
  { name: "iat a string", breaks: true, claims: (c) => void (c.iat = String(c.iat)) },
  { name: "no iat", breaks: true, claims: (c) => void delete c.iat },
  { name: "no jti", breaks: true, claims: (c) => void delete c.jti },
  { name: "an empty jti", breaks: true, claims: (c) => void (c.jti = "") },
  { name: "a jti of 300 characters", breaks: true, claims: (c) => void (c.jti = "j".repeat(300)) },
  { name: "a numeric jti", breaks: true, claims: (c) => void (c.jti = 7) },
  { name: "typ JWT", breaks: true, header: (h) => void (h.typ = "JWT") },
  { name: "no typ", breaks: true, jws: (jws) => reheader(jws, (h) => void delete h.typ) },
  { name: "alg of another family", breaks: true, jws: (jws) => reheader(jws, (h) => void (h.alg = "RS256")) },
  { name: "alg none", breaks: true, jws: (jws) => `${reheader(jws, (h) => void (h.alg = "none")).split(".").slice(0, 2).join(".")}.` },
  { name: "the jwk of another key", breaks: true, header: (h, _k, other) => void (h.jwk = other.jwk) },
  { name: "no jwk", breaks: true, jws: (jws) => reheader(jws, (h) => void delete h.jwk) },
  { name: "a jwk that is a string", breaks: true, header: (h) => void (h.jwk = "key") },
  { name: "a jwk with a private member", breaks: true, header: (h) => void (h.jwk = { ...(h.jwk as object), d: "AAAA" }) },
  { name: "a jwk on another curve", breaks: true, header: (h) => void (h.jwk = { ...(h.jwk as object), crv: "P-384" }) },
  { name: "a changed signature", breaks: true, jws: (jws) => `${jws.slice(0, -6)}${jws.slice(-6) === "AAAAAA" ? "BBBBBB" : "AAAAAA"}` },
  { name: "no signature", breaks: true, jws: (jws) => jws.slice(0, jws.lastIndexOf(".") + 1) },
  { name: "a changed payload", breaks: true, jws: (jws) => { const [h, p, s] = jws.split("."); return `${h}.${p}e30.${s}`; } },
];

/** A proof for `target` made with `key`, then every change in `picked` applied. */
async function changedProof(key: ProofKey, other: ProofKey, picked: Change[], claims: Record<string, unknown>, now: number): Promise<string> {
  const payload: Record<string, unknown> = { jti: crypto.randomUUID(), iat: Math.floor(now / 1000), ...claims };
  const header: Record<string, unknown> = { alg: key.alg, typ: "dpop+jwt", jwk: key.jwk };
  for (const change of picked) {
    change.claims?.(payload, now);
    change.header?.(header, key, other);
  }
  // The helper signs with `key` whatever the header says: a header naming another alg or key is the attack.
  // A claim a change deleted goes as undefined, which the helper leaves out rather than defaulting.
  const removed = Object.fromEntries(["jti", "htm", "htu", "iat"].filter((c) => !(c in payload)).map((c) => [c, undefined]));
  let jws = await proof(key, { ...payload, ...removed } as ProofClaims, header);
  for (const change of picked) if (change.jws) jws = change.jws(jws);
  return jws;
}

/**
 * A signed proof with its header edited afterwards: what jose will not sign (an alg that does not fit the key, no
 * typ). The signature then covers another header, so the server must refuse it for one reason or another.
 */
function reheader(jws: string, edit: (header: Record<string, unknown>) => void): string {
  const [h, p, s] = jws.split(".");
  const header = JSON.parse(atob(h!.replace(/-/g, "+").replace(/_/g, "/"))) as Record<string, unknown>;
  edit(header);
  return `${btoa(JSON.stringify(header)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")}.${p}.${s}`;
}

const pick = (pool: Change[]) => fc.subarray(pool, { maxLength: 3 });

test("token endpoint: a changed proof gets a DPoP token only when no change broke it; otherwise 400 invalid_dpop_proof, never a 5xx", async () => {
  const f = await fixture({ dpop: { enabled: true } });
  const [key, other] = [await proofKey(), await proofKey()];
  const pool = changes(TOKEN_ENDPOINT);
  let issued = 0;
  await fc.assert(fc.asyncProperty(pick(pool), async (picked) => {
    const jws = await changedProof(key, other, picked, { htm: "POST", htu: TOKEN_ENDPOINT }, f.clock.now);
    const response = await dpopToken(f.server, CC, jws);
    const text = await response.text();
    expect(text).not.toMatch(STACK);
    const body = JSON.parse(text) as Record<string, unknown>;
    const names = picked.map((c) => c.name).join(", ");
    if (picked.some((c) => c.breaks)) {
      expect([response.status, body.error, body.access_token], names).toEqual([400, "invalid_dpop_proof", undefined]);
    } else {
      expect([response.status, body.token_type], names).toEqual([200, "DPoP"]);
      expect((await f.server.tokenInfo(body.access_token as string))?.jkt).toBe(key.jkt);
      issued++;
    }
  }), { numRuns: RUNS });
  expect(issued).toBeGreaterThan(0);
  figures(`fuzz_dpop: ${RUNS} changed proofs at the token endpoint, ${issued} valid ones issued, 0 failures`);
}, 120_000);

test("token endpoint: a malformed DPoP header is 400 invalid_dpop_proof, never a token or a 5xx", async () => {
  const f = await fixture({ dpop: { enabled: true } });
  const key = await proofKey();
  const valid = await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now });
  const segment = fc.string({ unit: fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), maxLength: 60 });
  const header = fc.oneof(
    fc.string({ minLength: 1, maxLength: 200 }).filter((s) => s.trim() !== ""),
    fc.tuple(segment, segment, segment).map((parts) => parts.join(".")),
    fc.constant(`${valid}, ${valid}`),
    fc.constant(valid.split(".").reverse().join(".")),
    fc.constant(`${valid}.${valid}`),
    fc.constant("x".repeat(10_000)),
    fc.integer({ min: 1, max: valid.length - 1 }).map((n) => `${valid.slice(0, n)} ${valid.slice(n)}`),
    fc.constant(btoa(JSON.stringify({ alg: "none" }))),
  );
  await fc.assert(fc.asyncProperty(header, async (value) => {
    const response = await dpopToken(f.server, CC, value);
    const text = await response.text();
    expect(text).not.toMatch(STACK);
    expect([response.status, (JSON.parse(text) as Record<string, unknown>).error], value.slice(0, 80)).toEqual([400, "invalid_dpop_proof"]);
  }), { numRuns: RUNS });
}, 120_000);

test("resource: a bound token reaches the handler only with the DPoP scheme and an unbroken proof of its key; otherwise a 401 with a DPoP challenge", async () => {
  const f = await fixture({ dpop: { enabled: true } });
  const [key, other] = [await proofKey(), await proofKey()];
  const response = await dpopToken(f.server, CC, await proof(key, { htu: TOKEN_ENDPOINT, at: f.clock.now }));
  const token = ((await response.json()) as { access_token: string }).access_token;
  const handler = f.server.protect("export", (_r, info) => Response.json({ jkt: info.jkt }));
  const pool: Change[] = [
    ...changes(API),
    { name: "no ath", breaks: true, claims: (c) => void delete c.ath },
    { name: "the ath of another token", breaks: true, claims: (c) => void (c.ath = String(c.ath).split("").reverse().join("")) },
  ];
  const scheme = fc.constantFrom(["DPoP", false], ["Bearer", true], ["dpop", false]) as fc.Arbitrary<[string, boolean]>;
  let passed = 0;
  await fc.assert(fc.asyncProperty(pick(pool), scheme, async (picked, [name, schemeBreaks]) => {
    const jws = await changedProof(key, other, picked, { htm: "GET", htu: API, ath: await ath(token) }, f.clock.now);
    const answer = await handler(new Request(API, { headers: { authorization: `${name} ${token}`, dpop: jws } }));
    const text = await answer.text();
    expect(text).not.toMatch(STACK);
    const what = `${name}: ${picked.map((c) => c.name).join(", ")}`;
    if (schemeBreaks || picked.some((c) => c.breaks)) {
      expect(answer.status, what).toBe(401);
      expect(answer.headers.get("www-authenticate"), what).toMatch(/(^|, )DPoP /);
    } else {
      expect([answer.status, text], what).toEqual([200, JSON.stringify({ jkt: key.jkt })]);
      passed++;
    }
  }), { numRuns: RUNS });
  expect(passed).toBeGreaterThan(0);
  figures(`fuzz_dpop: ${RUNS} changed proofs at a resource, ${passed} valid ones passed, 0 failures`);
}, 120_000);
