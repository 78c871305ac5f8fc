// A hostile client-metadata-document host on a loopback port, for attacks over real HTTP: compression bombs
// with a matching Content-Length, missing documents, and a valid document for any path. Counts what it served.
// Vitest on Node only (node:http, node:zlib).
import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

/** Decoded size of each bomb: 128 MiB of spaces. */
export const BOMB_BYTES: number = 128 * 1024 * 1024;

let bombs: { br: Buffer; gzip: Buffer } | undefined;
/** A brotli body of about 200 bytes and a gzip one of about 130 KB, both expanding to {@link BOMB_BYTES}. */
export function compressionBombs(): { br: Buffer; gzip: Buffer } {
  if (bombs === undefined) {
    const plain = Buffer.alloc(BOMB_BYTES, 0x20);
    bombs = {
      br: brotliCompressSync(plain, { params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_SIZE_HINT]: BOMB_BYTES } }),
      gzip: gzipSync(plain, { level: 9 }),
    };
  }
  return bombs;
}

export interface DocumentHost {
  origin: string;
  /** Requests served, by first path segment (`bomb-br`, `missing`, `doc`, …). */
  served: Map<string, number>;
  close(): Promise<void>;
}

/**
 * Paths: `/bomb-br/…` (brotli, with Content-Length), `/bomb-gzip/…` (gzip, chunked, no length), `/missing/…`
 * (404), `/doc/…` (a valid document naming its own URL; `?name=` sets its client_name).
 */
export function startDocumentHost(): Promise<DocumentHost> {
  const { br, gzip } = compressionBombs();
  const served = new Map<string, number>();
  let server!: Server;
  return new Promise((resolve) => {
    server = createServer((request, response) => {
      const url = new URL(request.url ?? "/", `http://${request.headers.host}`);
      const kind = url.pathname.split("/")[1] ?? "";
      served.set(kind, (served.get(kind) ?? 0) + 1);
      if (kind === "bomb-br") {
        response.writeHead(200, { "content-type": "application/json", "content-encoding": "br", "content-length": br.length });
        response.end(br);
      } else if (kind === "bomb-gzip") {
        response.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
        response.end(gzip);
      } else if (kind === "doc") {
        const clientId = `${url.origin}${url.pathname}${url.search}`;
        response.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=600" });
        response.end(JSON.stringify({
          client_id: clientId, client_name: url.searchParams.get("name") ?? "Document client",
          redirect_uris: ["http://127.0.0.1:9999/callback"], grant_types: ["authorization_code"], token_endpoint_auth_method: "none",
        }));
      } else {
        response.writeHead(404, { "content-type": "text/plain" });
        response.end("not found");
      }
    });
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      resolve({
        origin: `http://127.0.0.1:${port}`,
        served,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

/** The peak resident memory of a process so far, in bytes (Linux: VmHWM of /proc/PID/status). */
export function peakMemory(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!match) throw new Error(`no VmHWM for ${pid}`);
  return Number(match[1]) * 1024;
}
