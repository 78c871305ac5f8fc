/**
 * Client authentication at the token endpoint (RFC 6749 §2.3, §2.3.1, §5.2; spec §5), through `server.fetch`.
 * Form credentials (client_secret_post) are covered cell by cell in token_table.test.ts; this file is about
 * HTTP Basic, mixing the two, and failures.
 */
import { describe, expect, test } from "vitest";
import { type Fixture, fixture, REDIRECT, SECRETS, spaTokens, webCode } from "./helpers.ts";
import { basic, expectError, expectTokens, failure, formEncode, token } from "./token_helpers.ts";

const CC = { grant_type: "client_credentials", scope: "export" } as const;
const BACKEND = { client_id: "backend", scope: "export", refresh: false };
const DENIED = failure(401, "invalid_client", true);
const BAD_REQUEST = failure(400, "invalid_request");

describe("HTTP Basic (RFC 6749 §2.3.1)", () => {
  test("backend: client_credentials with Basic and no client_id or client_secret in the body", async () => {
    const f = await fixture();
    await expectTokens(f.server, await token(f.server, { ...CC }, { authorization: basic("backend", SECRETS.backend) }), BACKEND);
  });

  test("web: code exchange and refresh with Basic", async () => {
    const f = await fixture();
    const auth = { authorization: basic("web", SECRETS.web) };
    const code = await webCode(f.server);
    const issued = await expectTokens(f.server, await token(f.server, { grant_type: "authorization_code", redirect_uri: REDIRECT, code }, auth),
      { client_id: "web", scope: "read", refresh: true });
    await expectTokens(f.server, await token(f.server, { grant_type: "refresh_token", refresh_token: issued.refresh_token! }, auth),
      { client_id: "web", scope: "read", refresh: true });
  });

  test("Basic plus the same client_id in the body is accepted", async () => {
    const f = await fixture();
    await expectTokens(f.server, await token(f.server, { ...CC, client_id: "backend" }, { authorization: basic("backend", SECRETS.backend) }), BACKEND);
  });

  test("the scheme name is case-insensitive (RFC 9110 §11.1)", async () => {
    const f = await fixture();
    for (const scheme of ["basic", "BASIC"]) {
      const authorization = basic("backend", SECRETS.backend).replace(/^Basic/, scheme);
      await expectTokens(f.server, await token(f.server, { ...CC }, { authorization }), BACKEND, scheme);
    }
  });

  // RFC 6749 §2.3.1: "The client identifier is encoded using the application/x-www-form-urlencoded encoding
  // algorithm per Appendix B, and the encoded value is used as the username; the client password is encoded
  // using the same algorithm and used as the password."
  const SPECIAL_SECRET = "p%25 + : x%zz/é&=0123456789";

  async function registerSpecial(f: Fixture, clientId: string): Promise<void> {
    await f.server.clients.register({
      client_id: clientId, client_secret: SPECIAL_SECRET, name: "Special", type: "confidential",
      scopes: ["export"], grant_types: ["client_credentials"],
    });
  }

  test("an id and secret that need form-urlencoding (':', '+', '%', space, non-ASCII) work with Basic and in the body", async () => {
    const f = await fixture();
    const id = "a:b+c%20d";
    await registerSpecial(f, id);
    expect(formEncode(id)).toBe("a%3Ab%2Bc%2520d");
    const expected = { client_id: id, scope: "export", refresh: false };
    await expectTokens(f.server, await token(f.server, { ...CC }, { authorization: basic(id, SPECIAL_SECRET) }), expected, "Basic:");
    await expectTokens(f.server, await token(f.server, { ...CC, client_id: id, client_secret: SPECIAL_SECRET }), expected, "body:");
    // The same credentials not urlencoded first are a different id and password, so they fail.
    await expectError(await token(f.server, { ...CC }, { authorization: `Basic ${btoa(String.fromCharCode(...new TextEncoder().encode(`${id}:${SPECIAL_SECRET}`)))}` }), DENIED);
  });

  // RFC 6749 Appendix A.1: client-id = *VSCHAR, VSCHAR = %x20-7E, so a space is a legal client_id character,
  // and §2.3.1 says how to carry it in Basic (form-urlencoded: "a%3Ab+c"). lib/clients.ts refuses it at
  // registration (CLIENT_ID = /^[\x21-\x7e]{1,255}$/), so such a client can never authenticate.
  test("a client_id with a space ('a:b c', RFC 6749 A.1 VSCHAR) can register and authenticate with Basic", async () => {
    const f = await fixture();
    await registerSpecial(f, "a:b c");
    expect(atob(basic("a:b c", "x").slice("Basic ".length))).toBe("a%3Ab+c:x");
    await expectTokens(f.server, await token(f.server, { ...CC }, { authorization: basic("a:b c", SPECIAL_SECRET) }),
      { client_id: "a:b c", scope: "export", refresh: false });
  });

  test("Basic plus client_secret in the body (two methods, RFC 6749 §2.3) → 400 invalid_request", async () => {
    const f = await fixture();
    const auth = { authorization: basic("backend", SECRETS.backend) };
    await expectError(await token(f.server, { ...CC, client_secret: SECRETS.backend }, auth), BAD_REQUEST);
    await expectError(await token(f.server, { ...CC, client_id: "backend", client_secret: SECRETS.backend }, auth), BAD_REQUEST);
  });

  test("Basic with a different client_id in the body → 400 invalid_request", async () => {
    const f = await fixture();
    await expectError(await token(f.server, { ...CC, client_id: "backend-refresh" }, { authorization: basic("backend", SECRETS.backend) }), BAD_REQUEST);
  });

  const malformed: [string, string][] = [
    ["not base64", "Basic !!!not-base64!!!"],
    ["no colon", `Basic ${btoa(`backend${SECRETS.backend}`)}`],
    ["an empty client_id", `Basic ${btoa(`:${SECRETS.backend}`)}`],
    ["a bad percent-escape", `Basic ${btoa(`backend:${SECRETS.backend}%zz`)}`],
    ["no credentials after the scheme", "Basic ="],
  ];
  for (const [what, authorization] of malformed) {
    test(`malformed Basic (${what}) → 401 invalid_client with WWW-Authenticate: Basic`, async () => {
      const f = await fixture();
      await expectError(await token(f.server, { ...CC }, { authorization }), DENIED);
    });
  }
});

