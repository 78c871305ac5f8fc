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

  test("a document with no-store is fetched again each time; a failure holds back the next fetch for a minute only", async () => {
    const noStore = Response.json(doc(), { headers: { "cache-control": "no-store" } });
    const { fetch, fetched } = documents(new Response("down", { status: 500 }), noStore);
    const { server: s, clock } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch }, defaultScope: "read" });
    const first = await codeFlow(s, { client_id: CLIENT_ID });
    expect(first.authorize.status).toBe(400);
    expect((await codeFlow(s, { client_id: CLIENT_ID })).authorize.status).toBe(400);
    expect(fetched.length).toBe(1); // the failure is remembered: no second fetch within the minute
    clock.advance(61);
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

/** GETs the authorization page of `clientId` from `address`. */
function authorizePage(s: { fetch: (r: Request, info?: unknown) => Promise<Response> }, clientId: string, address = "192.0.2.1") {
  return s.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams({
    response_type: "code", client_id: clientId, redirect_uri: "http://127.0.0.1:6000/callback", scope: "read",
    code_challenge: "x".repeat(43), code_challenge_method: "S256",
  })}`), { remoteAddr: { hostname: address } });
}

/** A document server that answers every URL with its own valid document. */
function everyUrl(extra: Record<string, unknown> = {}) {
  const fetched: string[] = [];
  const fetch = async (request: Request) => {
    fetched.push(request.url);
    return Response.json(doc({ client_id: request.url, ...extra }), { headers: { "cache-control": "max-age=600" } });
  };
  return { fetch, fetched };
}

describe("a ceiling per address on new document clients, and failures remembered briefly", () => {
  test("past maxPerHour new URLs from one address: 429 with Retry-After, nothing fetched or stored", async () => {
    const { fetch, fetched } = everyUrl();
    const { server: s, storage } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch, maxPerHour: 3 }, defaultScope: "read" });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await authorizePage(s, `https://app${i}.example/c.json`)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
    expect(fetched.length).toBe(3);
    expect((await storage.listClients()).filter((c) => c.origin === "document").length).toBe(3);
    const blocked = await authorizePage(s, "https://app9.example/c.json");
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
    // The clients it already has still work for that address; other addresses are not blocked.
    expect((await authorizePage(s, "https://app0.example/c.json")).status).toBe(200);
    expect((await authorizePage(s, "https://app9.example/c.json", "192.0.2.2")).status).toBe(200);
  });

  test("the issue's flood: 100 URLs from one address make at most 20 fetches and 20 clients (the default)", async () => {
    const { fetch, fetched } = everyUrl();
    const { server: s, storage } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch }, defaultScope: "read" });
    await Promise.all(Array.from({ length: 100 }, (_, i) => authorizePage(s, `https://flood${i}.example/c.json`).then((r) => r.arrayBuffer())));
    expect(fetched.length).toBeLessThanOrEqual(20);
    expect((await storage.listClients()).filter((c) => c.origin === "document").length).toBeLessThanOrEqual(20);
  });

  test("a failed URL is not fetched again for a minute, whatever the number of requests", async () => {
    const { fetch, fetched } = documents(new Response("gone", { status: 404 }));
    const { server: s, clock } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch }, defaultScope: "read" });
    for (let i = 0; i < 30; i++) expect((await authorizePage(s, CLIENT_ID, `192.0.2.${i}`)).status).toBe(400);
    expect(fetched.length).toBe(1);
    clock.advance(61);
    await authorizePage(s, CLIENT_ID);
    expect(fetched.length).toBe(2);
  });
});

describe("refused documents are events, not errors", () => {
  test("a refusal is the audit event client.document_refused with a fixed reason; onError hears nothing", async () => {
    const events: Record<string, unknown>[] = [];
    const answers = [new Response("no", { status: 404 }), new Response("{", { status: 200 }), Response.json(doc({ client_id: "https://x.example/c" }))];
    let n = 0;
    const fetch = async () => answers[n++]!;
    const { server: s, errors } = await mcpFixture({
      clientMetadataDocuments: { enabled: true, fetch }, defaultScope: "read", onEvent: (event) => void events.push({ ...event }),
    });
    for (const id of ["https://a.example/1", "https://a.example/2", "https://a.example/3"]) expect((await authorizePage(s, id)).status).toBe(400);
    expect(events.filter((e) => e.type === "client.document_refused").map((e) => [e.client_id, e.reason, e.address])).toEqual([
      ["https://a.example/1", "status", "192.0.2.1"],
      ["https://a.example/2", "invalid", "192.0.2.1"],
      ["https://a.example/3", "invalid", "192.0.2.1"],
    ]);
    expect(errors).toEqual([]);
  });
});

describe("document clients that never obtained a token are removed", () => {
  test("after a day by default, at the next new document client; used and paused ones stay", async () => {
    const { fetch } = everyUrl();
    const { server: s, clock, storage } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch }, defaultScope: "read" });
    expect((await authorizePage(s, "https://idle.example/c.json")).status).toBe(200);
    expect((await codeFlow(s, { client_id: "https://used.example/c.json" })).status).toBe(200);
    expect((await authorizePage(s, "https://paused.example/c.json")).status).toBe(200);
    await s.clients.pause("https://paused.example/c.json");
    clock.advance(25 * 3600);
    expect((await authorizePage(s, "https://new.example/c.json")).status).toBe(200);
    expect(await storage.getClient("https://idle.example/c.json")).toBeNull();
    expect(await storage.getClient("https://used.example/c.json")).not.toBeNull();
    expect((await storage.getClient("https://paused.example/c.json"))?.active).toBe(false);
    expect(await storage.getClient("https://new.example/c.json")).not.toBeNull();
  });

  test("removeUnusedAfterDays sets the delay", async () => {
    const { fetch } = everyUrl();
    const { server: s, clock, storage } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch, removeUnusedAfterDays: 3 }, defaultScope: "read" });
    await authorizePage(s, "https://idle.example/c.json");
    clock.advance(49 * 3600);
    await authorizePage(s, "https://new1.example/c.json");
    expect(await storage.getClient("https://idle.example/c.json")).not.toBeNull();
    clock.advance(24 * 3600);
    await authorizePage(s, "https://new2.example/c.json");
    expect(await storage.getClient("https://idle.example/c.json")).toBeNull();
  });
});

