/**
 * The reference server as an MCP deployment, for in-process runs of the mcp profile (`--module`): the demo
 * configuration with several scopes per request (`scope_policy: "multiple"`, as MCP hosts ask), a resource
 * (RFC 8707), dynamic registration, and an MCP endpoint at `/mcp` guarded by `protectedResource` (RFC 9728
 * metadata and challenges; its tool `write_report` needs `reports.write` on top, for step-up), at the base_url of
 * `reference-mcp.json`, and Client ID Metadata Documents accepted from the origin where the suite serves them
 * (`client_metadata_documents.origin`). The identity cases' roles are there too: a `private_key_jwt` client and two
 * trusted issuers (an identity provider, a workload platform) whose keys the suite serves from that origin, and
 * token exchange:
 *
 * ```sh
 * npx tsx conformance/cli.ts --target conformance/targets/reference-mcp.json --profile mcp \
 *   --module conformance/targets/reference_mcp_app.ts
 * ```
 *
 * @module
 */
import { localTokenVerifier, protectedResource } from "../../mod.ts";
import { createReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, type ReferenceConfig } from "../../lib/reference/config.ts";
import type { Storage } from "../../lib/storage/types.ts";

const ISSUER = "http://127.0.0.1:8080";
/** The MCP server's canonical URI. */
export const MCP_RESOURCE: string = `${ISSUER}/mcp`;
/** Where reference-mcp.json lets the suite serve client metadata documents (exempt from the https/SSRF rules). */
export const DOCUMENT_ORIGIN: string = "http://127.0.0.1:47801";

/** The reference app configured for MCP, with an MCP endpoint that answers `ping` to a valid token. */
export async function referenceMcpApp(
  options: {
    passwordIterations?: number;
    requireAudience?: boolean;
    /** The origin allowed to serve client metadata documents. Default {@link DOCUMENT_ORIGIN}. */
    documentOrigin?: string;
    /** How documents are fetched (tests plant broken fetches). */
    fetchDocument?: (request: Request) => Promise<Response>;
    /** Changes to the config (tests plant a policy or a feature). */
    configure?: (config: ReferenceConfig) => ReferenceConfig;
    /** The store (tests plant a broken one). Default: a new memory store. */
    storage?: Storage;
  } = {},
): Promise<(request: Request) => Promise<Response>> {
  const origin = options.documentOrigin ?? DOCUMENT_ORIGIN;
  const app = await createReferenceApp({
    issuer: ISSUER,
    passwordIterations: options.passwordIterations ?? 1000,
    config: (options.configure ?? ((c) => c))({
      ...DEMO_CONFIG,
      scope_policy: "multiple",
      resources: [MCP_RESOURCE],
      registration: { enabled: true },
      default_scope: "reports.read",
      client_metadata_documents: { enabled: true, allow_origins: [origin] },
      ...identityConfig(origin),
    }),
    ...(options.fetchDocument === undefined ? {} : { fetchDocument: options.fetchDocument }),
    ...(options.storage === undefined ? {} : { storage: options.storage }),
  });
  const mcp = protectedResource({
    resource: MCP_RESOURCE,
    authorizationServers: [ISSUER],
    verify: localTokenVerifier(app.server),
    scopesSupported: ["reports.read"],
    ...(options.requireAudience === undefined ? {} : { requireAudience: options.requireAudience }),
  });
  // Every call needs reports.read; a tools/call of write_report needs reports.write too (the 403 names both).
  const needs = async (request: Request) => ((await toolOf(request)) === "write_report" ? ["reports.read", "reports.write"] : ["reports.read"]);
  const tools = mcp.protect(needs, () => Promise.resolve(Response.json({ jsonrpc: "2.0", id: 1, result: {} })));
  return async (request) => mcp.metadataResponse(request) ?? (new URL(request.url).pathname === "/mcp" ? tools(request) : app.fetch(request));
}

/**
 * The identity cases' part of the config (reference-mcp.json's `identity`): the users' e-mail, a client that signs
 * with the suite's client key, an agent for identity assertions and token exchange, a workload, and the suite's
 * identity provider and workload platform as trusted issuers. Their key sets are the suite's, at `origin`.
 */
function identityConfig(origin: string): Partial<ReferenceConfig> {
  return {
    users: DEMO_CONFIG.users.map((u) => ({ ...u, email: `${u.username}@example.com` })),
    clients: [
      ...DEMO_CONFIG.clients,
      {
        client_id: "conformance-signer", name: "Conformance signer", redirect_uris: [], scopes: ["reports.read"], grant_types: ["client_credentials"],
        token_endpoint_auth_method: "private_key_jwt", jwks_uri: `${origin}/client/jwks`,
      },
      {
        client_id: "demo-agent", client_secret: "demo-agent-secret-change-me", name: "Demo Agent", redirect_uris: [], scopes: ["reports.read", "reports.write"],
        grant_types: ["urn:ietf:params:oauth:grant-type:jwt-bearer", "urn:ietf:params:oauth:grant-type:token-exchange"],
      },
      { client_id: "demo-workload", name: "Demo Workload", redirect_uris: [], scopes: ["exports"], grant_types: ["urn:ietf:params:oauth:grant-type:jwt-bearer"] },
    ],
    trusted_issuers: [
      { issuer: `${origin}/idp`, jwks_uri: `${origin}/idp/jwks`, kind: "id-jag", clients: ["demo-agent"], scopes: ["reports.read"] },
      { issuer: `${origin}/workload`, jwks_uri: `${origin}/workload/jwks`, kind: "workload", clients: ["demo-workload"], scopes: ["exports"] },
    ],
    token_exchange: { enabled: true },
  };
}

/** The tool a JSON-RPC `tools/call` calls, or undefined. */
async function toolOf(request: Request): Promise<string | undefined> {
  if (request.method !== "POST") return undefined;
  try {
    const message = JSON.parse(await request.clone().text()) as { method?: unknown; params?: { name?: unknown } };
    return message.method === "tools/call" && typeof message.params?.name === "string" ? message.params.name : undefined;
  } catch {
    return undefined;
  }
}

/** The app for `--module`: its fetch handler. */
const app: { fetch: (request: Request) => Promise<Response> } = { fetch: await referenceMcpApp() };
export default app;
