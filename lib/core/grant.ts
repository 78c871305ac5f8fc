/**
 * The shape of a grant type: its handler at the token endpoint and what it needs. The table in
 * `lib/grants/registry.ts` (and a feature's own grants) maps each `grant_type` to one of these.
 *
 * @module
 */
import type { ClientRecord } from "../storage/types.ts";
import type { TokenResponse } from "../tokens.ts";
import type { BoundGrant, Core } from "./context.ts";
import type { Exchange } from "./exchange.ts";
import type { GrantTraits } from "./traits.ts";
import { bindView, type FeatureLike, type View } from "./view.ts";

/** A grant type, as the table holds it. */
export interface Grant extends GrantTraits {
  /** The core fields its handler reads. */
  readonly reads: readonly (keyof Core)[];
  /** The features whose state its handler uses. */
  readonly uses: readonly FeatureLike[];
  /** The handler; its view holds exactly `reads` and `uses`. */
  readonly exchange: (exchange: Exchange, form: Map<string, string>, client: ClientRecord, view: never) => Promise<TokenResponse>;
}

/** What {@link defineGrant} takes. */
export interface GrantSpec<K extends keyof Core, F extends readonly FeatureLike[]> extends Partial<Pick<GrantTraits, "userApproved">> {
  readonly reads: readonly K[];
  readonly uses?: F;
  readonly clientFields: GrantTraits["clientFields"];
  readonly confidentialOnly: boolean;
  /** Validates the grant's fields, stores the tokens, and returns the response; throws `OAuthError`. */
  exchange(exchange: Exchange, form: Map<string, string>, client: ClientRecord, view: View<K, F>): Promise<TokenResponse>;
}

/** Declares a grant; `reads` and `uses` fix what its handler may see. */
export function defineGrant<const K extends keyof Core, const F extends readonly FeatureLike[] = readonly []>(
  spec: GrantSpec<K, F>,
): Grant {
  return Object.freeze({
    reads: spec.reads,
    uses: spec.uses ?? [],
    clientFields: spec.clientFields,
    confidentialOnly: spec.confidentialOnly,
    userApproved: spec.userApproved ?? false,
    exchange: spec.exchange as Grant["exchange"],
  });
}

/** Binds a grant to one server: its handler gets the view of `core` it declared, built once. */
export function bindGrant(grant: Grant, core: Core, states: ReadonlyMap<string, unknown>): BoundGrant {
  const view = bindView(core, states, grant.reads, grant.uses) as never;
  return Object.freeze({ grant, exchange: (exchange: Exchange, form: Map<string, string>, client: ClientRecord) => grant.exchange(exchange, form, client, view) });
}
