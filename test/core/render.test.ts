// Errors are rendered in one place: every refusal carries an error_description inside RFC 6749 §5.2's character set.
import { describe, expect, test } from "vitest";
import { errorOf, fixture, ISSUER, postToken, REDIRECT, SECRETS, webCode } from "../helpers.ts";

test("error descriptions stay inside RFC 6749 §5.2's character set, whatever the client sent", async () => {
  const { server } = await fixture();
  const allowed = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
  const bodies = [
    "grant_type=%C3%A9%22x%5C",
    "grant_type=client_credentials&grant_type=client_credentials",
    "grant_type=client_credentials&%E2%98%83%22=1&%E2%98%83%22=2",
  ];
  for (const body of bodies) {
    const response = await server.fetch(new Request(`${ISSUER}/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body }));
    const json = await response.json();
    expect(json.error_description).toMatch(allowed);
  }
});

describe("refusals carry an error_description", () => {
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

  const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = basic("web", SECRETS.web)) =>
    new Request(`${ISSUER}${path}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(fields).toString(),
    });

  async function webTokens(server: Awaited<ReturnType<typeof fixture>>["server"]): Promise<{ access_token: string; refresh_token: string }> {
    const code = await webCode(server);
    const response = await postToken(server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code });
    expect(response.status).toBe(200);
    return response.json();
  }

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
});
