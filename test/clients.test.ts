// `server.clients` (lib/clients.ts): what a registration must hold, each refusal with the message that names the
// problem, and what pause, resume and delete report.
import { describe, expect, test } from "vitest";
import { type AuditEvent, ConfigurationError } from "../mod.ts";
import type { ClientRegistration } from "../lib/clients.ts";
import { fixture, postToken, REDIRECT, SECRETS } from "./helpers.ts";

const base: ClientRegistration = { client_id: "c", name: "C", type: "confidential", client_secret: SECRETS.web, redirect_uris: [REDIRECT], scopes: ["read"] };

describe("a registration is refused with a message naming the problem", () => {
  test.each<[string, unknown, RegExp]>([
    ["not an object", null, /the registration must be an object/],
    ["a string", "c", /the registration must be an object/],
    ["a name that is not a string", { ...base, name: 5 }, /"name" is required for client "c"/],
    ["a secret that is not a string", { ...base, client_secret: 12345678901234567890 }, /the secret of client "c" must be at least 16 characters/],
    ["a redirect URI that is not a string", { ...base, redirect_uris: [5] }, /a redirect URI of client "c" is refused: it not a string/],
    ["a client_id with a control character first", { ...base, client_id: "\u0001abc" }, /"client_id" must be 1-255 visible ASCII/],
    ["a client_id with a control character last", { ...base, client_id: "abc\u0001" }, /"client_id" must be 1-255 visible ASCII/],
    ["a client_id of 256 characters", { ...base, client_id: "a".repeat(256) }, /"client_id" must be 1-255 visible ASCII/],
    ["no name", { ...base, name: " " }, /"name" is required for client "c"/],
    ["an empty grant_types", { ...base, grant_types: [] }, /"grant_types" must be a non-empty list/],
    ["grant_types that is not a list", { ...base, grant_types: "authorization_code" }, /"grant_types" must be a non-empty list/],
    ["an empty scopes", { ...base, scopes: [] }, /client "c" must list at least one scope/],
    ["scopes that is not a list", { ...base, scopes: "read" }, /client "c" must list at least one scope/],
    ["a default scope outside its scopes", { ...base, default_scope: "write" }, /the default scope of client "c" must be a space-delimited list of its scopes/],
    ["a default scope partly outside its scopes", { ...base, default_scope: "read write" }, /must be a space-delimited list of its scopes/],
    ["a default scope that is not a string", { ...base, default_scope: 5 }, /must be a space-delimited list of its scopes/],
    ["an unknown introspection policy", { ...base, introspection: "some" }, /"introspection" must be "own" or "all" for client "c"/],
    ["introspection for a public client", { ...base, type: "public", client_secret: undefined, introspection: "own" }, /public client "c" cannot introspect/],
  ])("%s", async (_, registration, message) => {
    const { server } = await fixture();
    const attempt = server.clients.register(registration as ClientRegistration);
    await expect(attempt).rejects.toThrow(ConfigurationError);
    await expect(attempt).rejects.toThrow(message);
  });

  test("a client_id of 255 visible characters, spaces included, is accepted", async () => {
    const { server } = await fixture();
    const id = "a b~".repeat(63) + "xyz";
    expect(id.length).toBe(255);
    await expect(server.clients.register({ ...base, client_id: id })).resolves.toMatchObject({ client: { client_id: id } });
  });

  test.each(["own", "all"] as const)("the introspection policy %s is kept", async (introspection) => {
    const { server } = await fixture();
    await server.clients.register({ ...base, introspection });
    expect((await server.clients.get("c"))?.introspection).toBe(introspection);
  });
});

test("a generated client_id is 22 base64url characters (132 random bits)", async () => {
  const { server } = await fixture();
  const { client_id: _, ...rest } = base;
  const ids = await Promise.all([1, 2].map(async () => (await server.clients.register(rest)).client.client_id));
  for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
  expect(ids[0]).not.toBe(ids[1]);
});

test("client_credentials carries a refresh token only with the opt-in set to true, not merely with the grant", async () => {
  const { server } = await fixture();
  for (const [client_id, optIn] of [["plain", undefined], ["truthy", "yes"]] as const) {
    await server.clients.register({
      client_id, client_secret: SECRETS.backend, name: client_id, type: "confidential", scopes: ["export"],
      grant_types: ["client_credentials", "refresh_token"], ...(optIn === undefined ? {} : { client_credentials_refresh_token: optIn as unknown as boolean }),
    });
    const body = await (await postToken(server, { grant_type: "client_credentials", scope: "export", client_id, client_secret: SECRETS.backend })).json();
    expect([client_id, typeof body.access_token, body.refresh_token]).toEqual([client_id, "string", undefined]);
  }
});

test("pause, resume and delete of an unknown client report nothing and change nothing", async () => {
  const events: AuditEvent[] = [];
  const { server } = await fixture({ onEvent: (event) => events.push(event) });
  events.length = 0; // the fixture's own registrations
  expect(await server.clients.pause("nobody")).toBeNull();
  expect(await server.clients.resume("nobody")).toBeNull();
  expect(await server.clients.delete("nobody")).toBe(false);
  expect(events).toEqual([]);
  expect(await server.clients.pause("web")).toMatchObject({ active: false });
  expect(await server.clients.resume("web")).toMatchObject({ active: true });
  expect(await server.clients.delete("web")).toBe(true);
  expect(events.map((e) => [e.type, e.client_id])).toEqual([["client.paused", "web"], ["client.resumed", "web"], ["client.deleted", "web"]]);
});

test("what is not given is absent: no default_scope member, and no client_secret for a public client", async () => {
  const { server } = await fixture();
  const registered = await server.clients.register({ client_id: "p", name: "P", type: "public", redirect_uris: [REDIRECT], scopes: ["read"] });
  expect(Object.keys(registered)).toEqual(["client"]);
  expect("default_scope" in registered.client).toBe(false);
});

describe("client registration", () => {
  test.each(["javascript:alert(1)", "data:text/html,hi"])("refuses the redirect URI %s", async (uri) => {
    const { server } = await fixture();
    await expect(server.clients.register({ client_id: "x", name: "X", type: "public", redirect_uris: [uri], scopes: ["read"] }))
      .rejects.toThrow(/uses a forbidden scheme/);
  });

  test("a secret needs 16 characters: 15 are refused, 16 accepted", async () => {
    const { server } = await fixture();
    const register = (secret: string) =>
      server.clients.register({ client_id: "c", client_secret: secret, name: "C", type: "confidential", scopes: ["read"], grant_types: ["client_credentials"] });
    await expect(register("a".repeat(15))).rejects.toThrow(/at least 16 characters/);
    await expect(register("a".repeat(16))).resolves.toMatchObject({ client_secret: "a".repeat(16) });
  });
});