describe("names and types in documents", () => {
  test("a document named like a configured client is admitted, and its consent page says it is not that client", async () => {
    const { fetch } = everyUrl({ client_name: "C\u043emmand line" });
    const { server: s } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch }, defaultScope: "read" });
    const html = await (await authorizePage(s, "https://evil.example/c.json")).text();
    expect(html).toContain('role="alert">This is not <strong>Command line</strong>');
    expect(html).toContain('<span class="tag">unverified</span>');
    expect(html).toContain("evil.example");
  });

  test.each(["Tool\u001b]0;owned\u0007", "Tool\u202egnp.exe"])("a document whose name holds %j is refused", async (name) => {
    const { fetch } = everyUrl({ client_name: name });
    const { server: s } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch }, defaultScope: "read" });
    expect((await authorizePage(s, "https://tool.example/c.json")).status).toBe(400);
  });

  test("application_type: web with a loopback redirect is refused; none declared is recorded as native", async () => {
    const web = everyUrl({ application_type: "web" });
    const { server: s1 } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch: web.fetch }, defaultScope: "read" });
    expect((await authorizePage(s1, "https://web.example/c.json")).status).toBe(400);
    const none = everyUrl();
    const { server: s2, storage } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch: none.fetch }, defaultScope: "read" });
    expect((await authorizePage(s2, "https://native.example/c.json")).status).toBe(200);
    expect((await storage.getClient("https://native.example/c.json"))?.metadata?.application_type).toBe("native");
  });
});

describe("documents as MCP hosts publish them, under the drafts' differing rules (client_metadata_documents.md)", () => {
  const published = (extra: Record<string, unknown>, init: ResponseInit = {}) =>
    async () => new Response(JSON.stringify({ client_id: CLIENT_ID, ...extra }), { headers: { "content-type": "application/json" }, ...init });
  const run = async (answer: () => Promise<Response>, redirect: string) => {
    const { server: s, storage } = await mcpFixture({ clientMetadataDocuments: { enabled: true, fetch: answer }, defaultScope: "read" });
    return { flow: await codeFlow(s, { client_id: CLIENT_ID, redirect_uri: redirect }), storage };
  };

  test.each([
    ["the MCP specification's example", {
      client_name: "Example MCP Client", client_uri: "https://app.example.com", logo_uri: "https://app.example.com/logo.png",
      redirect_uris: ["http://127.0.0.1:3000/callback", "http://localhost:3000/callback"], grant_types: ["authorization_code"],
      response_types: ["code"], token_endpoint_auth_method: "none",
    }, "http://127.0.0.1:3000/callback", "native"],
    ["a web connector with an https callback, refresh and an extra grant", {
      client_name: "Web Connector", redirect_uris: ["https://app.example.com/api/mcp/auth_callback"],
      grant_types: ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"], token_endpoint_auth_method: "none",
    }, "https://app.example.com/api/mcp/auth_callback", "web"],
    ["RP-Metadata-Choices offering none", {
      client_name: "Choices", redirect_uris: ["https://app.example.com/cb"], token_endpoint_auth_methods_supported: ["private_key_jwt", "none"],
    }, "https://app.example.com/cb", "web"],
    ["a native editor with a loopback port and a claimed https redirect", {
      client_name: "Editor", application_type: "native", redirect_uris: ["http://127.0.0.1:33418", "https://editor.example.com/redirect"],
      grant_types: ["authorization_code", "refresh_token"], token_endpoint_auth_method: "none",
    }, "http://127.0.0.1:33418", "native"],
  ])("accepted: %s", async (_, document, redirect, type) => {
    const { flow, storage } = await run(published(document), redirect);
    expect(flow.status).toBe(200);
    expect((await storage.getClient(CLIENT_ID))?.metadata?.application_type).toBe(type);
  });

  test("served as text/plain from a static file host: accepted (the content type is not checked)", async () => {
    const document = { client_name: "Static", redirect_uris: ["http://127.0.0.1/callback"], token_endpoint_auth_method: "none" };
    expect((await run(published(document, { headers: { "content-type": "text/plain" } }), "http://127.0.0.1/callback")).flow.status).toBe(200);
  });

  test.each([
    ["no client_name (optional since -02; MCP requires it)", { redirect_uris: ["http://127.0.0.1/callback"], token_endpoint_auth_method: "none" }, {}],
    ["a 203 answer (-01: 200 only)", { client_name: "X", redirect_uris: ["http://127.0.0.1/callback"] }, { status: 203 }],
  ])("refused: %s", async (_, document, init) => {
    const { flow } = await run(published(document, init), "http://127.0.0.1/callback");
    expect(flow.authorize.status).toBe(400);
    expect(flow.authorize.headers.get("location")).toBeNull();
  });
});
