/**
 * DPoP (RFC 9449): access tokens bound to a key the client holds, so a stolen token is no credential. The token
 * endpoint checks a `DPoP` proof on every grant (§4.3), marks its `jti` used in the store (every instance sees
 * it), issues `token_type: "DPoP"` and binds the access token to the key's thumbprint (`cnf.jkt` in JWTs, `jkt`
 * in the store and introspection, §6); public clients' refresh tokens are bound too (§5), and a code requested
 * with `dpop_jkt` only goes to that key (§10). Optional server nonces (§8) are stateless. Off by default.
 *
 * @module
 */
import { AdmissionError } from "../core/admission.ts";
import type { Exchange } from "../core/exchange.ts";
import { defineFeature, type Feature } from "../core/feature.ts";
import { timingSafeEqual } from "../crypto.ts";
import { OAuthError } from "../errors.ts";
import { pathOf } from "../http.ts";
import type { JwsAlgorithm } from "../jose/algorithms.ts";
import type { ClientRecord, Storage } from "../storage/types.ts";
import { type DpopNonces, dpopNonces } from "./dpop_nonce.ts";
import { DPOP_ALGORITHMS, normalizedHtu, proofHeader, replayExpiry, replayKey, verifyProof } from "./dpop_proof.ts";

/** The DPoP options. */
export interface DpopOptions {
  /** Check DPoP proofs at the token endpoint and bind tokens to their keys. Default false. */
  enabled?: boolean;
  /**
   * Every proof at the token endpoint must carry a nonce this server handed out (RFC 9449 §8): a request
   * without one gets `use_dpop_nonce` and a `DPoP-Nonce` header to retry with. Default false.
   */
  requireNonce?: boolean;
}

/** The options this feature adds. */
export interface DpopFeatureOptions {
  /** DPoP (RFC 9449): sender-constrained access tokens, and refresh tokens of public clients. Off by default. */
  dpop?: DpopOptions;
}

/** The feature's state: always present (so its client rule runs); `enabled` when on. */
export interface Dpop {
  readonly enabled: boolean;
  readonly requireNonce: boolean;
  /** The algorithms proofs may use (`dpop_signing_alg_values_supported`). */
  readonly algorithms: readonly JwsAlgorithm[];
  readonly nonces: DpopNonces;
  /** The issuer's origin: the `htu` of a token request names it, whatever Host the request carried. */
  readonly origin: string;
}

/** The key each token request proved, by request: set by the token endpoint, read by the grants. */
const proven = new WeakMap<Exchange, string>();

/** Whether a client is registered with `dpop_bound_access_tokens: true` (RFC 9449 §5.2). */
export function requiresDpop(client: Pick<ClientRecord, "metadata">): boolean {
  return client.metadata?.dpop_bound_access_tokens === true;
}

/**
 * The thumbprint of the key a token request proved possession of (RFC 9449 §6.1 `jkt`), or undefined when it
 * carried no proof (or DPoP is off): what every grant passes to `issueTokens` as `jkt`.
 */
export function dpopKey(exchange: Exchange): string | undefined {
  return proven.get(exchange);
}

/**
 * Refuses with `invalid_grant` a grant bound to a key (`bound`) unless the request proved that key: a refresh
 * token of a public client (RFC 9449 §5) or a code requested with `dpop_jkt` (§10). Nothing is spent, so
 * presenting a stolen bound token, without its key, has no effect at all.
 */
export function checkBoundKey(exchange: Exchange, bound: string | undefined, what: string): void {
  if (bound === undefined) return;
  const key = proven.get(exchange);
  if (key === undefined) throw new OAuthError("invalid_grant", { description: `The ${what} is bound to a DPoP key: send a DPoP proof made with it` });
  if (!timingSafeEqual(key, bound)) throw new OAuthError("invalid_grant", { description: `The ${what} is bound to another DPoP key` });
}

/** What the token endpoint's proof check reads of the core. */
export interface ProofContext {
  readonly storage: Pick<Storage, "markOnce">;
  readonly clock: () => number;
}

