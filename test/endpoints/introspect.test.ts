// Token introspection (RFC 7662): who may see what, and what an inactive token reveals (nothing).
import { describe, expect, test } from "vitest";
import { fixture, ISSUER, postToken, REDIRECT, SECRETS, spaTokens, webCode } from "../helpers.ts";

const form = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  new Request(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });

const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

describe("introspection (RFC 7662)", () => {
  test("a live token is described to its own client; a dead one is only inactive", async () => {
    const { server, clock } = await fixture();
    const code = await webCode(server);
    const tokens = await (await postToken(server, {
      grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code,
    })).json();
    const ask = async (token: string, hint?: string) =>
      (await server.fetch(form(`${ISSUER}/introspect`, { token, ...(hint ? { token_type_hint: hint } : {}) }, basic("web", SECRETS.web)))).json();
    expect(await ask(tokens.access_token)).toEqual({
      active: true, scope: "read", client_id: "web", sub: "alice", token_type: "Bearer",
      exp: Math.floor(clock.now / 1000) + 3600, iss: ISSUER,
    });
    // RFC 7662 §2.2: token_type is an access token type; a refresh token has none.
    const refresh = await ask(tokens.refresh_token, "refresh_token");
    expect(refresh).toMatchObject({ active: true });
    expect(refresh.token_type).toBeUndefined();
    expect(await ask("nonsense")).toEqual({ active: false });
    clock.advance(3600);
    expect(await ask(tokens.access_token)).toEqual({ active: false });
  });

  test("another client sees only inactive, unless it may introspect all access tokens", async () => {
    const { server } = await fixture();
    await server.clients.register({
      client_id: "rs", client_secret: "rs-secret-0123456789abcdef", name: "Resource server", type: "confidential",
      scopes: ["read"], grant_types: ["client_credentials"], introspection: "all",
    });
    const tokens = await spaTokens(server);
    const ask = async (id: string, secret: string, token: string) =>
      (await server.fetch(form(`${ISSUER}/introspect`, { token }, basic(id, secret)))).json();
    expect(await ask("backend", SECRETS.backend, tokens.access_token)).toEqual({ active: false });
    expect(await ask("backend", SECRETS.backend, tokens.refresh_token)).toEqual({ active: false });
    expect(await ask("rs", "rs-secret-0123456789abcdef", tokens.access_token)).toMatchObject({ active: true, client_id: "spa", sub: "alice" });
    // A refresh token answers only to its own client, whatever the caller's policy.
    expect(await ask("rs", "rs-secret-0123456789abcdef", tokens.refresh_token)).toEqual({ active: false });
    // A paused client's tokens are inactive to everyone.
    await server.clients.pause("spa");
    expect(await ask("rs", "rs-secret-0123456789abcdef", tokens.access_token)).toEqual({ active: false });
  });

  test("public clients may not introspect", async () => {
    const { server } = await fixture();
    const response = await server.fetch(form(`${ISSUER}/introspect`, { client_id: "spa", token: "x" }));
    expect(response.status).toBe(401);
    expect((await response.json()).error).toBe("invalid_client");
  });
});

describe("what introspection shows", () => {
  const form = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    new Request(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(fields).toString(),
    });

  const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

  describe("introspection", () => {
    const introspect = async (server: Awaited<ReturnType<typeof fixture>>["server"], token: string, hint?: string) =>
      (await server.fetch(form(`${ISSUER}/introspect`, { token, ...(hint ? { token_type_hint: hint } : {}) }, basic("web", SECRETS.web)))).json();

    test("a rotated refresh token is inactive", async () => {
      const { server } = await fixture();
      const code = await webCode(server);
      const tokens = await (await postToken(server, {
        grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code,
      })).json();
      expect(await introspect(server, tokens.refresh_token, "refresh_token")).toMatchObject({ active: true });
      const rotated = await postToken(server, { grant_type: "refresh_token", client_id: "web", client_secret: SECRETS.web, refresh_token: tokens.refresh_token });
      expect(rotated.status).toBe(200);
      expect(await introspect(server, tokens.refresh_token, "refresh_token")).toEqual({ active: false });
    });
  });

  describe("introspection details", () => {
    const introspect = (server: Awaited<ReturnType<typeof fixture>>["server"], fields: Record<string, string>) =>
      server.fetch(form(`${ISSUER}/introspect`, fields, basic("backend", SECRETS.backend)));

    test("without a token parameter: invalid_request", async () => {
      const { server } = await fixture();
      const response = await introspect(server, {});
      expect(response.status).toBe(400);
      expect((await response.json()).error).toBe("invalid_request");
    });

    test("a client's own client_credentials token has no sub", async () => {
      const { server } = await fixture();
      const token = (await (await postToken(server, { grant_type: "client_credentials", scope: "export" }, basic("backend", SECRETS.backend))).json()).access_token;
      const body = await (await introspect(server, { token })).json();
      expect(body).toMatchObject({ active: true, client_id: "backend", scope: "export" });
      expect("sub" in body).toBe(false);
      expect("aud" in body).toBe(false);
    });
  });
});
