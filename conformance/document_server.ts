/**
 * The suite's document host for the Client ID Metadata Document cases: a loopback HTTP listener at the origin
 * the target file names (`client_metadata_documents.origin`), which the server under test is configured to
 * fetch from. Like cli.ts it uses `node:` modules (which Node, Deno and Bun all provide); mod.ts does not
 * import it, so the library stays runtime-neutral.
 *
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { DocumentHost } from "./context.ts";

/** A running document host. */
export interface DocumentServer extends DocumentHost {
  close(): Promise<void>;
}

/**
 * Listens at `origin` (an http origin on a loopback address; port 0 picks a free one, and `origin` then says
 * which). Unknown paths answer 404. Every answer is bounded: the listener holds no request open.
 */
export async function openDocumentServer(origin: string): Promise<DocumentServer> {
  const url = new URL(origin);
  if (url.protocol !== "http:" || !["127.0.0.1", "[::1]", "localhost"].includes(url.hostname)) {
    throw new Error(`client_metadata_documents.origin must be an http origin on a loopback address: ${origin}`);
  }
  const routes = new Map<string, () => Response>();
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://host").pathname;
    const respond = request.method === "GET" ? routes.get(path) : undefined;
    const answer = respond?.() ?? new Response("not found", { status: 404 });
    void answer.text().then((body) => {
      const headers: Record<string, string> = {};
      answer.headers.forEach((value, name) => (headers[name] = value));
      response.writeHead(answer.status, headers).end(body);
    });
  });
  server.keepAliveTimeout = 1000;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(Number(url.port || 80), host, () => resolve());
  });
  // The owner closes it; an unclosed one (a test helper's) must not keep the process alive.
  server.unref();
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://${url.hostname}:${port}`,
    serve: (path, respond) => void routes.set(path, respond),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
