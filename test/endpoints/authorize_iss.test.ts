// iss on every authorization response (RFC 9207 §2; MCP 2026-07-28, SEP-2468): the code and every error sent
// back to the client carry iss, byte for byte the issuer of the metadata document, which clients compare
// without normalising. Pages (an unverified client or redirect URI) are no authorization response.
import { describe, expect, test } from "vitest";
import { csrfOf, pkce } from "../helpers.ts";
import { LOOPBACK, MCP, mcpFixture } from "../mcp_helpers.ts";

const FORM = { "content-type": "application/x-www-form-urlencoded" };

describe.each([
  ["at the root", "https://auth.example.com"],
  ["below a path, configured with a trailing slash", "https://Auth.Example.com/tenant-1/"],
])("every authorization response carries the issuer %s", (_, configured) => {
  test("the code, and each error of each step", async () => {
    const { server } = await mcpFixture({ issuer: configured });
    const issuer = (await (await server.fetch(new Request(`${new URL(configured).origin}/.well-known/oauth-authorization-server${new URL(configured).pathname.replace(/\/$/, "")}`))).json()).issuer;
    expect(issuer).toBe(server.issuer);
    const { challenge } = await pkce();
    const base = { response_type: "code", client_id: "cli", redirect_uri: `${LOOPBACK}?keep=1`, scope: "read", state: "s t", code_challenge: challenge, code_challenge_method: "S256" };
    await server.clients.register({ client_id: "cli", name: "CLI", type: "public", redirect_uris: [`${LOOPBACK}?keep=1`], scopes: ["read", "write"] });
    const url = (params: Record<string, string | undefined>) => {
      const all = Object.entries({ ...base, ...params }).filter((e): e is [string, string] => e[1] !== undefined);
      return `${server.issuer}/authorize?${new URLSearchParams(all)}`;
    };
    const answers: [string, Response][] = [];
    const get = async (what: string, params: Record<string, string | undefined>, headers: Record<string, string> = {}, more = "") =>
      answers.push([what, await server.fetch(new Request(url(params) + more, { headers }))]);
    await get("invalid_scope", { scope: "admin" });
    await get("unsupported_response_type", { response_type: "token" });
    await get("invalid_request (no PKCE)", { code_challenge: undefined, code_challenge_method: undefined });
    await get("invalid_request (repeated)", {}, {}, "&scope=write");
    await get("invalid_target", { resource: "https://unknown.example/mcp" });
    await get("login_required", { prompt: "none" }, { "x-test-user": "none" });
    await get("consent_required", { prompt: "none" });
    for (const decision of ["allow", "deny", "maybe"]) {
      const page = await server.fetch(new Request(url({ resource: MCP })));
      const csrf = csrfOf(await page.text());
      answers.push([`decision ${decision}`, await server.fetch(new Request(url({ resource: MCP }), { method: "POST", headers: FORM, body: new URLSearchParams({ decision, csrf }) }))]);
    }
    for (const [what, response] of answers) {
      const location = response.headers.get("location");
      expect(location, `${what}: a redirect`).not.toBeNull();
      const params = new URL(location!).searchParams;
      expect(params.getAll("iss"), what).toEqual([issuer]);
      expect(params.get("keep"), `${what}: the redirect URI's own query is kept`).toBe("1");
      expect(params.get("state"), what).toBe("s t");
    }
    expect(answers.map(([, r]) => new URL(r.headers.get("location")!).searchParams.get("error") ?? "code")).toEqual([
      "invalid_scope", "unsupported_response_type", "invalid_request", "invalid_request", "invalid_target", "login_required",
      "consent_required", "code", "access_denied", "invalid_request",
    ]);
  });
});
