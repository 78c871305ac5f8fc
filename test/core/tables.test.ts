/**
 * The grant and client-authentication registries: the metadata, the token endpoint and client registration all
 * follow the one table of each, through the public handler.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { ISSUER, errorOf, fixture, type Fixture, postToken, SECRETS } from "../helpers.ts";

let f: Fixture;
let metadata: Record<string, unknown>;
beforeAll(async () => {
  f = await fixture();
  const response = await f.server.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`));
  metadata = (await response.json()) as Record<string, unknown>;
});

describe("the grant registry", () => {
  it("lists the spec's three grants in the metadata, and the token endpoint dispatches each of them", async () => {
    expect(metadata.grant_types_supported).toEqual(["authorization_code", "refresh_token", "client_credentials"]);
    for (const grant of metadata.grant_types_supported as string[]) {
      const { error } = await errorOf(await postToken(f.server, { grant_type: grant, client_id: "spa" }));
      expect(error, grant).not.toBe("unsupported_grant_type");
    }
  });

  it("answers unsupported_grant_type for a name it does not hold, even one Object.prototype has", async () => {
    for (const grant of ["password", "constructor", "__proto__", "toString"]) {
      const { status, error } = await errorOf(await postToken(f.server, { grant_type: grant, client_id: "backend", client_secret: SECRETS.backend }));
      expect([grant, status, error]).toEqual([grant, 400, "unsupported_grant_type"]);
    }
  });

  it("checks a client's grant types against it: unknown names, confidential-only grants, redirect URIs", async () => {
    const register = (extra: Record<string, unknown>) =>
      f.server.clients.register({ client_id: "x", name: "X", type: "confidential", scopes: ["read"], redirect_uris: ["https://x.example/cb"], ...extra });
    await expect(register({ grant_types: ["password"] })).rejects.toThrow(/unknown grant type "password"/);
    await expect(register({ type: "public", grant_types: ["client_credentials"] })).rejects.toThrow(/cannot use client_credentials/);
    await expect(register({ redirect_uris: [], grant_types: ["authorization_code"] })).rejects.toThrow(/authorization_code needs at least one redirect URI/);
    await expect(register({ client_id: "cc-only", redirect_uris: [], grant_types: ["client_credentials"] })).resolves.toBeTruthy();
  });
});

describe("the client authentication registry", () => {
  it("lists its methods in the metadata; introspection only those that prove a secret or a key", () => {
    expect(metadata.token_endpoint_auth_methods_supported).toEqual(["client_secret_basic", "client_secret_post", "private_key_jwt", "none"]);
    expect(metadata.revocation_endpoint_auth_methods_supported).toEqual(["client_secret_basic", "client_secret_post", "private_key_jwt", "none"]);
    expect(metadata.introspection_endpoint_auth_methods_supported).toEqual(["client_secret_basic", "client_secret_post", "private_key_jwt"]);
  });

  it("refuses two methods at once, even a form secret without client_id beside Basic (RFC 6749 §2.3)", async () => {
    const basic = { authorization: `Basic ${btoa(`backend:${SECRETS.backend}`)}` };
    const both = await errorOf(await postToken(f.server, { grant_type: "client_credentials", client_secret: SECRETS.backend }, basic));
    expect([both.status, both.error, both.description]).toEqual([400, "invalid_request", "Use one client authentication method, not two"]);
    const other = await errorOf(await postToken(f.server, { grant_type: "client_credentials", client_id: "web" }, basic));
    expect([other.status, other.error]).toEqual([400, "invalid_request"]);
    const ok = await postToken(f.server, { grant_type: "client_credentials", client_id: "backend", scope: "export" }, basic);
    expect(ok.status, await ok.clone().text()).toBe(200);
  });
});
