/**
 * Token exchange (RFC 8693), opt-in: `tokenExchange: { enabled: true }`, and the grant in a client's
 * `grant_types` (an operator's decision: open registration never admits it). A service that received a user's
 * token trades it for one of its own for another audience, narrower or equal in scope; with an actor token the
 * new token says who acts (`act`). The `policy` hook decides who may exchange what; without it, every client
 * that has the grant may.
 *
 * @module
 */
import { defineFeature, type Feature } from "../core/feature.ts";
import { type ExchangePolicy, TOKEN_EXCHANGE, tokenExchangeGrant } from "./token_exchange_grant.ts";

export { type ExchangeParty, type ExchangePolicy, type ExchangeRequest, TOKEN_EXCHANGE, TOKEN_TYPE } from "./token_exchange_grant.ts";

/** Options of token exchange (`tokenExchange` of the server). */
export interface TokenExchangeOptions {
  /** Default false. */
  enabled?: boolean;
  /**
   * Decides whether a client may make an exchange (its subject, actor, scope and audience); false is refused
   * with `invalid_request` (RFC 8693 §2.2.2). Default: every client whose `grant_types` has the grant may.
   */
  policy?: ExchangePolicy;
}

/** The options this feature adds. */
export interface TokenExchangeFeatureOptions {
  /** Token exchange (RFC 8693) at the token endpoint. Off by default. */
  tokenExchange?: TokenExchangeOptions;
}

/** Token exchange, when enabled. */
export interface TokenExchange {
  readonly policy: ExchangePolicy;
}

const fn = { kind: "value", expect: "a function", test: (v: unknown) => typeof v === "function" } as const;
const allowAll: ExchangePolicy = () => true;

/** The token exchange feature. */
export const tokenExchange: Feature<"token_exchange", TokenExchange | null, TokenExchangeFeatureOptions> = defineFeature({
  name: "token_exchange",
  doc: "Token exchange (RFC 8693): delegation and impersonation, act in the tokens.",
  options: [{
    key: "tokenExchange",
    type: {
      kind: "object",
      fields: [
        { key: "enabled", type: { kind: "boolean" }, doc: "Accept the token-exchange grant (clients still need it in grant_types)." },
        { key: "policy", type: fn, doc: "Decides whether a client may make an exchange.", config: null },
      ],
    },
    doc: "Token exchange (RFC 8693): a client trades a token for one of its own, narrower, with act for a delegation.",
  }],
  reads: [],
  setup: (options): TokenExchange | null =>
    options.tokenExchange?.enabled === true ? { policy: options.tokenExchange.policy ?? allowAll } : null,
  grants: (state) => ({ [TOKEN_EXCHANGE]: tokenExchangeGrant(state.policy) }),
});
