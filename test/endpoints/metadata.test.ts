// Authorization server metadata (RFC 8414): the document the core and the enabled features build.
import { describe, expect, test } from "vitest";
import { fixture, ISSUER } from "../helpers.ts";

test("metadata (RFC 8414) names the endpoints and what they support", async () => {
  const { server } = await fixture();
  const response = await server.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`));
  const meta = await response.json();
  expect(meta).toMatchObject({
    issuer: ISSUER,
    authorization_endpoint: `${ISSUER}/authorize`,
    token_endpoint: `${ISSUER}/token`,
    revocation_endpoint: `${ISSUER}/revoke`,
    introspection_endpoint: `${ISSUER}/introspect`,
    response_types_supported: ["code"],
    code_challenge_methods_supported: ["S256"],
    authorization_response_iss_parameter_supported: true,
  });
  expect(meta.scopes_supported).toEqual(["read", "write", "export", "admin"]);
  expect(server.metadata()).toEqual(meta);
});

describe("authorization server metadata (RFC 8414)", () => {
  describe("authorization server metadata (RFC 8414)", () => {
    const wellKnown = async (server: Awaited<ReturnType<typeof fixture>>["server"]) => {
      const response = await server.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`));
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/json;charset=UTF-8");
      expect(response.headers.get("cache-control")).toBe("max-age=300");
      return response.json() as Promise<Record<string, unknown>>;
    };

    test("the whole document, as served", async () => {
      const { server } = await fixture();
      const doc = await wellKnown(server);
      expect(doc).toEqual({
        issuer: ISSUER,
        authorization_endpoint: `${ISSUER}/authorize`,
        token_endpoint: `${ISSUER}/token`,
        revocation_endpoint: `${ISSUER}/revoke`,
        introspection_endpoint: `${ISSUER}/introspect`,
        scopes_supported: ["read", "write", "export", "admin"],
        response_types_supported: ["code"],
        response_modes_supported: ["query"],
        grant_types_supported: expect.arrayContaining(["authorization_code", "refresh_token", "client_credentials"]),
        token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"],
        revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"],
        introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
        // RFC 8414 §2: private_key_jwt's algorithms (asymmetric only).
        token_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "EdDSA", "RS256", "PS256"],
        revocation_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "EdDSA", "RS256", "PS256"],
        introspection_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "EdDSA", "RS256", "PS256"],
        code_challenge_methods_supported: ["S256"],
        authorization_response_iss_parameter_supported: true,
      });
      // toStrictEqual: the library API must not hand out keys whose value is undefined either.
      expect(server.metadata()).toStrictEqual(doc);
    });

    test("without the clean paths, the spec's index.php addresses", async () => {
      const { server } = await fixture({ paths: { authorize: null, token: null } });
      expect(await wellKnown(server)).toMatchObject({
        authorization_endpoint: `${ISSUER}/index.php?module=OAuth2&action=authorize`,
        token_endpoint: `${ISSUER}/index.php?module=OAuth2&action=token`,
      });
    });

    test("Client ID Metadata Documents, when on, are announced", async () => {
      const { server } = await fixture({ clientMetadataDocuments: { enabled: true, fetch: async () => new Response(null, { status: 404 }) } });
      expect((await wellKnown(server)).client_id_metadata_document_supported).toBe(true);
    });
  });
});
