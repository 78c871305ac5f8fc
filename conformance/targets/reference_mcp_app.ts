/**
 * The reference server as an MCP deployment, for in-process runs of the mcp profile (`--module`): the demo
 * configuration plus a resource (RFC 8707), dynamic registration, and an MCP endpoint at `/mcp` guarded by
 * `protectedResource` (RFC 9728 metadata and challenges), at the base_url of `reference-mcp.json`, and Client ID
 * Metadata Documents accepted from the origin where the suite serves them (`client_metadata_documents.origin`):
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
import { DEMO_CONFIG } from "../../lib/reference/config.ts";

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
  } = {},
): Promise<(request: Request) => Promise<Response>> {
  const app = await createReferenceApp({
    issuer: ISSUER,
    passwordIterations: options.passwordIterations ?? 1000,
    config: {
      ...DEMO_CONFIG,
      resources: [MCP_RESOURCE],
      registration: { enabled: true },
      default_scope: "reports.read",
      client_metadata_documents: { enabled: true, allow_origins: [options.documentOrigin ?? DOCUMENT_ORIGIN] },
    },
    ...(options.fetchDocument === undefined ? {} : { fetchDocument: options.fetchDocument }),
  });
  const mcp = protectedResource({
    resource: MCP_RESOURCE,
    authorizationServers: [ISSUER],
    verify: localTokenVerifier(app.server),
    scopesSupported: ["reports.read"],
    ...(options.requireAudience === undefined ? {} : { requireAudience: options.requireAudience }),
  });
  const tools = mcp.protect(["reports.read"], () => Promise.resolve(Response.json({ jsonrpc: "2.0", id: 1, result: {} })));
  return async (request) => mcp.metadataResponse(request) ?? (new URL(request.url).pathname === "/mcp" ? tools(request) : app.fetch(request));
}

/** The app for `--module`: its fetch handler. */
const app: { fetch: (request: Request) => Promise<Response> } = { fetch: await referenceMcpApp() };
export default app;
