// Client ID Metadata Documents (issue 11 item 5): raw-string URL checks, a fenced fetch (no redirects, 5 KB,
// deadline, private hosts refused, injectable fetch and allow hook), a bounded cache that never keeps errors,
// documents with secrets refused, unknown grant types ignored, and a consent page that names hosts.
import { describe, expect, test } from "vitest";
import { isClientIdUrl } from "../../lib/features/client_metadata_documents.ts";
import { ISSUER } from "../helpers.ts";
import { codeFlow, mcpFixture, post } from "../mcp_helpers.ts";

const CLIENT_ID = "https://app.example.com/oauth/client.json";

/** A document server: each fetch takes the next answer (or the last one); records what was fetched. */
function documents(...answers: (Record<string, unknown> | Response | (() => Response | Promise<Response>))[]) {
  const fetched: Request[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    fetched.push(request);
    const answer = answers.length > 1 ? answers.shift()! : answers[0]!;
    if (typeof answer === "function") return answer();
    if (answer instanceof Response) return answer.clone();
    return Response.json(answer, { headers: { "cache-control": "max-age=600" } });
  };
  return { fetch, fetched };
}

const doc = (extra: Record<string, unknown> = {}) => ({
  client_id: CLIENT_ID,
  client_name: "Example MCP Host",
  redirect_uris: ["http://127.0.0.1/callback", "http://localhost/callback"],
  grant_types: ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
  token_endpoint_auth_method: "none",
  ...extra,
});

async function server(fetch: (request: Request) => Promise<Response>, extra: Record<string, unknown> = {}) {
  return (await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch, ...extra }, defaultScope: "read" })).server;
}

describe("the client identifier URL, checked on the raw string", () => {
  test.each([
    ["https://app.example.com/client.json", true],
    ["https://app.example.com:8443/c?v=1", true],
    ["http://app.example.com/client.json", false],
    ["https://app.example.com/", false],
    ["https://app.example.com", false],
    ["https://user:pw@app.example.com/c", false],
    ["https://app.example.com/c#frag", false],
    ["https://app.example.com/a/../c", false],
    ["https://app.example.com/a/./c", false],
    ["https://app.example.com/a/%2e%2E/c", false],
    ["https://app.example.com/a\\c", false],
  ])("%s: %s", (url, ok) => {
    expect(isClientIdUrl(url)).toBe(ok);
  });
  test("a listed origin may be http", () => {
    expect(isClientIdUrl("http://127.0.0.1:8123/client.json", ["http://127.0.0.1:8123"])).toBe(true);
    expect(isClientIdUrl("http://127.0.0.1:8124/client.json", ["http://127.0.0.1:8123"])).toBe(false);
  });
});

