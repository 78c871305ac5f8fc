/**
 * A bench server on Node: `tsx test/bench/serve_node.ts --mode bare|oauth|bare-fetch|stored [--stored N]`.
 *
 * - `bare`: `node:http` reads the form body and answers constant JSON: the ceiling for Node.
 * - `bare-fetch`: the same constant answer as a fetch handler behind the adapter's WHATWG path (a `Request`
 *   and a `Response` per call): what a plain fetch adapter costs on Node.
 * - `oauth`: the authorization server through `serveNode` (lazy `Request` and `Response`, see the adapter).
 * - `stored`: the same, its store pre-filled with `--stored N` records, plus a Bearer-protected resource port
 *   (see stored.ts).
 *
 * Prints one line of JSON (`ReadyLine`) once it listens; stops on SIGTERM.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import { serveNode } from "../../lib/adapters/node.ts";
import { BARE_BODY, BARE_HEADERS, bareFetch, controlFetch, createBenchServer, type ReadyLine, serveMode } from "./fixture.ts";
import { prefill, resourceFetch, storedControlFetch, storedCount } from "./stored.ts";

const mode = serveMode(process.argv);
let ready: ReadyLine;
if (mode === "bare") {
  const headers = { ...BARE_HEADERS, "content-length": String(Buffer.byteLength(BARE_BODY)) };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      Buffer.concat(chunks).toString("utf8");
      res.writeHead(200, headers);
      res.end(BARE_BODY);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  ready = { port: (server.address() as AddressInfo).port };
} else if (mode === "bare-fetch") {
  ready = { port: (await serveNode({ fetch: bareFetch }, { port: 0 })).port };
} else if (mode === "stored") {
  // Pre-filled before it listens (see stored.ts); the token port serves exactly `serveNode(server)`.
  const server = await createBenchServer();
  const filled = await prefill(server, storedCount(process.argv));
  const control = await serveNode({ fetch: storedControlFetch(server) }, { port: 0 });
  const resource = await serveNode({ fetch: resourceFetch(server) }, { port: 0 });
  ready = { port: (await serveNode(server, { port: 0 })).port, control: control.port, resource: resource.port, prefill: filled };
} else {
  const server = await createBenchServer();
  const control = await serveNode({ fetch: controlFetch(server) }, { port: 0 });
  ready = { port: (await serveNode(server, { port: 0 })).port, control: control.port };
}
console.log(JSON.stringify(ready));
process.once("SIGTERM", () => process.exit(0));
