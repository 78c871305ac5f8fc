/**
 * "An MCP host built on the official SDK connects to the reference server by setting only the config keys":
 * the reference server runs as its own process (`lib/cli/serve.ts --config FILE`), configured with
 * `scope_policy`, `default_scope`, `resources`, `client_metadata_documents` and `registration`; the MCP server
 * (examples/mcp_server.ts) checks tokens remotely through introspection, as a config client with
 * `"introspection": "all"`. The host's metadata document is served over https on loopback (a throw-away
 * self-signed certificate, trusted by the server process through NODE_EXTRA_CA_CERTS), from an origin listed in
 * `allow_origins`. Needs openssl; Node only.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { notesMcpServer } from "../../examples/mcp_server.ts";
import { type NodeServer, serveNode } from "../../lib/adapters/node.ts";
import { introspectionTokenVerifier } from "../../mod.ts";
import { callbackListener, connectAndCall, provider } from "./sdk_helpers.ts";

const HAVE_OPENSSL = spawnSync("openssl", ["version"]).status === 0;
const USER = { username: "demo", password: "demo-password" };
const RS_SECRET = "mcp-resource-server-secret-0123456789";

let dir = "";
let child: ChildProcess | undefined;
let documents: HttpsServer | undefined;
let mcp: NodeServer | undefined;
let issuer = "";
let documentUrl = "";

describe.skipIf(!HAVE_OPENSSL)("the real MCP SDK client and the reference server, configured by its file only", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "mcp-ref-"));
    const made = spawnSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
      "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-subj", "/CN=127.0.0.1",
      "-addext", "subjectAltName=IP:127.0.0.1",
    ]);
    if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr}`);

    let document = "";
    documents = createHttpsServer({ key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) }, (_, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(document);
    });
    await new Promise<void>((resolve) => documents!.listen(0, "127.0.0.1", resolve));
    const documentOrigin = `https://127.0.0.1:${(documents.address() as AddressInfo).port}`;
    documentUrl = `${documentOrigin}/oauth/client.json`;
    document = JSON.stringify({
      client_id: documentUrl, client_name: "SDK host", redirect_uris: ["http://127.0.0.1/callback"],
      grant_types: ["authorization_code", "refresh_token"], token_endpoint_auth_method: "none",
    });

    let handler: ((request: Request) => Promise<Response>) | undefined;
    mcp = await serveNode({ fetch: (request: Request) => handler!(request) }, { port: 0 });
    const resource = `${mcp.url}/mcp`;
    const config = {
      store: "memory",
      users: [{ username: USER.username, password: USER.password }],
      scopes: [{ name: "notes.read", description: "Read your notes" }, { name: "notes.write", description: "Write your notes" }],
      clients: [{
        client_id: "notes-mcp", client_secret: RS_SECRET, name: "Notes MCP server", redirect_uris: [],
        scopes: ["notes.read"], grant_types: ["client_credentials"], introspection: "all",
      }],
      scope_policy: "multiple",
      default_scope: "notes.read",
      resources: [resource],
      client_metadata_documents: { enabled: true, allow_origins: [documentOrigin] },
      registration: { enabled: true },
    };
    writeFileSync(join(dir, "config.json"), JSON.stringify(config));
    child = spawn(process.execPath, ["--import", "tsx", "lib/cli/serve.ts", "--port", "0", "--config", join(dir, "config.json")], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, "cert.pem") },
    });
    issuer = await new Promise<string>((resolve, reject) => {
      let output = "";
      const timer = setTimeout(() => reject(new Error(`the reference server did not start: ${output}`)), 30_000);
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /listening on (http:\/\/\S+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!.replace(/\/$/, ""));
        }
      };
      child!.stdout!.on("data", read);
      child!.stderr!.on("data", read);
      child!.once("exit", (code) => reject(new Error(`the reference server exited (${code}): ${output}`)));
    });
    handler = notesMcpServer({
      resource, authorizationServers: [issuer], scopesSupported: ["notes.read", "notes.write"],
      requiredScopes: ["notes.read", "notes.write"],
      verify: introspectionTokenVerifier({ endpoint: `${issuer}/introspect`, clientId: "notes-mcp", clientSecret: RS_SECRET }),
    });
  }, 45_000);

  afterAll(async () => {
    child?.kill("SIGTERM");
    await mcp?.close();
    documents?.closeAllConnections();
    await new Promise<void>((resolve) => documents ? documents.close(() => resolve()) : resolve());
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test.each(["client metadata document", "dynamic registration"])("through a %s: several scopes, signed in, tool called", async (mode) => {
    const callback = await callbackListener();
    try {
      const host = provider(callback.url, mode === "client metadata document" ? documentUrl : undefined);
      const { authorizationUrl, whoami } = await connectAndCall(`${mcp!.url}/mcp`, host, callback, USER);
      expect(authorizationUrl.origin).toBe(issuer);
      expect(authorizationUrl.searchParams.get("scope")).toBe("notes.read notes.write");
      expect(whoami).toMatchObject({ user: USER.username, scope: "notes.read notes.write", aud: [`${mcp!.url}/mcp`] });
      expect(whoami.client_id === documentUrl).toBe(mode === "client metadata document");
    } finally {
      await callback.close();
    }
  });
});
