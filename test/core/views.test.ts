// A grant sees exactly the core fields and feature states it declares (`reads`, `uses`): at runtime its view
// holds only those, and a full run of each grant reads every one of them, so a stale or missing entry fails here.
// The same holds for the client fields a grant relies on (`clientFields`), which the one door for clients reads.
import { expect, test } from "vitest";
import { assemble } from "../../lib/core/assemble.ts";
import { createExchange } from "../../lib/core/exchange.ts";
import { bindView } from "../../lib/core/view.ts";
import { GRANTS } from "../../lib/grants/registry.ts";
import { SERVER_TABLES } from "../../lib/server.ts";
import type { ClientRecord } from "../../lib/storage/types.ts";
import { fixture, ISSUER, REDIRECT, SECRETS, TOKEN_URL, webCode } from "../helpers.ts";

async function harness() {
  const f = await fixture();
  await f.server.clients.register({
    client_id: "cc-default", client_secret: SECRETS.backend, name: "Default scope", type: "confidential", scopes: ["export"],
    default_scope: "export", grant_types: ["client_credentials", "refresh_token"], client_credentials_refresh_token: true,
  });
  const { core, states } = assemble({ issuer: ISSUER, scopes: { read: "r", write: "w", export: "e", admin: "a" }, storage: f.storage, clock: f.clock.read }, SERVER_TABLES);
  return { f, core, states };
}

test("a view holds exactly the declared core fields and feature states, frozen", async () => {
  const { core, states } = await harness();
  for (const [name, grant] of Object.entries(GRANTS)) {
    const view = bindView(core, states, grant.reads, grant.uses);
    expect([name, Object.isFrozen(view), Object.keys(view).sort()]).toEqual([name, true, [...grant.reads, "features"].sort()]);
    expect([name, Object.keys(view.features as object).sort()]).toEqual([name, grant.uses.map((u) => u.name).sort()]);
  }
});

test("each grant reads every core field and feature it declares and no other, and exactly its client fields", async () => {
  const { f, core, states } = await harness();
  const reads = new Map<string, Set<string>>();
  const fields = new Map<string, Set<string>>();
  const run = async (name: string, form: Record<string, string>, clientId: string) => {
    const grant = GRANTS[name]!;
    const seen = reads.get(name) ?? new Set<string>();
    reads.set(name, seen);
    const view = bindView(core, states, grant.reads, grant.uses);
    const strict = new Proxy({ ...view }, {
      get(target, key) {
        if (!Object.hasOwn(target, key)) throw new Error(`${name} reads ${String(key)}, which it does not declare`);
        if (key === "features") {
          return new Proxy({ ...(target.features as object) }, {
            get(features, feature) {
              if (!Object.hasOwn(features, feature)) throw new Error(`${name} uses feature ${String(feature)}, which it does not declare`);
              seen.add(`features.${String(feature)}`);
              return (features as Record<string | symbol, unknown>)[feature];
            },
          });
        }
        seen.add(String(key));
        return target[key as keyof typeof target];
      },
    });
    const used = fields.get(name) ?? new Set<string>();
    fields.set(name, used);
    const record = (await f.storage.getClient(clientId))!;
    const client = new Proxy(record, {
      get: (target, key) => {
        used.add(String(key));
        return target[key as keyof ClientRecord];
      },
    });
    const exchange = createExchange(new Request(TOKEN_URL, { method: "POST" }), "/token", "192.0.2.7", core);
    return grant.exchange(exchange, new Map(Object.entries(form)), client, strict as never);
  };
  const tokens = await run("authorization_code", { code: await webCode(f.server), redirect_uri: REDIRECT }, "web");
  await run("refresh_token", { refresh_token: tokens.refresh_token! }, "web");
  await run("client_credentials", { scope: "export" }, "cc-default");
  await run("client_credentials", {}, "cc-default");
  // The code grant relies on redirect_uris through the code: /authorize checked it, the door requires one.
  const atAuthorize: Record<string, string[]> = { authorization_code: ["redirect_uris"] };
  for (const [name, grant] of Object.entries(GRANTS)) {
    const declared = [...grant.reads, ...grant.uses.map((u) => `features.${u.name}`)].sort();
    expect([name, [...(reads.get(name) ?? [])].sort()]).toEqual([name, declared]);
    const expected = grant.clientFields.filter((field) => !(atAuthorize[name] ?? []).includes(field)).sort();
    expect([name, [...(fields.get(name) ?? [])].sort()]).toEqual([name, expected]);
  }
});
