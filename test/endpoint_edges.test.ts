// Edges of the revocation and introspection endpoints and the form they share, found by mutation testing
// (item 12 of issue 15): each test fails when the rule it names is broken. Through the handler only, so the same
// file runs under vitest, bun test and deno test.
import { describe, expect, test } from "vitest";
import type { Storage } from "../lib/storage/types.ts";
import { memoryStorage } from "../lib/storage/memory.ts";
import { Clock, errorOf, fixture, ISSUER, postToken, REDIRECT, SECRETS, webCode } from "./helpers.ts";

const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });
const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = basic("web", SECRETS.web)) =>
  new Request(`${ISSUER}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });

/** A memory store that records which token lookups it was asked for, in order. */
function recordingStore(clock: Clock): { storage: Storage; lookups: string[] } {
  const storage = memoryStorage({ clock: clock.read });
  const lookups: string[] = [];
  const { findAccessToken, findRefreshToken } = storage;
  storage.findAccessToken = (hash, now) => (lookups.push("access"), findAccessToken.call(storage, hash, now));
  storage.findRefreshToken = (hash, now) => (lookups.push("refresh"), findRefreshToken.call(storage, hash, now));
  return { storage, lookups };
}

async function webTokens(server: Awaited<ReturnType<typeof fixture>>["server"]): Promise<{ access_token: string; refresh_token: string }> {
  const code = await webCode(server);
  const response = await postToken(server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code });
  expect(response.status).toBe(200);
  return response.json();
}

describe("token lookup: the hint says which kind to try first (RFC 7009 §2.1, RFC 7662 §2.1)", () => {
  test.each([
    ["introspect", "/introspect"],
    ["revoke", "/revoke"],
  ])("%s: every kind is found under every hint, and the hinted kind is asked for first", async (_, path) => {
    const clock = new Clock();
    const { storage, lookups } = recordingStore(clock);
    const { server } = await fixture({ storage, clock: clock.read });
    const cases = [
      { kind: "access_token", hint: undefined, expected: ["access"] },
      { kind: "access_token", hint: "access_token", expected: ["access"] },
      { kind: "access_token", hint: "refresh_token", expected: ["refresh", "access"] },
      { kind: "refresh_token", hint: undefined, expected: ["access", "refresh"] },
      { kind: "refresh_token", hint: "access_token", expected: ["access", "refresh"] },
      { kind: "refresh_token", hint: "refresh_token", expected: ["refresh"] },
      { kind: "refresh_token", hint: "something_else", expected: ["access", "refresh"] },
    ] as const;
    for (const { kind, hint, expected } of cases) {
      const tokens = await webTokens(server);
      lookups.length = 0;
      const response = await server.fetch(form(path, { token: tokens[kind], ...(hint === undefined ? {} : { token_type_hint: hint }) }));
      expect(response.status).toBe(200);
      const label = `${kind} with hint ${hint}`;
      expect(lookups, label).toEqual(expected);
      if (path === "/introspect") expect(await response.json(), label).toMatchObject({ active: true });
    }
  });

  test("an unknown token is asked for as both kinds and is inactive", async () => {
    const clock = new Clock();
    const { storage, lookups } = recordingStore(clock);
    const { server } = await fixture({ storage, clock: clock.read });
    const response = await server.fetch(form("/introspect", { token: "no-such-token", token_type_hint: "refresh_token" }));
    expect(await response.json()).toEqual({ active: false });
    expect(lookups).toEqual(["refresh", "access"]);
  });
});

describe("the posted form", () => {
  test.each(["/token", "/revoke", "/introspect"])("%s: another media type is invalid_request with a description", async (path) => {
    const { server } = await fixture();
    const response = await server.fetch(new Request(`${ISSUER}${path}`, {
      method: "POST", headers: { "content-type": "application/json", ...basic("web", SECRETS.web) }, body: "{}",
    }));
    const error = await errorOf(response);
    expect(error).toMatchObject({ status: 400, error: "invalid_request" });
    expect(error.description).toMatch(/\S/);
  });
});

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
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
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

describe("refusals carry an error_description", () => {
  const described = async (response: Response, status: number, error: string) => {
    const body = await errorOf(response);
    expect(body).toMatchObject({ status, error });
    expect(body.description).toMatch(/\S/);
  };

  test("no token to introspect or revoke; a token of another client", async () => {
    const { server } = await fixture();
    await described(await server.fetch(form("/introspect", {})), 400, "invalid_request");
    await described(await server.fetch(form("/revoke", {})), 400, "invalid_request");
    const { access_token } = await webTokens(server);
    await described(await server.fetch(form("/revoke", { token: access_token }, basic("other", SECRETS.other))), 400, "unauthorized_client");
  });

  test("no grant_type; a grant the client may not use", async () => {
    const { server } = await fixture();
    await described(await postToken(server, { client_id: "web", client_secret: SECRETS.web }), 400, "invalid_request");
    await described(await postToken(server, { grant_type: "client_credentials", client_id: "web", client_secret: SECRETS.web }), 400, "unauthorized_client");
  });
});

describe("the token.revoked audit event", () => {
  test("names only the ids the token has: no user_id or grant_id keys for a client_credentials token", async () => {
    const events: Record<string, unknown>[] = [];
    const { server } = await fixture({ onEvent: (event) => void events.push({ ...event }) });
    const issued = await postToken(server, { grant_type: "client_credentials", scope: "export", client_id: "backend", client_secret: SECRETS.backend });
    const { access_token } = await issued.json() as { access_token: string };
    expect((await server.fetch(form("/revoke", { token: access_token }, basic("backend", SECRETS.backend)))).status).toBe(200);
    const revoked = events.filter((e) => e.type === "token.revoked");
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).not.toHaveProperty("user_id");
    expect(revoked[0]).not.toHaveProperty("grant_id");
    expect(revoked[0]).toMatchObject({ client_id: "backend", reason: "access_token" });
  });
});
