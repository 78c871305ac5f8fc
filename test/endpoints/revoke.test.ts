// Token revocation (RFC 7009).
import { describe, expect, test } from "vitest";
import { fixture, ISSUER, postToken, SECRETS, spaTokens } from "../helpers.ts";

const form = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  new Request(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });

const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

describe("revocation (RFC 7009)", () => {
  test("revoking a refresh token revokes its grant; the answer is 200 either way", async () => {
    const { server } = await fixture();
    const tokens = await spaTokens(server);
    const response = await server.fetch(form(`${ISSUER}/revoke`, { client_id: "spa", token: tokens.refresh_token }));
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    await expect(server.verifyAuthorization(`Bearer ${tokens.access_token}`)).rejects.toMatchObject({ code: "invalid_token" });
    expect((await server.fetch(form(`${ISSUER}/revoke`, { client_id: "spa", token: "unknown" }))).status).toBe(200);
  });

  test("the answer is {} as JSON, for a live token and an unknown one alike (simple-oauth2 and badgateway both read it)", async () => {
    const { server } = await fixture();
    const tokens = await spaTokens(server);
    for (const token of [tokens.access_token, tokens.refresh_token, "never-issued"]) {
      const response = await server.fetch(form(`${ISSUER}/revoke`, { client_id: "spa", token }));
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^application\/json\b/);
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(await response.text()).toBe("{}");
    }
  });

  test("another client's token is refused with unauthorized_client (RFC 7009 §2.1) and left alone", async () => {
    const { server } = await fixture();
    const tokens = await spaTokens(server);
    const response = await server.fetch(form(`${ISSUER}/revoke`, { token: tokens.access_token }, basic("web", SECRETS.web)));
    expect(response.status).toBe(400);
    expect((await response.json()).error).toBe("unauthorized_client");
    const refresh = await server.fetch(form(`${ISSUER}/revoke`, { token: tokens.refresh_token }, basic("web", SECRETS.web)));
    expect((await refresh.json()).error).toBe("unauthorized_client");
    await expect(server.verifyAuthorization(`Bearer ${tokens.access_token}`)).resolves.toMatchObject({ client_id: "spa" });
  });

  test("needs client authentication and a token", async () => {
    const { server } = await fixture();
    expect((await server.fetch(form(`${ISSUER}/revoke`, { token: "x" }, basic("web", "wrong-secret-xxxxxxxx")))).status).toBe(401);
    const missing = await server.fetch(form(`${ISSUER}/revoke`, { client_id: "spa" }));
    expect(missing.status).toBe(400);
    expect((await missing.json()).error).toBe("invalid_request");
  });
});

describe("the token.revoked audit event", () => {
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

  const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = basic("web", SECRETS.web)) =>
    new Request(`${ISSUER}${path}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(fields).toString(),
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
});
