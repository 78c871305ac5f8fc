/**
 * The tables rule: the docs' key and option tables, the config file's JSON Schema and the metadata document all
 * follow the option table and the feature, grant and client-authentication tables. A new feature is one module
 * and one line in `FEATURES`; this file says what else must follow (its page, `npm run docs:keys`).
 */
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { CLIENT_AUTH_METHODS } from "../../lib/client_auth/registry.ts";
import { assemble, type AnyFeature } from "../../lib/core/assemble.ts";
import { FEATURES } from "../../lib/features/index.ts";
import { GRANTS } from "../../lib/grants/registry.ts";
import type { AuthorizationServerOptions } from "../../lib/options.ts";
import { configSchema } from "../../lib/reference/config_fields.ts";
import { createAuthorizationServer, SERVER_TABLES } from "../../lib/server.ts";
import { blockOf, GENERATED } from "../support/docs_tables.ts";

describe("the docs' generated tables equal the option table (npm run docs:keys rewrites them)", () => {
  for (const { file, name, render } of GENERATED) {
    test(`${file}: <!-- ${name} -->`, () => {
      const block = blockOf(readFileSync(file, "utf8"), name);
      expect(block, `${file} has no <!-- ${name}:begin/end --> markers`).toBeDefined();
      expect(block, `${file}'s ${name} table is stale: run npm run docs:keys`).toBe(render());
    });
  }
});

test("lib/reference/config.schema.json is the schema generated from the option table (npm run schema)", () => {
  expect(JSON.parse(readFileSync("lib/reference/config.schema.json", "utf8"))).toEqual(configSchema());
});

test("every feature has its page, lib/features/<name>.md, and a line in the README's feature table", () => {
  const readme = readFileSync("README.md", "utf8");
  for (const feature of FEATURES) {
    expect(existsSync(`lib/features/${feature.name}.md`), `lib/features/${feature.name}.md`).toBe(true);
    expect(readme, `README.md links lib/features/${feature.name}.md`).toContain(`](lib/features/${feature.name}.md)`);
  }
});

// The metadata document. The core's own fields are written in lib/core/assemble.ts; a field added there
// belongs on this list, and any other field must come from a table entry: a feature's metadata(), or the
// grant and client-authentication tables' lists.
const CORE_FIELDS = [
  "issuer", "authorization_endpoint", "token_endpoint", "revocation_endpoint", "introspection_endpoint",
  "scopes_supported", "response_types_supported", "response_modes_supported", "grant_types_supported",
  "token_endpoint_auth_methods_supported", "revocation_endpoint_auth_methods_supported",
  "introspection_endpoint_auth_methods_supported", "code_challenge_methods_supported",
  "authorization_response_iss_parameter_supported",
];
const ISSUER = "https://auth.example.com";
const BASE: AuthorizationServerOptions = {
  issuer: ISSUER,
  scopes: { read: "Read", write: "Write" },
  authenticateUser: () => ({ id: "ann" }),
};
type Options = Partial<AuthorizationServerOptions> & Record<string, unknown>;
/**
 * How to switch each feature on, where `{ <option>: { enabled: true } }` does not. A feature that cannot be
 * switched on either way fails the test below until it has a line here.
 */
const ON: Record<string, Options> = {
  resource_indicators: { resources: ["https://mcp.example.com/mcp"] },
  refresh_grace: { refreshGraceSeconds: 30 },
  jwt_access_tokens: { accessTokenFormat: "jwt" },
  offline_access: { offlineAccess: true },
  jwt_bearer: { trustedIssuers: [{ issuer: "https://idp.example.com", jwksUri: "https://idp.example.com/jwks", kind: "id-jag", clients: ["a"], scopes: ["read"] }] },
};
/** How to switch off a feature that is on by default; null: always on. */
const OFF: Record<string, Options | null> = {
  profile: null,
  cors: { cors: false },
  // Set up always: without its options it serves nothing (no /jwks, no jwks_uri: its own tests) and only refuses
  // clients that ask for JWTs.
  jwt_access_tokens: null,
  // Always set up: it holds the key sets of private_key_jwt clients (a core method) and trusted issuers.
  private_key_jwt: null,
};

const onOptions = (feature: AnyFeature): Options =>
  ON[feature.name] ??
    Object.fromEntries(feature.options.flatMap((o) =>
      o.type.kind === "object" && o.type.fields.some((f) => f.key === "enabled") ? [[o.key, { enabled: true }]] : []
    ));
