/**
 * Request to endpoint: a table of routes built from the bound endpoints, the enabled features' HTTP hooks
 * (CORS), and the one `try` whose `catch` hands every failure to the renderer.
 *
 * @module
 */
import { OAuthError } from "../errors.ts";
import { pathOf, printable, respond, type ResponseParts, targetOf } from "../http.ts";
import type { BoundEndpoint } from "./endpoint.ts";
import { createExchange, type Exchange } from "./exchange.ts";
import type { Core } from "./context.ts";
import { renderError } from "./render.ts";

/** A feature's hooks around every endpoint that allows cross-origin calls. */
export interface HttpHooks {
  intercept?(exchange: Exchange, endpoint: BoundEndpoint & { methods: readonly string[] }): ResponseParts | undefined;
  decorate?(exchange: Exchange, endpoint: BoundEndpoint, answer: ResponseParts): void;
}

/** Where each bound endpoint is served: its path (a dispatching route chooses among the others by name). */
export function routeTable(endpoints: readonly BoundEndpoint[], basePath: string): Map<string, BoundEndpoint> {
  const routes = new Map<string, BoundEndpoint>();
  for (const endpoint of endpoints) {
    if (endpoint.route === null) continue;
    const path = endpoint.wellKnown ? endpoint.route + basePath : basePath + endpoint.route;
    if (routes.has(path)) throw new Error(`Two endpoints at "${path}": "${routes.get(path)!.name}" and "${endpoint.name}"`);
    routes.set(path, endpoint);
  }
  return routes;
}

/** Builds the request handler of a server. */
export function createRouter(
  core: Core,
  endpoints: readonly BoundEndpoint[],
  hooks: readonly HttpHooks[],
): (request: Request, peer: string | undefined) => Promise<Response> {
  const routes = routeTable(endpoints, core.basePath);
  const byName = new Map(endpoints.map((e) => [e.name, e]));
  const intercepts = hooks.filter((h) => h.intercept !== undefined);
  const decorators = hooks.filter((h) => h.decorate !== undefined);

  function endpointOf(target: string): BoundEndpoint | undefined {
    const endpoint = routes.get(pathOf(target));
    if (endpoint?.dispatch === undefined) return endpoint;
    const name = endpoint.dispatch(target);
    return name === undefined ? undefined : byName.get(name);
  }

  // One async frame per request: routing is synchronous, only the endpoint's handler is awaited.
  return async function handle(request: Request, peer: string | undefined): Promise<Response> {
    const target = targetOf(request.url);
    const endpoint = endpointOf(target);
    if (endpoint === undefined) return respond(request, { status: 404, headers: [], body: null });
    const exchange = createExchange(request, target, peer, core);
    if (endpoint.cors && request.method === "OPTIONS") {
      const methods = Object.keys(endpoint.handlers);
      for (const hook of intercepts) {
        const answer = hook.intercept!(exchange, { ...endpoint, methods });
        if (answer !== undefined) return respond(request, answer);
      }
    }
    const method = request.method === "HEAD" ? "GET" : request.method;
    // An own-property look-up: a method named "constructor" or "toString" must not reach Object.prototype.
    const handler = Object.hasOwn(endpoint.handlers, method) ? endpoint.handlers[method as "GET" | "POST"] : undefined;
    let answer: ResponseParts | Response;
    if (handler === undefined) {
      const allow = Object.keys(endpoint.handlers).join(", ");
      const error = new OAuthError("invalid_request", {
        description: `Method ${printable(request.method)} is not allowed here`,
        status: 405,
        headers: { allow },
      });
      return respond(request, renderError(error, endpoint, exchange, core));
    } else {
      try {
        answer = await handler(exchange);
        if (!(answer instanceof Response) && request.method === "HEAD") answer = { ...answer, body: null };
      } catch (error) {
        answer = renderError(error, endpoint, exchange, core);
      }
    }
    if (answer instanceof Response) return answer;
    if (endpoint.cors) for (const hook of decorators) hook.decorate!(exchange, endpoint, answer);
    return respond(request, answer);
  };
}