describe("failed authentication", () => {
  test("wrong secret → 401 invalid_client + WWW-Authenticate: Basic, in the body and with Basic", async () => {
    const f = await fixture();
    await expectError(await token(f.server, { ...CC, client_id: "backend", client_secret: "wrong-secret-0123456789" }), DENIED, "body:");
    await expectError(await token(f.server, { ...CC }, { authorization: basic("backend", "wrong-secret-0123456789") }), DENIED, "Basic:");
    // Another client's (valid) secret is a wrong secret too.
    await expectError(await token(f.server, { ...CC, client_id: "backend", client_secret: SECRETS.backendRefresh }), DENIED, "other's secret:");
  });

  test("a secret that differs only in case or by a trailing character → 401", async () => {
    const f = await fixture();
    for (const secret of [SECRETS.backend.toUpperCase(), `${SECRETS.backend}x`, SECRETS.backend.slice(0, -1)]) {
      await expectError(await token(f.server, { ...CC, client_id: "backend", client_secret: secret }), DENIED, secret);
    }
  });

  test("unknown client → 401 invalid_client, in the body and with Basic", async () => {
    const f = await fixture();
    await expectError(await token(f.server, { ...CC, client_id: "nobody", client_secret: "some-secret-0123456789" }), DENIED, "body:");
    await expectError(await token(f.server, { ...CC }, { authorization: basic("nobody", "some-secret-0123456789") }), DENIED, "Basic:");
    await expectError(await token(f.server, { grant_type: "refresh_token", client_id: "nobody", refresh_token: "x" }), DENIED, "no secret:");
  });

  test("a public client presenting any secret (body or Basic) → 401 invalid_client, and its refresh token is not spent", async () => {
    const f = await fixture();
    const { refresh_token } = await spaTokens(f.server);
    const fields = { grant_type: "refresh_token", refresh_token };
    await expectError(await token(f.server, { ...fields, client_id: "spa", client_secret: "x" }), DENIED, "body:");
    await expectError(await token(f.server, fields, { authorization: basic("spa", "") }), DENIED, "Basic, empty password:");
    await expectError(await token(f.server, fields, { authorization: basic("spa", "anything") }), DENIED, "Basic:");
    await expectTokens(f.server, await token(f.server, { ...fields, client_id: "spa" }), { client_id: "spa", scope: "read", refresh: true });
  });

  test("a paused client with Basic → 401 invalid_client", async () => {
    const f = await fixture();
    await f.server.clients.pause("backend");
    await expectError(await token(f.server, { ...CC }, { authorization: basic("backend", SECRETS.backend) }), DENIED);
  });

  test("error responses never contain the presented secret (plain, form-encoded or base64)", async () => {
    const f = await fixture();
    const secret = "Sup3r+Secret/Value:0123456789%";
    const forms: string[] = [secret, formEncode(secret), encodeURIComponent(secret), btoa(`backend:${formEncode(secret)}`), btoa(secret)];
    const tries: [string, Record<string, string>, Record<string, string>][] = [
      ["wrong secret, body", { ...CC, client_id: "backend", client_secret: secret }, {}],
      ["wrong secret, Basic", { ...CC }, { authorization: basic("backend", secret) }],
      ["unknown client, body", { ...CC, client_id: "nobody", client_secret: secret }, {}],
      ["unknown client, Basic", { ...CC }, { authorization: basic("nobody", secret) }],
      ["Basic and body secret", { ...CC, client_secret: secret }, { authorization: basic("backend", secret) }],
      ["public client with secret", { grant_type: "refresh_token", refresh_token: "x", client_id: "spa", client_secret: secret }, {}],
      ["malformed Basic", { ...CC }, { authorization: `Basic ${btoa(secret)}` }],
      ["unauthorized grant", { grant_type: "client_credentials", client_id: "web", client_secret: secret, scope: "read" }, {}],
      ["bad scope", { ...CC, scope: secret, client_id: "backend", client_secret: SECRETS.backend }, {}],
    ];
    for (const [what, fields, headers] of tries) {
      const response = await token(f.server, fields, headers);
      expect(response.status, what).toBeGreaterThanOrEqual(400);
      const text = await response.text();
      const head = [...response.headers].map(([name, value]) => `${name}: ${value}`).join("\n");
      for (const form of forms) {
        expect(text.includes(form), `${what}: body ${text} holds the secret`).toBe(false);
        expect(head.includes(form), `${what}: headers hold the secret`).toBe(false);
      }
    }
    expect(JSON.stringify(f.errors.map(String))).not.toContain(secret);
  });
});