const build = (options: Options) => {
  const all = { ...BASE, ...options } as AuthorizationServerOptions;
  return { assembled: assemble(all, SERVER_TABLES), server: createAuthorizationServer(all) };
};
const served = async (options: Options): Promise<Record<string, unknown>> => {
  const { server } = build(options);
  const response = await server.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`));
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
};
/** What a feature's table entry puts into the metadata, its grants and its client-authentication methods. */
function declared(feature: AnyFeature, options: Options) {
  const { assembled } = build(options);
  const state = assembled.states.get(feature.name);
  if (state === null || state === undefined) throw new Error(`feature ${feature.name} is still off with ${JSON.stringify(options)}: add a line to ON`);
  const context = { url: (name: string) => `${ISSUER}/${name}`, has: () => true, document: assembled.core.metadata };
  const fields = Object.entries(feature.metadata?.(state, context) ?? {}).filter(([, v]) => v !== undefined).map(([k]) => k);
  return { fields, grants: Object.keys(feature.grants?.(state) ?? {}), methods: Object.keys(feature.clientAuth?.(state) ?? {}) };
}
const allOn: Options = Object.assign({}, ...FEATURES.map(onOptions));

describe("the metadata document follows the feature table", () => {
  for (const feature of FEATURES) {
    test(`${feature.name}: its fields, grants and methods appear when it is on, and are absent when it is off`, async () => {
      const on = onOptions(feature);
      const mine = declared(feature, on);
      const doc = await served(on);
      for (const field of mine.fields) expect(doc, `${feature.name} on: ${field}`).toHaveProperty(field);
      for (const grant of mine.grants) expect(doc.grant_types_supported, `${feature.name} on`).toContain(grant);
      for (const method of mine.methods) expect(doc.token_endpoint_auth_methods_supported, `${feature.name} on`).toContain(method);

      const off = Object.hasOwn(OFF, feature.name) ? OFF[feature.name] : {};
      if (off === null) return;
      expect(build(off!).assembled.states.get(feature.name), `${feature.name} is on by default: add a line to OFF`).toBeNull();
      const without = await served(off!);
      for (const field of mine.fields.filter((f) => !CORE_FIELDS.includes(f))) expect(without, `${feature.name} off`).not.toHaveProperty(field);
      for (const grant of mine.grants) expect(without.grant_types_supported, `${feature.name} off`).not.toContain(grant);
      for (const method of mine.methods) expect(without.token_endpoint_auth_methods_supported, `${feature.name} off`).not.toContain(method);
    });
  }

  test("with every feature on, no field appears that no table entry put there, and every grant and method is listed", async () => {
    const doc = await served(allOn);
    const entries = FEATURES.map((f) => declared(f, allOn));
    const allowed = new Set([...CORE_FIELDS, ...entries.flatMap((e) => e.fields)]);
    expect(Object.keys(doc).filter((k) => !allowed.has(k))).toEqual([]);
    const grants = [...Object.keys(GRANTS), ...entries.flatMap((e) => e.grants)];
    const methods = [...Object.keys(CLIENT_AUTH_METHODS), ...entries.flatMap((e) => e.methods)];
    expect([...(doc.grant_types_supported as string[])].sort()).toEqual([...new Set(grants)].sort());
    expect([...(doc.token_endpoint_auth_methods_supported as string[])].sort()).toEqual([...new Set(methods)].sort());
    expect([...(doc.revocation_endpoint_auth_methods_supported as string[])].sort()).toEqual([...new Set(methods)].sort());
    for (const method of doc.introspection_endpoint_auth_methods_supported as string[]) expect(methods).toContain(method);
  });

  test("with every feature on, every endpoint the document names is served", async () => {
    const doc = await served(allOn);
    const { server } = build(allOn);
    const urls = Object.entries(doc).filter(([k, v]) => /_(endpoint|uri)$/.test(k) && typeof v === "string");
    expect(urls.length).toBeGreaterThan(4);
    for (const [field, url] of urls) {
      const response = await server.fetch(new Request(url as string, { method: "POST", body: "" }));
      expect(response.status, `${field}: ${url}`).not.toBe(404);
    }
  });

  test("with every feature on, every endpoint served (but pages and the metadata itself) is named in the document", async () => {
    const doc = await served(allOn);
    const named = new Set(Object.values(doc).filter((v) => typeof v === "string"));
    const endpoints = build(allOn).assembled.endpoints.filter((e) => e.route !== null && !e.page && !e.wellKnown && !e.dispatch);
    expect(endpoints.length).toBeGreaterThan(3);
    for (const endpoint of endpoints) expect(named, `${endpoint.name} (${endpoint.route})`).toContain(ISSUER + endpoint.route);
  });
});
