// Scope rules (lib/scope.ts, RFC 6749 §3.3 and §6) as a client sees them at the token endpoint: each refusal is
// invalid_scope with a description that says which rule it broke. Mutation testing (issue 15 item 12) found
// rules no test told apart.
import { describe, expect, test } from "vitest";
import { errorOf, fixture, postToken, SECRETS, spaTokens } from "./helpers.ts";
import { codeFlow, mcpFixture, post } from "./mcp_helpers.ts";

const cc = (scope: string | undefined, clientId = "backend", secret: string = SECRETS.backend) =>
  ({ grant_type: "client_credentials", client_id: clientId, client_secret: secret, ...(scope === undefined ? {} : { scope }) });

describe("the spec's policy: exactly one scope per request", () => {
  test.each([
    ["two scopes", "read export", "Exactly one scope per request is allowed"],
    ["a scope with a tab", "read\texport", "Exactly one scope per request is allowed"],
    ["a malformed scope", 'read"', "The scope is malformed"],
    ["a scope the client may not have", "admin", "The scope is not allowed for this client"],
    ["none, and no default", undefined, "The scope parameter is required"],
  ])("%s: invalid_scope, %j", async (_, scope, description) => {
    const { server } = await fixture();
    expect(await errorOf(await postToken(server, cc(scope)))).toEqual({ status: 400, error: "invalid_scope", description });
  });

  test("a refresh that asks another scope cannot change it", async () => {
    const { server } = await fixture();
    const { refresh_token } = await spaTokens(server);
    expect(await errorOf(await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token, scope: "write" })))
      .toEqual({ status: 400, error: "invalid_scope", description: "A refresh cannot change the scope" });
  });
});

describe("the rfc6749 policy: space-delimited scopes", () => {
  const refresh = (server: Awaited<ReturnType<typeof mcpFixture>>["server"], refresh_token: string, scope?: string) =>
    post(server, "/token", { grant_type: "refresh_token", client_id: "cli", refresh_token, ...(scope === undefined ? {} : { scope }) });

  test.each([
    ["a malformed second scope", "read wr\"ite"],
    ["two spaces between scopes", "read  write"],
  ])("%s: invalid_scope, malformed", async (_, scope) => {
    const { server } = await mcpFixture();
    const { body } = await codeFlow(server, { scope: "read write" });
    expect(await errorOf(await refresh(server, String(body.refresh_token), scope)))
      .toEqual({ status: 400, error: "invalid_scope", description: "The scope is malformed" });
  });

  test("a refresh may repeat or narrow several scopes, never widen them", async () => {
    const { server } = await mcpFixture();
    const { body } = await codeFlow(server, { scope: "read write" });
    const same = await refresh(server, String(body.refresh_token), "write read");
    expect(same.status).toBe(200);
    const repeated = await same.json();
    expect(repeated.scope).toBe("write read");
    const narrowed = await (await refresh(server, repeated.refresh_token, "read")).json();
    expect(narrowed.scope).toBe("read");
    // RFC 6749 §6: the new refresh token keeps the grant's scope, so the next refresh may ask for both again.
    const again = await (await refresh(server, narrowed.refresh_token)).json();
    expect(again.scope).toBe("read write");
    const wider = await refresh(server, again.refresh_token, "read export");
    expect(await errorOf(wider)).toEqual({ status: 400, error: "invalid_scope", description: "A refresh cannot widen the scope" });
  });

  test("a scope asked twice is granted once", async () => {
    const { server } = await mcpFixture();
    const { body } = await codeFlow(server, { scope: "read write" });
    expect((await (await refresh(server, String(body.refresh_token), "read read")).json()).scope).toBe("read");
  });
});
