/**
 * DPoP at a protected resource (RFC 9449 §7): which scheme a request used, whether the token's binding fits it
 * (§7.1: a DPoP-bound token comes with the DPoP scheme and a proof of its key; §7.2: never as a Bearer token),
 * the proof's checks with `ath`, single use of its `jti`, and the `WWW-Authenticate` challenges of §7.1 beside
 * RFC 6750's. `server.protect` and `protectedResource` share it.
 *
 * @module
 */
import { presentedToken } from "../bearer.ts";
import { OAuthError } from "../errors.ts";
import type { JwsAlgorithm } from "../jose/algorithms.ts";
import { DPOP_ALGORITHMS, normalizedHtu, proofHeader, replayExpiry, replayKey, verifyProof } from "./dpop_proof.ts";

/** How a protected resource takes DPoP-bound tokens. */
export interface ResourceDpopOptions {
  /** Refuse Bearer tokens: every token must be DPoP-bound and come with a proof. Default false. */
  required?: boolean;
  /** The algorithms a proof may use (`algs` of the challenge). Default ES256, ES384, EdDSA, RS256, PS256. */
  algorithms?: readonly JwsAlgorithm[];
  /**
   * Where the `jti`s of proofs are remembered so that each is used once (RFC 9449 §11.1): any store's
   * `markOnce` (share one between the instances of a resource). Default: this process's memory, which holds
   * the last 100,000 proofs; a replay at another instance then goes unseen.
   */
  replay?: { markOnce(key: string, expiresAt: number, now: number): Promise<boolean> };
}

/** A resolved policy: DPoP on, with its algorithms and replay store. */
export interface ResourceDpop {
  readonly required: boolean;
  readonly algorithms: readonly JwsAlgorithm[];
  markOnce(key: string, expiresAt: number, now: number): Promise<boolean>;
}

/** The scheme of a presented token. */
export type Scheme = "Bearer" | "DPoP";

/** What an `Authorization` header presents, for the schemes the resource takes. */
export type Presentation =
  | { readonly kind: "absent" }
  | { readonly kind: "malformed"; readonly scheme: Scheme }
  | { readonly kind: "token"; readonly scheme: Scheme; readonly token: string };

/** Resolves {@link ResourceDpopOptions}; `false` turns DPoP off (Bearer only). Throws `TypeError` for a bad one. */
export function resourceDpop(options: ResourceDpopOptions | false | undefined): ResourceDpop | null {
  if (options === false) return null;
  const value = options ?? {};
  if (typeof value !== "object" || value === null) throw new TypeError('Cannot protect resource: "dpop" must be an object or false');
  const algorithms = value.algorithms ?? DPOP_ALGORITHMS;
  if (!Array.isArray(algorithms) || algorithms.length === 0 || !algorithms.every((a) => DPOP_ALGORITHMS.includes(a))) {
    throw new TypeError(`Cannot protect resource: "dpop.algorithms" must list some of ${DPOP_ALGORITHMS.join(", ")}`);
  }
  const replay = value.replay;
  return {
    required: value.required === true,
    algorithms: [...algorithms],
    markOnce: replay === undefined ? memoryReplay() : (key, expiresAt, now) => replay.markOnce(key, expiresAt, now),
  };
}

/** The token an `Authorization` header presents: DPoP first (when taken), then Bearer (unless DPoP is required). */
export function presentation(authorization: string | null, dpop: ResourceDpop | null): Presentation {
  if (dpop !== null) {
    const presented = presentedToken(authorization, "DPoP");
    if (presented.kind === "token") return { kind: "token", scheme: "DPoP", token: presented.token };
    if (presented.kind === "malformed") return { kind: "malformed", scheme: "DPoP" };
    if (dpop.required) return { kind: "absent" };
  }
  const presented = presentedToken(authorization);
  if (presented.kind === "token") return { kind: "token", scheme: "Bearer", token: presented.token };
  return presented.kind === "malformed" ? { kind: "malformed", scheme: "Bearer" } : { kind: "absent" };
}

/** A request as the proof check sees it. */
export interface ResourceRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
}

const invalidToken = (description: string) => new OAuthError("invalid_token", { description });
const invalidProof = (description: string) => new OAuthError("invalid_dpop_proof", { description, status: 401 });

/**
 * Checks that a looked-up token fits the way it was presented (RFC 9449 §7.1, §7.2): a token bound to a key
 * (`jkt`) only with the DPoP scheme and a valid, unused proof of that key for this request, whose `htu` names
 * `origin` and the request's path; an unbound token only as Bearer. Throws `OAuthError` without headers: the
 * caller adds its challenge for `scheme`.
 */