describe("a valid document", () => {
  test("lets the client run the code flow as a public client, with the server's default scope", async () => {
    const { fetch, fetched } = documents(doc());
    const s = await server(fetch);
    const { status, body } = await codeFlow(s, { client_id: CLIENT_ID, redirect_uri: "http://127.0.0.1:49152/callback" }, {});
    expect(status).toBe(200);
    expect(body.scope).toBe("read");
    expect(fetched[0]!.redirect).toBe("manual");
    const again = await codeFlow(s, { client_id: CLIENT_ID, redirect_uri: "http://localhost:5000/callback", scope: "read write" });
    expect(again.status).toBe(200);
    expect(fetched.length).toBe(1); // cached within max-age
    const refreshed = await post(s, "/token", { grant_type: "refresh_token", client_id: CLIENT_ID, refresh_token: String(again.body.refresh_token) });
    expect(refreshed.status).toBe(200);
    expect(s.metadata().client_id_metadata_document_supported).toBe(true);
  });

  test("the RP-Metadata-Choices array is accepted when it offers none", async () => {
    const s = await server(documents(doc({ token_endpoint_auth_method: undefined, token_endpoint_auth_methods_supported: ["private_key_jwt", "none"] })).fetch);
    expect((await codeFlow(s, { client_id: CLIENT_ID })).status).toBe(200);
  });

  test("the consent page names the client_id host and the redirect host, and warns about loopback", async () => {
    const s = await server(documents(doc({ client_name: `<img src=x onerror=alert(1)>` })).fetch);
    const page = await s.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams({
      response_type: "code", client_id: CLIENT_ID, redirect_uri: "http://127.0.0.1:6000/callback", scope: "read",
      code_challenge: "x".repeat(43), code_challenge_method: "S256",
    })}`));
    const html = await page.text();
    expect(html).toContain("app.example.com");
    expect(html).toContain("http://127.0.0.1:6000");
    expect(html).toContain("a program on this device");
    expect(html).not.toContain("<img");
  });

  test("a document with no-store is fetched again each time; an error is never cached", async () => {
    const noStore = Response.json(doc(), { headers: { "cache-control": "no-store" } });
    const { fetch, fetched } = documents(new Response("down", { status: 500 }), noStore);
    const s = await server(fetch);
    const first = await codeFlow(s, { client_id: CLIENT_ID });
    expect(first.authorize.status).toBe(400);
    expect((await codeFlow(s, { client_id: CLIENT_ID })).status).toBe(200);
    expect((await codeFlow(s, { client_id: CLIENT_ID })).status).toBe(200);
    expect(fetched.length).toBe(5); // the failure once, then every page and every form post of the two flows
  });
});

test("concurrent requests for one uncached document share one fetch", async () => {
  const { fetch, fetched } = documents(() => new Promise<Response>((resolve) => setTimeout(() => resolve(Response.json(doc())), 20)));
  const s = await server(fetch);
  const url = `${ISSUER}/authorize?${new URLSearchParams({
    response_type: "code", client_id: CLIENT_ID, redirect_uri: "http://127.0.0.1/callback", scope: "read",
    code_challenge: "x".repeat(43), code_challenge_method: "S256",
  })}`;
  const pages = await Promise.all(Array.from({ length: 10 }, () => s.fetch(new Request(url))));
  expect(pages.map((p) => p.status)).toEqual(Array(10).fill(200));
  expect(fetched.length).toBe(1);
});

describe("refused documents get an error page and no redirect", () => {
  test.each([
    ["another client_id", doc({ client_id: CLIENT_ID + "x" })],
    ["no client_name", doc({ client_name: undefined })],
    ["no redirect_uris", doc({ redirect_uris: [] })],
    ["a client_secret", doc({ client_secret: "s3cret" })],
    ["a private key", doc({ jwks: { keys: [{ kty: "EC", crv: "P-256", x: "a", y: "b", d: "c" }] } })],
    ["a secret auth method", doc({ token_endpoint_auth_method: "client_secret_basic" })],
    ["a javascript: redirect", doc({ redirect_uris: ["javascript:alert(1)"] })],
    ["no authorization_code", doc({ grant_types: ["client_credentials"] })],
    ["only private_key_jwt", doc({ token_endpoint_auth_method: "private_key_jwt" })],
    ["choices without none", doc({ token_endpoint_auth_method: undefined, token_endpoint_auth_methods_supported: ["private_key_jwt"] })],
  ])("%s", async (_, document) => {
    const s = await server(documents(document).fetch);
    const { authorize } = await codeFlow(s, { client_id: CLIENT_ID });
    expect(authorize.status).toBe(400);
    expect(authorize.headers.get("location")).toBeNull();
  });

  test.each([
    ["a redirect", () => new Response(null, { status: 302, headers: { location: "https://elsewhere.example/c" } })],
    ["over 5 KB", () => Response.json(doc({ client_uri: "https://app.example.com/" + "a".repeat(6000) }))],
    ["over 5 KB, without a length", () => new Response(new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(JSON.stringify(doc()) + " ".repeat(6000))); c.close(); } }))],
    ["not JSON", () => new Response("<html>")],
    ["a network failure", () => { throw new TypeError("fetch failed"); }],
  ])("%s", async (_, answer) => {
    const s = await server(documents(answer).fetch);
    const { authorize } = await codeFlow(s, { client_id: CLIENT_ID });
    expect(authorize.status).toBe(400);
    expect(authorize.headers.get("location")).toBeNull();
  });

  test("a fetch that hangs is abandoned at the timeout", async () => {
    const hang = (request: Request) => new Promise<Response>((_, reject) => request.signal.addEventListener("abort", () => reject(request.signal.reason)));
    const s = await server(hang, { timeout: 50 });
    const { authorize } = await codeFlow(s, { client_id: CLIENT_ID });
    expect(authorize.status).toBe(400);
  });
});

describe("the SSRF guard", () => {
  test.each([
    "https://127.0.0.1/c.json", "https://[::1]/c.json", "https://localhost/c.json", "https://printer.local/c.json",
    "https://db.internal/c.json", "https://10.0.0.1/c.json", "https://0x7f000001/c.json", "https://intranet/c.json",
  ])("%s is never fetched", async (clientId) => {
    const { fetch, fetched } = documents(doc({ client_id: clientId }));
    const s = await server(fetch);
    const { authorize } = await codeFlow(s, { client_id: clientId });
    expect(authorize.status).toBe(400);
    expect(fetched.length).toBe(0);
  });

  test("the allow hook is asked before every fetch", async () => {
    const { fetch, fetched } = documents(doc());
    const asked: string[] = [];
    const s = await server(fetch, { allowFetch: (url: URL) => (asked.push(url.href), false) });
    expect((await codeFlow(s, { client_id: CLIENT_ID })).authorize.status).toBe(400);
    expect(asked).toEqual([CLIENT_ID]);
    expect(fetched.length).toBe(0);
  });

  test("listed origins are exempt from https and the private-host rule", async () => {
    const local = "http://127.0.0.1:8123/client.json";
    const { fetch } = documents(doc({ client_id: local }));
    const s = await server(fetch, { allowOrigins: ["http://127.0.0.1:8123"] });
    expect((await codeFlow(s, { client_id: local })).status).toBe(200);
  });
});

test("a client registered at that URL some other way is never replaced by its document", async () => {
  const { fetch, fetched } = documents(doc({ redirect_uris: ["https://evil.example/cb"] }));
  const s = await server(fetch);
  await s.clients.register({ client_id: CLIENT_ID, name: "Configured", type: "public", redirect_uris: ["http://127.0.0.1/callback"], scopes: ["read"] });
  expect((await codeFlow(s, { client_id: CLIENT_ID })).status).toBe(200);
  expect(fetched.length).toBe(0);
  expect((await s.clients.get(CLIENT_ID))?.name).toBe("Configured");
});

test("a paused document client stays paused", async () => {
  const { fetch } = documents(doc());
  const s = await server(fetch);
  expect((await codeFlow(s, { client_id: CLIENT_ID })).status).toBe(200);
  await s.clients.pause(CLIENT_ID);
  expect((await codeFlow(s, { client_id: CLIENT_ID })).authorize.status).toBe(400);
});

test("switched off (the default), a URL client_id is only looked up in the store", async () => {
  const { fetch, fetched } = documents(doc());
  const { server: s } = await mcpFixture({ clientMetadataDocuments: { enabled: false, fetch } });
  expect((await codeFlow(s, { client_id: CLIENT_ID })).authorize.status).toBe(400);
  expect(fetched.length).toBe(0);
  expect(s.metadata().client_id_metadata_document_supported).toBeUndefined();
});
