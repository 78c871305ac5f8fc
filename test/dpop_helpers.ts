/**
 * DPoP proofs for the tests (RFC 9449 §4.2), made with `jose` rather than the server's own JOSE code, so a proof
 * the tests send is what another client library would send.
 */
import * as jose from "jose";
import type { AuthorizationServer } from "../mod.ts";
import { ISSUER } from "./helpers.ts";

/** A client's DPoP key pair, its public JWK and its thumbprint (`jkt`). */
export interface ProofKey {
  alg: string;
  privateKey: CryptoKey;
  jwk: Record<string, unknown>;
  jkt: string;
}

/** A fresh key pair for `alg`. */
export async function proofKey(alg = "ES256"): Promise<ProofKey> {
  const { privateKey, publicKey } = await jose.generateKeyPair(alg, { extractable: true });
  const jwk = await jose.exportJWK(publicKey);
  return { alg, privateKey, jwk: jwk as Record<string, unknown>, jkt: await jose.calculateJwkThumbprint(jwk) };
}

/** The SHA-256 of an access token, base64url: the proof's `ath` (RFC 9449 §4.2). */
export async function ath(token: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
  return jose.base64url.encode(digest);
}

/** What a proof says; `iat` in milliseconds (the fixture's clock), the other claims as they go on the wire. */
export interface ProofClaims {
  htu: string;
  /** Default POST; undefined leaves it out (as for every claim). */
  htm?: string | undefined;
  /** Milliseconds; default now. */
  at?: number;
  /** Default a random UUID. */
  jti?: string | undefined;
  ath?: string | undefined;
  nonce?: string | undefined;
  [claim: string]: unknown;
}

/** A proof signed with `key`; `header` adds to or replaces the protected header (`typ`, `jwk`, `alg`). */
export async function proof(key: ProofKey, claims: ProofClaims, header: Record<string, unknown> = {}): Promise<string> {
  const { at, ...rest } = claims;
  const payload: Record<string, unknown> = { jti: crypto.randomUUID(), htm: "POST", iat: Math.floor((at ?? Date.now()) / 1000), ...rest };
  for (const name of Object.keys(payload)) if (payload[name] === undefined) delete payload[name];
  return new jose.SignJWT(payload as jose.JWTPayload).setProtectedHeader({ alg: key.alg, typ: "dpop+jwt", jwk: key.jwk, ...header } as jose.JWTHeaderParameters)
    .sign(key.privateKey);
}

/** The fixture's token endpoint at the clean path, and the URL a proof for it names. */
export const TOKEN_ENDPOINT: string = `${ISSUER}/token`;

/** POSTs a form to the clean token endpoint with a `DPoP` header (none when `dpop` is undefined). */
export function dpopToken(server: AuthorizationServer, fields: Record<string, string>, dpop: string | undefined, headers: Record<string, string> = {}): Promise<Response> {
  return server.fetch(new Request(TOKEN_ENDPOINT, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(dpop === undefined ? {} : { dpop }), ...headers },
    body: new URLSearchParams(fields).toString(),
  }));
}

/** The claims of a JWT, unverified (to read `cnf`). */
export function claimsOf(jwt: string): Record<string, unknown> {
  return jose.decodeJwt(jwt) as Record<string, unknown>;
}
