/**
 * The shape of an endpoint: its route, its handlers by method, how its errors are rendered, and what it reads.
 * The router and the metadata document are built from the endpoints of the core and of each enabled feature.
 *
 * @module
 */
import type { ResponseParts } from "../http.ts";
import type { Core } from "./context.ts";
import type { Exchange } from "./exchange.ts";
import { bindView, type FeatureLike, type View } from "./view.ts";

/** An endpoint's answer: parts to render, or a `Response` a user hook made (passed on as it is). */
export type EndpointAnswer = Promise<ResponseParts | Response> | ResponseParts | Response;

/** How an endpoint is routed and rendered. */
export interface EndpointRoute {
  /** The name, for `onError`, the metadata and `paths`. */
  readonly name: string;
  /**
   * The path below the issuer's path (`/token`), or null when it is reached only through another route's
   * `dispatch`. With `wellKnown`, the path goes between the host and the issuer's path (RFC 8414 §3).
   */
  readonly route: string | null;
  readonly wellKnown?: boolean;
  /** A route that hands the request to another endpoint, chosen by name from the request target. */
  readonly dispatch?: (target: string) => string | undefined;
  /** Errors are HTML pages (a browser is looking), not JSON. */
  readonly page: boolean;
  /** Browser apps may call it across origins (never for pages, which are navigated to). */
  readonly cors: boolean;
  /** Served only when this holds (e.g. the authorization endpoint needs an authentication hook). */
  readonly when?: (core: Core) => boolean;
}

/** An endpoint, as the core and feature tables hold it. */
export interface Endpoint extends EndpointRoute {
  readonly reads: readonly (keyof Core)[];
  readonly uses: readonly FeatureLike[];
  readonly methods: Readonly<Partial<Record<"GET" | "POST", (exchange: Exchange, view: never) => EndpointAnswer>>>;
}

/** What {@link defineEndpoint} takes. */
export interface EndpointSpec<K extends keyof Core, F extends readonly FeatureLike[]> extends EndpointRoute {
  readonly reads: readonly K[];
  readonly uses?: F;
  readonly methods: Readonly<Partial<Record<"GET" | "POST", (exchange: Exchange, view: View<K, F>) => EndpointAnswer>>>;
}

/** Declares an endpoint; `reads` and `uses` fix what its handlers may see. */
export function defineEndpoint<const K extends keyof Core, const F extends readonly FeatureLike[] = readonly []>(
  spec: EndpointSpec<K, F>,
): Endpoint {
  return Object.freeze({ ...spec, uses: spec.uses ?? [], methods: spec.methods as Endpoint["methods"] });
}

/** An endpoint bound to one server: its handlers take only the request object. */
export interface BoundEndpoint extends EndpointRoute {
  readonly handlers: Readonly<Partial<Record<"GET" | "POST", (exchange: Exchange) => EndpointAnswer>>>;
}

/** Binds an endpoint to one server. */
export function bindEndpoint(endpoint: Endpoint, core: Core, states: ReadonlyMap<string, unknown>): BoundEndpoint {
  const view = bindView(core, states, endpoint.reads, endpoint.uses) as never;
  const handlers: Partial<Record<"GET" | "POST", (exchange: Exchange) => EndpointAnswer>> = {};
  for (const method of ["GET", "POST"] as const) {
    const handler = endpoint.methods[method];
    if (handler !== undefined) handlers[method] = (exchange) => handler(exchange, view);
  }
  const { reads: _r, uses: _u, methods: _m, ...route } = endpoint;
  return Object.freeze({ ...route, handlers: Object.freeze(handlers) });
}