export async function checkBinding(
  presented: { scheme: Scheme; token: string },
  jkt: string | undefined,
  request: ResourceRequest | undefined,
  origin: string,
  dpop: ResourceDpop | null,
  now: number,
): Promise<void> {
  if (presented.scheme === "Bearer") {
    // §7.2: a stolen bound token must not work as a bearer one.
    if (jkt !== undefined) throw invalidToken("The access token is bound to a DPoP key: present it with the DPoP scheme and a proof");
    return;
  }
  if (jkt === undefined) throw invalidToken("The access token is not DPoP-bound: present it as a Bearer token");
  if (request === undefined || dpop === null) throw invalidProof("A DPoP proof is required with this token");
  const header = proofHeader(request.headers);
  if (header === null) throw invalidProof("A DPoP proof is required with this token");
  // The resource's configured origin, never the request's Host: a proof made for another server, replayed here
  // with that server's Host header, must not match.
  const url = normalizedHtu(origin + new URL(request.url).pathname);
  const proof = await verifyProof(header, { method: request.method, url: url ?? "", accessToken: presented.token, algorithms: dpop.algorithms, now })
    .catch((error: unknown) => {
      throw error instanceof OAuthError ? invalidProof(error.description ?? "The DPoP proof is invalid") : error;
    });
  // RFC 9449 §7.1's example answer to a proof of another key.
  if (proof.jkt !== jkt) throw invalidToken("Invalid DPoP key binding");
  if (!(await dpop.markOnce(replayKey(proof), replayExpiry(proof), now))) throw invalidProof("The DPoP proof was already used");
}

/** Quotes a challenge parameter's value (RFC 9110 §5.6.4); our values hold no quote or backslash. */
export const quoted = (value: string): string => `"${value.replace(/["\\]/g, "")}"`;

/**
 * The `WWW-Authenticate` value: the Bearer challenge (when Bearer is taken) and the DPoP one with its `algs`
 * (when DPoP is), each with the resource's own parameters (`realm`, `resource_metadata`); `extra` (the error,
 * the scope) goes on the challenge of the scheme the request used (RFC 9449 §7.1, RFC 6750 §3).
 */
export function challenge(
  base: readonly string[],
  dpop: ResourceDpop | null,
  extra: { scheme: Scheme | undefined; params: readonly string[] } = { scheme: undefined, params: [] },
): string {
  const target: Scheme = extra.scheme ?? (dpop?.required ? "DPoP" : "Bearer");
  const one = (scheme: Scheme, own: readonly string[]) => {
    const params = [...base, ...(scheme === target ? extra.params : []), ...own];
    return params.length === 0 ? scheme : `${scheme} ${params.join(", ")}`;
  };
  const parts: string[] = [];
  if (!dpop?.required) parts.push(one("Bearer", []));
  if (dpop !== null) parts.push(one("DPoP", [`algs=${quoted(dpop.algorithms.join(" "))}`]));
  return parts.join(", ");
}

/** Most proofs remembered by {@link memoryReplay}. */
const MEMORY_REPLAY_SIZE = 100_000;

/**
 * `markOnce` in this process's memory, in two generations: a full generation becomes the previous one, and the
 * one before it is dropped. A `jti` is remembered until its mark expires or two generations have filled since.
 */
export function memoryReplay(size: number = MEMORY_REPLAY_SIZE): ResourceDpop["markOnce"] {
  let current = new Map<string, number>();
  let previous = new Map<string, number>();
  return (key, expiresAt, now) => {
    const until = current.get(key) ?? previous.get(key);
    if (until !== undefined && now < until) return Promise.resolve(false);
    if (current.size >= size / 2) [previous, current] = [current, new Map()];
    current.set(key, expiresAt);
    return Promise.resolve(true);
  };
}

/**
 * The key a `cnf` claim (RFC 7800 §3.1) confirms: undefined without one, the `jkt` (RFC 9449 §6), or null for any
 * other confirmation method, which no guard here can check.
 */
export function confirmedKey(cnf: unknown): string | undefined | null {
  if (cnf === undefined) return undefined;
  if (typeof cnf !== "object" || cnf === null || Array.isArray(cnf)) return null;
  const names = Object.keys(cnf);
  const jkt = (cnf as { jkt?: unknown }).jkt;
  return names.length === 1 && typeof jkt === "string" && jkt !== "" ? jkt : null;
}
