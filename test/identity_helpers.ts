/**
 * Fixtures for the machine-identity tests (private_key_jwt, the jwt-bearer grant, token exchange): keys and
 * assertions made with `jose` (a devDependency), never with lib/jose, so a bug there cannot hide itself by
 * signing and verifying on both sides; forged tokens (alg none, HS256 keyed with the public key) built by hand.
 */
import * as jose from "jose";
import { ISSUER, TOKEN_URL } from "./helpers.ts";

export const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
export const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
export const CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
export const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
export const JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt";

/** A signing key made by jose: the private key, its public JWK (with kid and alg), and a set holding it. */
export interface TestKey {
  alg: string;
  kid: string;
  privateKey: CryptoKey;
  publicJwk: jose.JWK;
  jwks: { keys: jose.JWK[] };
}

let counter = 0;

/** A fresh key pair for `alg`. */
export async function testKey(alg = "ES256", kid = `k${++counter}-${Math.random().toString(36).slice(2, 8)}`): Promise<TestKey> {
  const { publicKey, privateKey } = await jose.generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await jose.exportJWK(publicKey)), kid, alg, use: "sig" };
  return { alg, kid, privateKey: privateKey as CryptoKey, publicJwk, jwks: { keys: [publicJwk] } };
}

/** Seconds since the epoch of a clock in ms. */
export const seconds = (ms: number): number => Math.floor(ms / 1000);

/** Signs `claims` with `key` (header alg, kid, and `header`'s members; `typ: undefined` leaves it out). */
export function sign(key: TestKey, claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  const protectedHeader: jose.JWTHeaderParameters = { alg: key.alg, kid: key.kid };
  for (const [name, value] of Object.entries(header)) if (value !== undefined) protectedHeader[name] = value;
  return new jose.SignJWT(claims as jose.JWTPayload).setProtectedHeader(protectedHeader).sign(key.privateKey);
}

/** A client assertion of `clientId` (RFC 7523 §3), valid at `now` (ms) for five minutes; `claims` override. */
export function clientAssertion(key: TestKey, clientId: string, now: number, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const iat = seconds(now);
  return sign(key, { iss: clientId, sub: clientId, aud: ISSUER, iat, exp: iat + 300, jti: crypto.randomUUID(), ...claims }, header);
}

/** The form fields of a client assertion. */
export function assertionFields(assertion: string): Record<string, string> {
  return { client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: assertion };
}

/** An ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant §3) issued by `issuer` for `clientId`. */
export function idJag(key: TestKey, issuer: string, clientId: string, now: number, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const iat = seconds(now);
  return sign(key, {
    iss: issuer, sub: "idp-user-1", aud: ISSUER, client_id: clientId, jti: crypto.randomUUID(), iat, exp: iat + 300,
    email: "alice@example.com", ...claims,
  }, { typ: "oauth-id-jag+jwt", ...header });
}

/** A workload's platform JWT (a Kubernetes service account token's shape: no typ, no jti). */
export function workloadJwt(key: TestKey, issuer: string, now: number, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const iat = seconds(now);
  return sign(key, { iss: issuer, sub: "system:serviceaccount:prod:billing", aud: ISSUER, iat, exp: iat + 3600, ...claims }, header);
}

const b64 = (value: unknown): string => jose.base64url.encode(JSON.stringify(value));

/** The token re-made with `alg: none` and an empty signature (RFC 7519 §6). */
export function unsigned(token: string): string {
  const [header, payload] = token.split(".");
  return `${b64({ ...jose.decodeProtectedHeader(`${header}.${payload}.x`), alg: "none" })}.${payload}.`;
}

/** The token re-signed with HS256 keyed by `secret` (the classic confusion: a public key used as an HMAC key). */
export async function hmacSigned(token: string, secret: string): Promise<string> {
  const [header, payload] = token.split(".");
  const claims = JSON.parse(new TextDecoder().decode(jose.base64url.decode(payload!)));
  const kid = (JSON.parse(new TextDecoder().decode(jose.base64url.decode(header!))) as { kid?: string }).kid;
  return new jose.SignJWT(claims).setProtectedHeader({ alg: "HS256", ...(kid ? { kid } : {}) }).sign(new TextEncoder().encode(secret));
}

export { ISSUER, TOKEN_URL };
