/**
 * Views of the core: a grant, endpoint, client-authentication method or feature declares the core fields it
 * reads (`reads`) and the features whose state it uses (`uses`), and is given a frozen object holding exactly
 * those, so none can quietly come to depend on the whole server.
 *
 * @module
 */
import type { Core } from "./context.ts";

/** What a view needs of a feature: its name and the state its setup returns. */
export interface FeatureLike {
  readonly name: string;
  readonly setup: (...args: never[]) => unknown;
}

/** The state a feature's setup returns (null when the feature is off). */
export type StateOf<F> = F extends { readonly setup: (...args: never[]) => infer S } ? S : never;

/** The states of the features `F`, by name. */
export type FeatureStates<F extends readonly FeatureLike[]> = { readonly [X in F[number] as X["name"]]: StateOf<X> };

/** The view of the core fields `K` and the features `F`. */
export type View<K extends keyof Core, F extends readonly FeatureLike[]> = Readonly<Pick<Core, K>> & {
  readonly features: FeatureStates<F>;
};

/** Builds a frozen view: exactly the fields `reads` of `core`, and the states of `uses` under `features`. */
export function bindView(
  core: Core,
  states: ReadonlyMap<string, unknown>,
  reads: readonly (keyof Core)[],
  uses: readonly FeatureLike[],
): Readonly<Record<string, unknown>> {
  const view: Record<string, unknown> = {};
  for (const key of reads) view[key] = core[key];
  const features: Record<string, unknown> = {};
  for (const feature of uses) {
    if (!states.has(feature.name)) throw new Error(`Unknown feature "${feature.name}"`);
    features[feature.name] = states.get(feature.name);
  }
  view.features = Object.freeze(features);
  return Object.freeze(view);
}
