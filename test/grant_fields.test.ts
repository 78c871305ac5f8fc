// Each grant's `clientFields` (lib/grants) says which fields of the client record it relies on; registration
// reads it (a grant that relies on `redirect_uris` needs one). This proves the list is exact: a full run of each
// grant reads every field it declares and no other, so a removed or stale entry fails here.
import { expect, test } from "vitest";
import { bindGrants, GRANTS } from "../lib/grants/registry.ts";
import type { ServerContext } from "../lib/options.ts";
import type { ClientRecord } from "../lib/storage/types.ts";
import { fixture, REDIRECT, SECRETS, TOKEN_URL, webCode } from "./helpers.ts";

test("each grant reads exactly the client fields it declares (authorization_code's redirect_uris at /authorize)", async () => {
  const f = await fixture();
  await f.server.clients.register({
    client_id: "cc-default", client_secret: SECRETS.backend, name: "Default scope", type: "confidential", scopes: ["export"],
    default_scope: "export", grant_types: ["client_credentials", "refresh_token"], client_credentials_refresh_token: true,
  });
  const context = {
    clock: f.clock.read, storage: f.storage, scopePolicy: "single", resources: [], refreshGraceMs: 0,
    accessTokenTtl: 3_600_000, refreshTokenTtl: 86_400_000, onEvent: undefined, clientAddress: (peer: string | undefined) => peer,
  } as unknown as ServerContext;
  const bound = bindGrants(context);
  const seen = new Map<string, Set<string>>();
  const run = async (name: string, form: Record<string, string>, clientId: string) => {
    const fields = seen.get(name) ?? new Set<string>();
    seen.set(name, fields);
    const record = (await f.storage.getClient(clientId))!;
    const client = new Proxy(record, {
      get: (target, key) => {
        fields.add(String(key));
        return target[key as keyof ClientRecord];
      },
    });
    const incoming = { request: new Request(TOKEN_URL, { method: "POST" }), target: "/token", remoteAddress: "192.0.2.7" };
    return bound.get(name)!.exchange(new Map(Object.entries(form)), client, incoming);
  };
  const tokens = await run("authorization_code", { code: await webCode(f.server), redirect_uri: REDIRECT }, "web");
  await run("refresh_token", { refresh_token: tokens.refresh_token! }, "web");
  await run("client_credentials", { scope: "export" }, "cc-default");
  await run("client_credentials", {}, "cc-default");
  // The code grant relies on redirect_uris through the code: /authorize checked it, registration requires one.
  const atAuthorize: Record<string, string[]> = { authorization_code: ["redirect_uris"] };
  for (const [name, grant] of Object.entries(GRANTS)) {
    const expected = grant.clientFields.filter((field) => !(atAuthorize[name] ?? []).includes(field)).sort();
    expect([name, [...(seen.get(name) ?? [])].sort()]).toEqual([name, expected]);
  }
});
