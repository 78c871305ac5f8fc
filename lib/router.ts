/**
 * Request to endpoint, and the one place that turns errors into responses.
 *
 * @module
 */
import { errorPage } from "./consent/pages.ts";
import { corsHeaders, preflight } from "./cors.ts";
import { authorizationRedirect, authorizeEndpoint } from "./endpoints/authorize.ts";
import { introspectEndpoint } from "./endpoints/introspect.ts";
import { metadataEndpoint } from "./endpoints/metadata.ts";
import { registerEndpoint } from "./endpoints/register.ts";
import { revokeEndpoint } from "./endpoints/revoke.ts";
import { tokenEndpoint } from "./endpoints/token.ts";
import { OAuthError, report } from "./errors.ts";
import {
  type Incoming,
  jsonResponse,
  pathOf,
  printable,
  queryOf,
  redirectResponse,
  respond,
  type ResponseParts,
  targetOf,
} from "./http.ts";
import type { ServerContext } from "./options.ts";

/** An endpoint's answer: parts to render, or a `Response` a user hook made (passed on as it is). */
type Handler = (incoming: Incoming, context: ServerContext) => Promise<ResponseParts | Response> | ResponseParts;

/**
 * An endpoint: its name (for `onError`), its handlers by method, whether its errors are HTML pages, and whether
 * browser apps may call it across origins (CORS; never for pages, which are navigated to).
 */
interface Endpoint {
  name: string;
  methods: Partial<Record<"GET" | "POST", Handler>>;
  page: boolean;
  cors: boolean;
}

const AUTHORIZE: Endpoint = { name: "authorize", methods: { GET: authorizeEndpoint, POST: authorizeEndpoint }, page: true, cors: false };
const TOKEN: Endpoint = { name: "token", methods: { POST: tokenEndpoint }, page: false, cors: true };
const REVOKE: Endpoint = { name: "revoke", methods: { POST: revokeEndpoint }, page: false, cors: true };
const INTROSPECT: Endpoint = { name: "introspect", methods: { POST: introspectEndpoint }, page: false, cors: true };
const REGISTER: Endpoint = { name: "register", methods: { POST: registerEndpoint }, page: false, cors: true };
const METADATA: Endpoint = { name: "metadata", methods: { GET: (_, context) => metadataEndpoint(context) }, page: false, cors: true };

/** The spec's addresses: `{base}/index.php?module=OAuth2&action=…` (spec §4.1, §4.2). */
const SPEC_ACTIONS: Readonly<Record<string, Endpoint>> = Object.freeze(
  Object.assign(Object.create(null), { authorize: AUTHORIZE, token: TOKEN }),
);

/** Builds the request handler for a server context. */
export function createRouter(
  context: ServerContext,
): (request: Request, remoteAddress: string | undefined) => Promise<Response> {
  const routes = new Map<string, Endpoint>();
  const base = context.basePath;
  const { paths } = context;
  if (paths.token !== null) routes.set(base + paths.token, TOKEN);
  if (paths.revoke !== null) routes.set(base + paths.revoke, REVOKE);
  if (paths.introspect !== null) routes.set(base + paths.introspect, INTROSPECT);
  if (paths.authorize !== null && context.authenticateUser) routes.set(base + paths.authorize, AUTHORIZE);
  if (context.registration) routes.set(base + "/register", REGISTER);
  // RFC 8414 §3: the well-known segment goes between the host and the issuer's path.
  routes.set("/.well-known/oauth-authorization-server" + base, METADATA);
  const specPath = base + "/index.php";

  const { cors } = context;
  // One async frame per request: routing is synchronous, only the endpoint's handler is awaited.
  return async function handle(request: Request, remoteAddress: string | undefined): Promise<Response> {
    const incoming: Incoming = { request, target: targetOf(request.url), remoteAddress };
    const endpoint = endpointOf(incoming.target);
    let answer: ResponseParts | Response;
    if (endpoint === undefined) {
      answer = notFound();
    } else if (request.method === "OPTIONS" && endpoint.cors && cors !== null) {
      // A preflight is answered here and goes no further: OPTIONS never spends a code or a token.
      return respond(request, preflight(request.headers.get("origin"), Object.keys(endpoint.methods), cors));
    } else {
      const method = request.method === "HEAD" ? "GET" : request.method;
      // An own-property look-up: a method named "constructor" or "toString" must not reach Object.prototype.
      const handler = Object.hasOwn(endpoint.methods, method) ? endpoint.methods[method as "GET" | "POST"] : undefined;
      if (handler === undefined) {
        const allow = Object.keys(endpoint.methods).join(", ");
        const error = new OAuthError("invalid_request", {
          description: `Method ${printable(request.method)} is not allowed here`,
          status: 405,
          headers: { allow },
        });
        return respond(request, render(error, endpoint, incoming, context));
      }
      try {
        answer = await handler(incoming, context);
        if (!(answer instanceof Response) && request.method === "HEAD") answer = { ...answer, body: null };
      } catch (error) {
        answer = render(error, endpoint, incoming, context);
      }
    }
    if (answer instanceof Response) return answer;
    if (endpoint?.cors && cors !== null) {
      const origin = request.headers.get("origin");
      if (origin !== null) answer.headers.push(...corsHeaders(origin, cors));
    }
    return respond(request, answer);
  };

  function endpointOf(target: string): Endpoint | undefined {
    const path = pathOf(target);
    let endpoint = routes.get(path);
    if (endpoint === undefined && path === specPath && context.specAddresses) endpoint = specEndpoint(target);
    return endpoint === undefined || (endpoint === AUTHORIZE && !context.authenticateUser) ? undefined : endpoint;
  }
}

