/**
 * The shape of an optional feature. A feature is one module that declares its options, its state, and what
 * it adds to the server: endpoints, grants, metadata fields, rules for the clients it admits, and HTTP hooks.
 * The feature table (`lib/features/index.ts`) lists every feature; the option checks, the config schema, the
 * router and the metadata document all read it, so adding a feature is one file and one table line.
 *
 * @module
 */
import type { ResponseParts } from "../http.ts";
import type { AdmissionRule } from "./admission.ts";
import type { ClientAuthMethod } from "./client_auth.ts";
import type { Core } from "./context.ts";
import type { Endpoint, EndpointRoute } from "./endpoint.ts";
import type { Exchange } from "./exchange.ts";
import type { Grant } from "./grant.ts";
import type { OptionSpec } from "./option_table.ts";

/** What a feature's metadata sees of the server. */
export interface MetadataContext {
  /** An endpoint's absolute URL, when it is served at a path. */
  url(endpoint: string): string | undefined;
  /** Whether an endpoint is served at all. */
  has(endpoint: string): boolean;
  /** The document so far (the core's fields, and the features' before this one). */
  readonly document: Readonly<Record<string, unknown>>;
}

/** A feature. `S` is its state (null when off); `O` the options it adds to `createAuthorizationServer`. */
export interface Feature<N extends string = string, S = unknown, O extends object = object> {
  readonly name: N;
  /** One line for the docs. */
  readonly doc: string;
  /** The top-level options it adds. */
  readonly options: readonly OptionSpec[];
  /** The core fields its setup reads. */
  readonly reads: readonly (keyof Core)[];
  /** Resolves its state from the checked options; null when it is off. Throws `ConfigurationError`. */
  readonly setup: (options: O, core: never) => S;
  /** Endpoints it serves while on. */
  readonly endpoints?: (state: NonNullable<S>) => readonly Endpoint[];
  /** Grant types it adds while on. */
  readonly grants?: (state: NonNullable<S>) => Readonly<Record<string, Grant>>;
  /** Client-authentication methods it adds while on. */
  readonly clientAuth?: (state: NonNullable<S>) => Readonly<Record<string, ClientAuthMethod>>;
  /** Metadata fields (RFC 8414) it adds while on. */
  readonly metadata?: (state: NonNullable<S>, server: MetadataContext) => Record<string, unknown>;
  /** A rule for the clients it admits. */
  readonly admission?: (state: NonNullable<S>) => AdmissionRule;
  /** Answers a request before its endpoint does (a CORS preflight), or returns undefined. */
  readonly intercept?: (state: NonNullable<S>, exchange: Exchange, endpoint: EndpointRoute & { methods: readonly string[] }) => ResponseParts | undefined;
  /** Adds to an endpoint's answer (CORS headers). */
  readonly decorate?: (state: NonNullable<S>, exchange: Exchange, endpoint: EndpointRoute, answer: ResponseParts) => void;
  /** Phantom: the options type, for `AuthorizationServerOptions`. */
  readonly __options?: O;
}

/** What {@link defineFeature} takes. */
export interface FeatureSpec<N extends string, S, O extends object, K extends keyof Core>
  extends Omit<Feature<N, S, O>, "setup" | "reads" | "__options"> {
  readonly reads: readonly K[];
  setup(options: O, core: Readonly<Pick<Core, K>>): S;
}

/** Declares a feature. */
export function defineFeature<const N extends string, S, O extends object, const K extends keyof Core = never>(
  spec: FeatureSpec<N, S, O, K>,
): Feature<N, S, O> {
  return Object.freeze({ ...spec, setup: spec.setup as Feature<N, S, O>["setup"] });
}

/** The options type of a feature. */
export type OptionsOf<F> = F extends { readonly __options?: infer O } ? NonNullable<O> : never;

type Intersect<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/** The options every feature of a table adds, as one type. */
export type FeatureOptions<T extends readonly { readonly __options?: object }[]> = Intersect<OptionsOf<T[number]>>;
