/**
 * CORS (Fetch standard §3.2) for the endpoints a browser app calls directly: token, revocation, introspection,
 * registration and metadata. Never on the authorization endpoint or any HTML page, which are navigated to, not
 * fetched; never with credentials, since these endpoints authenticate by form fields or the `Authorization`
 * header, not cookies. On by default for any origin.
 *
 * @module
 */
import { defineFeature, type Feature } from "../core/feature.ts";
import { optionError } from "../core/option_table.ts";

/** Which origins may read the answers: `"*"` for any, else exact origins such as `https://app.example`. */
export type CorsOrigins = "*" | readonly string[];

/** The resolved policy. */
export interface CorsPolicy {
  origins: "*" | ReadonlySet<string>;
}

/** Headers a browser client sends beyond the CORS-safelisted ones (MCP clients add `MCP-Protocol-Version`, DPoP clients `DPoP`). */
const ALLOWED_HEADERS = "authorization, content-type, accept, mcp-protocol-version, dpop";

/** The options this feature adds. */
export interface CorsOptions {
  /**
   * CORS on the token, revocation, introspection, registration and metadata endpoints (never on the
   * authorization endpoint or HTML pages, never with credentials). Default: any origin (`{ origins: "*" }`);
   * a list allows exactly those origins; `false` sends no CORS headers.
   */
  cors?: { origins: CorsOrigins } | false;
}

/** Checks the option; returns the policy, or null when CORS is switched off. */
function resolveCors(value: { origins: CorsOrigins } | false | undefined): CorsPolicy | null {
  if (value === false) return null;
  if (value === undefined) return { origins: "*" };
  const { origins } = value;
  if (origins === "*") return { origins };
  if (!Array.isArray(origins)) throw optionError("cors.origins", `must be "*" or a list of origins`);
  for (const origin of origins) {
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    if (url === undefined || url.origin !== origin) {
      throw optionError("cors.origins", `must list origins such as "https://app.example" (no path or slash): "${origin}"`);
    }
  }
  return { origins: new Set(origins) };
}

/** The headers that let `origin` read a response, or none when it may not. */
function corsHeaders(origin: string | null, policy: CorsPolicy): [string, string][] {
  if (origin === null) return [];
  if (policy.origins === "*") return [["access-control-allow-origin", "*"]];
  // A listed origin is echoed; `Vary` keeps a shared cache from handing it to another origin.
  if (policy.origins.has(origin)) return [["access-control-allow-origin", origin], ["vary", "Origin"]];
  return [["vary", "Origin"]];
}

/**
 * The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`): 204, touching nothing, so that an
 * OPTIONS request never spends a code or a token. `methods` are the endpoint's own.
 */
function preflight(
  origin: string | null,
  methods: readonly string[],
  policy: CorsPolicy,
): { status: number; headers: [string, string][]; body: null } {
  const headers = corsHeaders(origin, policy);
  headers.push(["allow", [...methods, "OPTIONS"].join(", ")]);
  if (headers.some(([name]) => name === "access-control-allow-origin")) {
    headers.push(
      ["access-control-allow-methods", methods.join(", ")],
      ["access-control-allow-headers", ALLOWED_HEADERS],
      ["access-control-max-age", "600"],
    );
  }
  return { status: 204, headers, body: null };
}

/** The CORS feature. */
export const cors: Feature<"cors", CorsPolicy | null, CorsOptions> = defineFeature({
  name: "cors",
  doc: "Cross-origin calls from browser apps to the JSON endpoints (any origin by default).",
  options: [{
    key: "cors",
    type: { kind: "value", expect: "false or { origins: \"*\" | string[] }", test: (v) => v === false || (typeof v === "object" && v !== null) },
    doc: "Cross-origin requests to the token, revocation, introspection, registration and metadata endpoints.",
    config: {
      type: {
        kind: "object",
        fields: [{ key: "origins", type: { kind: "list", items: { kind: "string" } }, doc: 'Allowed origins, e.g. "https://app.example"; "*" for any.' }],
      },
      // Absent: any origin. `["*"]` says the same explicitly.
      convert: (value) => {
        const origins = (value as { origins?: string[] }).origins;
        return origins === undefined || origins.includes("*") ? { origins: "*" } : { origins };
      },
    },
  }],
  reads: [],
  setup: (options): CorsPolicy | null => resolveCors(options.cors),
  // A preflight is answered here and goes no further: OPTIONS never spends a code or a token.
  intercept: (policy, exchange, endpoint) => preflight(exchange.request.headers.get("origin"), endpoint.methods, policy),
  decorate(policy, exchange, _endpoint, answer) {
    const origin = exchange.request.headers.get("origin");
    if (origin !== null) answer.headers.push(...corsHeaders(origin, policy));
  },
});
