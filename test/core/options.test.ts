// Options and registrations are checked at once, with errors that name the bad value.
import { describe, expect, test } from "vitest";
import { ConfigurationError, createAuthorizationServer } from "../../mod.ts";

const base = { issuer: "https://auth.example.com", scopes: { read: "Read" } };

describe("createAuthorizationServer checks its options", () => {
  test.each([
    [{ issuer: "not a url" }, /"issuer" must be an absolute URL: "not a url"/],
    [{ issuer: "http://auth.example.com" }, /https/],
    [{ issuer: "https://auth.example.com?x=1" }, /no query or fragment/],
    [{ scopes: {} }, /at least one scope/],
    [{ scopes: { "two words": "x" } }, /"scopes" names "two words", which is no RFC 6749 scope token/],
    [{ registraton: { enabled: true } }, /"registraton" is not an option \(did you mean "registration"\?\)/],
    [{ registration: { enabled: true, initialAccessToken: "short" } }, /"registration.initialAccessToken" must be at least 16 characters/],
    [{ refreshGraceSeconds: 4000 }, /"refreshGraceSeconds" must be at most 3600/],
    [{ cors: { origins: ["https://a.example/path"] } }, /"cors.origins" must list origins/],
    [{ lifetimes: { accessToken: 0 } }, /lifetimes.accessToken/],
    [{ lifetimes: { refreshToken: 1.5 } }, /lifetimes.refreshToken/],
    [{ secret: "short" }, /at least 32 bytes/],
    [{ paths: { token: "token" } }, /paths.token/],
    [{ limits: { maxBodyBytes: -1 } }, /limits.maxBodyBytes/],
  ])("%j", (override, message) => {
    expect(() => createAuthorizationServer({ ...base, ...override } as never)).toThrow(ConfigurationError);
    expect(() => createAuthorizationServer({ ...base, ...override } as never)).toThrow(message);
  });

  test("a library error names the option's path, so a config file can name its key", () => {
    let error: unknown;
    try {
      createAuthorizationServer({ ...base, registration: { enabled: true, initialAccessToken: "short" } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).option).toBe("registration.initialAccessToken");
  });

  test("http is allowed on loopback issuers only", () => {
    expect(createAuthorizationServer({ ...base, issuer: "http://127.0.0.1:8080" }).issuer).toBe("http://127.0.0.1:8080");
    expect(createAuthorizationServer({ ...base, issuer: "http://localhost:8080/" }).issuer).toBe("http://localhost:8080");
  });
});

describe("client registration checks the record", () => {
  const server = createAuthorizationServer(base);
  test.each([
    [{ type: "public", redirect_uris: ["https://a/cb"], client_secret: "0123456789abcdef0" }, /must not have a secret/],
    [{ type: "public", grant_types: ["client_credentials"] }, /cannot use client_credentials/],
    [{ type: "confidential", redirect_uris: [], grant_types: ["authorization_code"] }, /needs at least one redirect URI/],
    [{ type: "confidential", redirect_uris: ["https://a/cb#frag"] }, /fragment/],
    [{ type: "confidential", redirect_uris: ["http://app.example/cb"] }, /uses http on a host that is not loopback/],
    [{ type: "confidential", redirect_uris: ["/relative"] }, /not an absolute URI/],
    [{ type: "confidential", redirect_uris: ["https://a/cb"], scopes: ["write"] }, /unknown scope "write"/],
    [{ type: "confidential", redirect_uris: ["https://a/cb"], client_secret: "short" }, /at least 16 characters/],
    [{ type: "confidential", redirect_uris: ["https://a/cb"], grant_types: ["password"] }, /unknown grant type "password"/],
    [{ type: "other" }, /"type" must be/],
  ])("%j", async (override, message) => {
    await expect(server.clients.register({ name: "X", scopes: ["read"], ...override } as never)).rejects.toThrow(message);
  });

  test("a generated secret is returned once and only its hash is stored", async () => {
    const { client, client_secret } = await server.clients.register({ name: "Gen", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] });
    expect(client_secret).toBeTruthy();
    const stored = await server.clients.get(client.client_id);
    expect(JSON.stringify(stored)).not.toContain(client_secret);
  });

  test("native-app redirect URIs: custom schemes and loopback http are allowed", async () => {
    await expect(server.clients.register({ name: "App", type: "public", scopes: ["read"], redirect_uris: ["com.example.app:/cb", "http://127.0.0.1:5000/cb"] })).resolves.toBeTruthy();
  });
});
