// The client_credentials grant (RFC 6749 §4.4).
import { expect, test } from "vitest";
import type { AuditEvent } from "../../mod.ts";
import { fixture, postToken, SECRETS } from "../helpers.ts";

test("client_credentials: the refresh opt-in without the refresh_token grant issues no refresh token", async () => {
  const events: AuditEvent[] = [];
  const { server } = await fixture({ onEvent: (event) => events.push(event) });
  const contradiction = {
    client_id: "opt-in-only", client_secret: SECRETS.backend, name: "Opt-in only", type: "confidential" as const, scopes: ["export"],
    grant_types: ["client_credentials"], client_credentials_refresh_token: true,
  };
  // The one door refuses the contradiction; a record another tool wrote straight into the store still gets none.
  await expect(server.clients.register(contradiction)).rejects.toThrow(/client_credentials_refresh_token needs both/);
  const { client } = await server.clients.register({ ...contradiction, client_credentials_refresh_token: false });
  await server.storage.saveClient({ ...client, client_credentials_refresh_token: true });
  const body = await (await postToken(server, { grant_type: "client_credentials", scope: "export", client_id: "opt-in-only", client_secret: SECRETS.backend })).json();
  expect([typeof body.access_token, body.refresh_token]).toEqual(["string", undefined]);
  // Without a refresh token there is no grant, so the event names none.
  expect(events.filter((e) => e.type === "token.issued")).toEqual([{ type: "token.issued", time: expect.any(Number), client_id: "opt-in-only" }]);
});
