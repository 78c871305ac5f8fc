/**
 * The shape of a client-authentication method (RFC 6749 §2.3, RFC 7591 §2 `token_endpoint_auth_method`): it
 * reads its own credentials from the request and verifies them. The table in `lib/client_auth/registry.ts`
 * maps each method's wire name to one of these; adding a method is one file and one line there.
 *
 * @module
 */
import type { ClientRecord } from "../storage/types.ts";
import type { BoundClientAuth, Core, PresentedCredentials } from "./context.ts";
import type { Exchange } from "./exchange.ts";
import type { AuthMethodTraits } from "./traits.ts";
import { bindView, type FeatureLike, type View } from "./view.ts";

/** A method, as the table holds it. */
export interface ClientAuthMethod extends AuthMethodTraits {
  readonly reads: readonly (keyof Core)[];
  readonly uses: readonly FeatureLike[];
  /**
   * The credentials the request carries in this method's way, or null when it does not use it; throws
   * `OAuthError` (`invalid_client`) for malformed ones.
   */
  readonly read: (exchange: Exchange, form: Map<string, string>) => PresentedCredentials | null;
  /**
   * Whether the credentials prove `client`, which is null when no active client has that id: a method then
   * spends the same work as for a wrong credential, so timing tells nothing.
   */
  readonly verify: (presented: PresentedCredentials, client: ClientRecord | null, exchange: Exchange, view: never) => boolean | Promise<boolean>;
}

/** What {@link defineClientAuth} takes. */
export interface ClientAuthSpec<K extends keyof Core, F extends readonly FeatureLike[]> extends AuthMethodTraits {
  readonly reads: readonly K[];
  readonly uses?: F;
  read(exchange: Exchange, form: Map<string, string>): PresentedCredentials | null;
  verify(presented: PresentedCredentials, client: ClientRecord | null, exchange: Exchange, view: View<K, F>): boolean | Promise<boolean>;
}

/** Declares a client-authentication method. */
export function defineClientAuth<const K extends keyof Core, const F extends readonly FeatureLike[] = readonly []>(
  spec: ClientAuthSpec<K, F>,
): ClientAuthMethod {
  return Object.freeze({
    confidential: spec.confidential,
    reads: spec.reads,
    uses: spec.uses ?? [],
    read: spec.read,
    verify: spec.verify as ClientAuthMethod["verify"],
  });
}

/** Binds a method to one server. */
export function bindClientAuth(method: ClientAuthMethod, core: Core, states: ReadonlyMap<string, unknown>): BoundClientAuth {
  const view = bindView(core, states, method.reads, method.uses) as never;
  return Object.freeze({
    confidential: method.confidential,
    read: method.read,
    verify: (presented: PresentedCredentials, client: ClientRecord | null, exchange: Exchange) => method.verify(presented, client, exchange, view),
  });
}
export type { PresentedCredentials } from "./context.ts";
