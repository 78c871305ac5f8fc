/**
 * This project on one store, for the durable-store rows (`durable.ts`):
 *
 *   node serve_store.js --store memory|sqlite:PATH|postgres://…|redis://… [--pool 10] [--client-cache-ms 1000]
 *     [--token-cache-ms 1000] [--issued-entries 10000]
 *
 * The stores are opened as the README tells users to: pg with named statements (`query(t, p, n)`), ioredis
 * with `evalsha`, node:sqlite through `sqliteExecutor`; a durable store sits behind `cachedClients` and
 * `cachedTokens` with the reference server's bounds (1 s each; `--client-cache-ms 0`, `--token-cache-ms 0` turn
 * them off), and `issuedRecords` as the reference server has it (`--issued-entries 0` turns it off). The token port is `serveNode(server)`, the resource port `verifyAccessToken` (see
 * `durable_server.ts` for the ports).
 *
 * @module
 */
import { memoryStorage, redisStorage, sqlStorage, type Storage } from "../../mod.ts";
import { serveNode } from "../../lib/adapters/node.ts";
import { respond } from "../../lib/http.ts";
import { cachedClients } from "../../lib/storage/cached_clients.ts";
import { cachedTokens } from "../../lib/storage/cached_tokens.ts";
import { issuedRecords } from "../../lib/storage/issued_records.ts";
import { arg, kindOf, openPostgres, openRedis, openSqliteFile } from "./drivers.ts";
import { serveDurable } from "./durable_server.ts";
import { createBenchServer, issueCodes } from "./fixture.ts";

const url = arg("store");
const kind = kindOf(url);
const cacheMs = Number(arg("client-cache-ms", "1000"));
const tokenCacheMs = Number(arg("token-cache-ms", "1000"));
const issuedEntries = Number(arg("issued-entries", "10000"));
let storage: Storage;
if (kind === "memory") {
  storage = memoryStorage();
} else {
  if (kind === "sqlite") {
    const sql = sqlStorage((await openSqliteFile(url.slice("sqlite:".length))).executor);
    await sql.migrate();
    storage = sql;
  } else if (kind === "postgres") {
    const sql = sqlStorage({ dialect: "postgres", query: openPostgres(url, Number(arg("pool", "10"))).query });
    await sql.migrate();
    storage = sql;
  } else {
    const { eval: evalScript, evalsha } = openRedis(url);
    storage = redisStorage({ eval: evalScript, evalsha });
  }
  storage = cachedTokens(cachedClients(issuedRecords(storage, { maxEntries: issuedEntries }), { maxAgeMs: cacheMs }), { maxAgeMs: tokenCacheMs });
}

const server = await createBenchServer(storage);
const JSON_ONLY: [string, string][] = [["content-type", "application/json"]];
/**
 * The resource port: `verifyAccessToken`, answered with the core's lazy response (`respond`, which the Node
 * adapter writes without building a WHATWG `Response`; a handler that returns `new Response(...)` pays some
 * 70 µs more per call on Node: README of this folder, "Bearer check"), with the peers' one header: what an API
 * sends back is the API's choice, not the token check's.
 */
const resource = async (request: Request): Promise<Response> => {
  try {
    const info = await server.verifyAccessToken(request, "read");
    return respond(request, { status: 200, headers: JSON_ONLY, body: JSON.stringify({ client_id: info.client_id }) });
  } catch {
    return respond(request, { status: 401, headers: [], body: null });
  }
};
await serveDurable({
  token: async () => (await serveNode(server, { port: 0 })).port,
  resource: async () => (await serveNode({ fetch: resource }, { port: 0 })).port,
  issueCodes: (n) => issueCodes(server, n),
});