function specEndpoint(target: string): Endpoint | undefined {
  const raw = queryOf(target);
  // The token address as every spec client writes it, without parsing (the same answer the parse gives).
  if (raw === "module=OAuth2&action=token") return TOKEN;
  const query = new URLSearchParams(raw);
  if (query.get("module") !== "OAuth2") return undefined;
  const action = query.get("action");
  return action === null ? undefined : SPEC_ACTIONS[action];
}

function notFound(): ResponseParts {
  return { status: 404, headers: [], body: null };
}

const RESOURCE: Endpoint = { name: "resource", methods: {}, page: false, cors: false };

/**
 * Renders a failure of the resource guard (RFC 6750 §3 for an `OAuthError`, else a generic `server_error`),
 * reporting it to `onError` exactly as the endpoints' failures are.
 */
export function resourceErrorResponse(error: unknown, incoming: Incoming, context: ServerContext): ResponseParts {
  return render(error, RESOURCE, incoming, context);
}

/** Renders any error thrown by an endpoint: a redirect, an HTML page or RFC 6749 §5.2 JSON. */
function render(error: unknown, endpoint: Endpoint, incoming: Incoming, context: ServerContext): ResponseParts {
  const where = { endpoint: endpoint.name, method: incoming.request.method, path: pathOf(incoming.target) };
  let oauth: OAuthError;
  if (error instanceof OAuthError) {
    oauth = error;
    if (oauth.cause !== undefined || oauth.status >= 500) report(context.onError, oauth, where);
  } else {
    report(context.onError, error, where);
    // Never the exception's message or stack: they may hold internals or secrets.
    oauth = new OAuthError("server_error", { description: "The server could not complete the request" });
  }
  if (oauth.redirect) {
    const location = authorizationRedirect(oauth.redirect.uri, {
      error: oauth.code,
      error_description: oauth.description,
      state: oauth.redirect.state,
    }, context.issuer);
    return redirectResponse(location, incoming.request.method === "POST" ? 303 : 302);
  }
  if (endpoint.page) {
    const page = errorPage(oauth.status, PAGE_TITLES[oauth.code] ?? "Request refused", oauth.description ?? oauth.code);
    for (const name in oauth.headers) page.headers.push([name, oauth.headers[name]!]);
    return page;
  }
  return errorResponse(oauth);
}

/** RFC 6749 §5.2 JSON for an `OAuthError`, with its status and headers. */
export function errorResponse(error: OAuthError): ResponseParts {
  const body: Record<string, string> = { error: error.code };
  if (error.description !== undefined) body.error_description = error.description;
  return jsonResponse(error.status, body, error.headers);
}


const PAGE_TITLES: Partial<Record<string, string>> = {
  invalid_request: "This sign-in link is not valid",
  access_denied: "Request refused",
  server_error: "Something went wrong",
  temporarily_unavailable: "Please try again shortly",
};