/**
 * Checks the `DPoP` header of a token request (RFC 9449 §4.3, §5) and remembers its key for the grant; returns
 * the headers every answer of this request carries (`DPoP-Nonce` when nonces are on). Throws
 * `invalid_dpop_proof`, or `use_dpop_nonce` with the nonce to use (§8). A client registered with
 * `dpop_bound_access_tokens` must send a proof.
 */
export async function checkTokenProof(
  exchange: Exchange,
  state: Dpop,
  client: Pick<ClientRecord, "metadata">,
  context: ProofContext,
): Promise<Record<string, string> | undefined> {
  if (!state.enabled) return undefined;
  const now = context.clock();
  const headers = state.requireNonce ? { "dpop-nonce": await state.nonces.current(now) } : undefined;
  try {
    const header = proofHeader(exchange.request.headers);
    if (header === null) {
      if (requiresDpop(client)) throw new OAuthError("invalid_dpop_proof", { description: "This client must send a DPoP proof" });
      return undefined;
    }
    const url = normalizedHtu(state.origin + pathOf(exchange.target)) ?? "";
    const proof = await verifyProof(header, { method: exchange.request.method, url, algorithms: state.algorithms, now });
    if (state.requireNonce && (proof.nonce === undefined || !(await state.nonces.accepts(proof.nonce, now)))) {
      throw new OAuthError("use_dpop_nonce", { description: "Authorization server requires nonce in DPoP proof" });
    }
    // §11.1: each proof once, across every instance that shares the store.
    if (!(await context.storage.markOnce(replayKey(proof), replayExpiry(proof), now))) {
      throw new OAuthError("invalid_dpop_proof", { description: "The DPoP proof was already used" });
    }
    proven.set(exchange, proof.jkt);
    return headers;
  } catch (error) {
    if (!(error instanceof OAuthError) || headers === undefined) throw error;
    throw new OAuthError(error.code, { description: error.description ?? error.code, headers: { ...error.headers, ...headers } });
  }
}

/** The DPoP feature. */
export const dpop: Feature<"dpop", Dpop, DpopFeatureOptions> = defineFeature({
  name: "dpop",
  doc: "DPoP (RFC 9449): access tokens bound to the client's key, checked at the token endpoint and the resource.",
  options: [{
    key: "dpop",
    type: {
      kind: "object",
      fields: [
        { key: "enabled", type: { kind: "boolean" }, doc: "Check DPoP proofs at the token endpoint and bind tokens to their keys." },
        { key: "requireNonce", type: { kind: "boolean" }, doc: "Every proof at the token endpoint must carry a server nonce (RFC 9449 §8)." },
      ],
    },
    doc: "DPoP (RFC 9449): sender-constrained access tokens, and refresh tokens of public clients.",
    check: (value: DpopOptions) =>
      value.requireNonce === true && value.enabled !== true ? '"requireNonce" is set but "enabled" is not true' : undefined,
  }],
  reads: ["issuer", "secret"],
  setup: (options, core): Dpop => ({
    enabled: options.dpop?.enabled === true,
    requireNonce: options.dpop?.requireNonce === true,
    algorithms: DPOP_ALGORITHMS,
    nonces: dpopNonces(core.secret),
    origin: new URL(core.issuer).origin,
  }),
  metadata: (state) => (state.enabled ? { dpop_signing_alg_values_supported: [...state.algorithms] } : {}),
  admission: (state) => (client) => {
    const bound = client.metadata?.dpop_bound_access_tokens;
    if (bound === undefined) return;
    if (typeof bound !== "boolean") {
      throw new AdmissionError("dpop_bound_access_tokens", `"dpop_bound_access_tokens" must be true or false for client "${client.client_id}"`);
    }
    if (bound && !state.enabled) {
      throw new AdmissionError(
        "dpop_bound_access_tokens",
        `client "${client.client_id}" must use DPoP, but the server does not offer it: set dpop.enabled (dpop.enabled in the config file)`,
      );
    }
  },
  // A browser app must be able to read the nonce it is to use next.
  decorate(_state, exchange, _endpoint, answer) {
    if (exchange.request.headers.get("origin") === null || !answer.headers.some(([name]) => name === "dpop-nonce")) return;
    answer.headers.push(["access-control-expose-headers", "DPoP-Nonce"]);
  },
});
