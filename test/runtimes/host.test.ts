// Findings 6 and 7 of issue 15 over raw sockets, against the reference server on Node, Deno and Bun: the Host
// header never picks an endpoint or a redirect target, a malformed Host gets 400 before routing, routing is on
// the request target as received, and no query string, code or token reaches the log.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { config, killAll, type Running, SECRETS, startReference } from "./reference_process.ts";
import { rawRequest } from "./raw_http.ts";

afterAll(killAll);

const AUTHORIZE = "/index.php?module=OAuth2&action=authorize&response_type=code&client_id=spa&redirect_uri=" +
  encodeURIComponent("http://127.0.0.1:9999/callback") + "&scope=read&state=SECRET-STATE-42&code_challenge=" + "E".repeat(43) +
  "&code_challenge_method=S256";
const CC_BODY = `grant_type=client_credentials&client_id=backend&client_secret=${SECRETS.backend}&scope=export`;

const get = (target: string, headers: string[]) => `GET ${target} HTTP/1.1\r\n${headers.join("\r\n")}\r\nConnection: close\r\n\r\n`;
const post = (target: string, headers: string[], body: string) =>
  `POST ${target} HTTP/1.1\r\n${headers.join("\r\n")}\r\nContent-Type: application/x-www-form-urlencoded\r\n` +
  `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;

describe.each(["node", "deno", "bun"])("on %s", (runtime) => {
  let server: Running;
  let host: string;
  beforeAll(async () => {
    server = await startReference(runtime, config());
    host = new URL(server.url).host;
  }, 30_000);
  afterAll(() => server?.stop());

  test.each([
    ["userinfo", "x@evil.example"],
    ["a space", "a b"],
    ["a port out of range", "evil:99999"],
    ["a path and query", "evil/index.php?module=OAuth2&action=token&"],
    ["an empty value", ""],
  ])("a Host with %s gets 400 at the authorization endpoint", async (_, value) => {
    const response = await rawRequest(server.url, get(AUTHORIZE, [`Host: ${value}`]));
    expect(response.status).toBe(400);
  });

  test("a Host naming the token endpoint does not turn POST /healthz into a token request", async () => {
    const response = await rawRequest(server.url, post("/healthz", ["Host: evil/index.php?module=OAuth2&action=token&"], CC_BODY));
    expect(response.status).toBe(400);
    expect(response.body).not.toContain("access_token");
  });

  test("two Host headers, or none on HTTP/1.1, get 400", async () => {
    expect((await rawRequest(server.url, get("/healthz", [`Host: ${host}`, `Host: ${host}`]))).status).toBe(400);
    expect((await rawRequest(server.url, get("/healthz", []))).status).toBe(400);
  });

  test("routing is on the target as received: no dot segments resolved", async () => {
    const response = await rawRequest(server.url, post("/api/../index.php?module=OAuth2&action=token", [`Host: ${host}`], CC_BODY));
    expect([400, 404]).toContain(response.status);
    expect(response.body).not.toContain("access_token");
  });

  test("an absolute-form target is refused (400), not served", async () => {
    const response = await rawRequest(server.url, post("http://evil.example/index.php?module=OAuth2&action=token", [`Host: ${host}`], CC_BODY));
    expect(response.status).toBe(400);
    expect(response.body).not.toContain("access_token");
  });

  test("a good Host still works, with or without a port", async () => {
    expect((await rawRequest(server.url, post("/index.php?module=OAuth2&action=token", [`Host: ${host}`], CC_BODY))).status).toBe(200);
    expect((await rawRequest(server.url, get("/healthz", ["Host: auth.example.com"]))).status).toBe(200);
    expect((await rawRequest(server.url, get("/healthz", ["Host: [::1]:8080"]))).status).toBe(200);
  });

  test("the log holds no query string, state, secret or stack trace", () => {
    const output = server.output();
    expect(output).not.toContain("SECRET-STATE-42");
    expect(output).not.toContain(SECRETS.backend);
    expect(output).not.toMatch(/module=OAuth2&action/);
    expect(output).not.toMatch(/\n\s+at /);
  });
});
