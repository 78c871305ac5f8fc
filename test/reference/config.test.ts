// The config file as operators write it: strict keys with "did you mean", types, contradictions, env secrets,
// password hashes, and the published JSON Schema generated from the same table the parser walks.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { createReferenceApp } from "../../lib/reference/app.ts";
import { configSchema, configWarnings, DEMO_CONFIG, parseConfig } from "../../lib/reference/config.ts";
import { hashPassword, isPasswordHash, verifyPassword } from "../../lib/reference/passwords.ts";

const base = () => ({
  users: [{ username: "ann", password: "ann-password" }],
  scopes: [{ name: "read", description: "Read" }, { name: "write", description: "Write" }],
  clients: [
    { client_id: "job", client_secret: "job-secret-0123456789", name: "Job", redirect_uris: [], scopes: ["read"], grant_types: ["client_credentials"] },
  ],
});
const parse = (value: unknown, env: Record<string, string> = {}) => parseConfig(value, "app.json", (name) => env[name]);
const problem = (value: unknown): string => {
  try {
    parse(value);
  } catch (error) {
    return (error as Error).message;
  }
  return "accepted";
};

describe("strict keys", () => {
  test.each([
    [(c: any) => (c.clients[0].clientSecret = c.clients[0].client_secret, delete c.clients[0].client_secret), 'clients[0].clientSecret: unknown key (did you mean "client_secret"?)'],
    [(c: any) => (c.users[0].passwd = "x"), 'users[0].passwd: unknown key (did you mean "password"?)'],
    [(c: any) => (c.scope = []), 'scope: unknown key (did you mean "scopes"?)'],
    [(c: any) => (c.registration = { enabeld: true }), 'registration.enabeld: unknown key (did you mean "enabled"?)'],
    [(c: any) => (c.colour = "red"), "colour: unknown key"],
  ])("%#: an unknown key is named with its path", (edit, message) => {
    const config = base();
    edit(config);
    expect(problem(config)).toBe(`Cannot load config "app.json": ${message}`);
  });

  test.each([
    [(c: any) => (c.clients[0].scopes = "read"), 'clients[0].scopes: must be a list, not the string "read"'],
    [(c: any) => (c.clients[0].grant_types = ["implicit"]), 'clients[0].grant_types[0]: must be one of "authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer", "urn:ietf:params:oauth:grant-type:token-exchange", "urn:ietf:params:oauth:grant-type:device_code", not "implicit"'],
    [(c: any) => (c.refresh_grace_seconds = -1), "refresh_grace_seconds: must be at least 0"],
    [(c: any) => (c.refresh_grace_seconds = "30"), 'refresh_grace_seconds: must be a whole number, not the string "30"'],
    [(c: any) => (c.scope_policy = "many"), 'scope_policy: must be one of "single", "multiple", not "many"'],
    [(c: any) => (c.clients[0].introspection = "everything"), 'clients[0].introspection: must be one of "own", "all", not "everything"'],
    [(c: any) => delete c.clients[0].name, "clients[0].name: is missing"],
    [(c: any) => (c.cors = { origins: "https://a.example" }), 'cors.origins: must be a list, not the string "https://a.example"'],
  ])("%#: a wrong type is named with its path", (edit, message) => {
    const config = base();
    edit(config);
    expect(problem(config)).toBe(`Cannot load config "app.json": ${message}`);
  });

  test("a top level that is not an object is named as such", () => {
    expect(problem([])).toBe('Cannot load config "app.json": the top level: must be an object, not a list');
  });

  test.each([
    [(c: any) => (c.clients[0].client_credentials_refresh_token = true), 'clients[0].client_credentials_refresh_token: client "job": client_credentials_refresh_token needs both the client_credentials and refresh_token grants'],
    [(c: any) => (delete c.clients[0].client_secret), 'clients[0].grant_types: client "job": a public client cannot use client_credentials (RFC 6749 §4.4)'],
    [(c: any) => (c.users[0].password_hash = "pbkdf2-sha256$1000$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), 'users[0]: give exactly one of "password_hash" and "password"'],
    [(c: any) => (delete c.users[0].password), 'users[0]: give exactly one of "password_hash" and "password"'],
    [(c: any) => (delete c.users[0].password, c.users[0].password_hash = "hunter2"), "users[0].password_hash: is not a hash"],
    [(c: any) => (c.users.push({ username: "ann", password: "x" })), 'users[1].username: "ann" appears twice'],
    [(c: any) => (c.clients.push({ ...c.clients[0] })), 'clients[1].client_id: "job" appears twice'],
    [(c: any) => (c.default_scope = "read write"), 'default_scope: must be one scope under the single scope policy: "read write"'],
    [(c: any) => (c.default_scope = "admin"), 'default_scope: must be a space-delimited list of known scopes: "admin"'],
    [(c: any) => (c.clients[0].default_scope = "write"), `clients[0].default_scope: the default scope of client "job" must be a space-delimited list of its scopes`],
    [(c: any) => (c.registration = { initial_access_token: "t".repeat(16) }), 'registration: "initialAccessToken" is set but "enabled" is not true'],
    [(c: any) => (c.secret = "short"), "secret: must be at least 32 characters"],
    [(c: any) => (c.scopes = []), "scopes: must name at least one scope"],
  ])("%#: a contradiction is refused", (edit, message) => {
    const config = base();
    edit(config);
    expect(problem(config)).toContain(`Cannot load config "app.json": ${message}`);
  });

  test("every key of the contract is accepted, and $schema is allowed for editors", () => {
    const config = {
      $schema: "./config.schema.json",
      ...base(),
      store: "memory",
      secret: "s".repeat(32),
      scope_policy: "multiple",
      default_scope: "read write",
      resources: ["https://api.example/"],
      client_metadata_documents: { enabled: true, allow_origins: ["https://claude.ai"] },
      registration: { enabled: true, initial_access_token: "tok".repeat(6), remove_unused_after_days: 30 },
      cors: { origins: ["https://app.example"] },
      refresh_grace_seconds: 30,
      trust_proxy: ["10.0.0.0/8"],
      metrics: { enabled: true },
    };
    config.clients.push({
      client_id: "web", client_secret: "web-secret-0123456789", name: "Web", redirect_uris: ["https://web.example/cb"], scopes: ["read", "write"],
      grant_types: ["authorization_code", "refresh_token"], default_scope: "read", introspection: "all",
    } as any);
    const parsed = parse(config);
    expect(parsed.refresh_grace_seconds).toBe(30);
    expect(parsed.trust_proxy).toEqual(["10.0.0.0/8"]);
    expect(parsed.clients[1]!.introspection).toBe("all");
    expect("$schema" in parsed).toBe(false);
  });
});

describe("secrets from the environment", () => {
  test('{ "env": NAME } is read from the environment for every secret field', () => {
    const config: any = base();
    config.clients[0].client_secret = { env: "JOB_SECRET" };
    config.secret = { env: "SIGNING" };
    config.store = { env: "STORE_URL" };
    const parsed = parse(config, { JOB_SECRET: "from-env-0123456789", SIGNING: "k".repeat(40), STORE_URL: "memory" });
    expect(parsed.clients[0]!.client_secret).toBe("from-env-0123456789");
    expect(parsed.secret).toBe("k".repeat(40));
    expect(parsed.store).toBe("memory");
  });

  test("an unset variable, or env on a field that is not a secret, is an error naming the path", () => {
    const config: any = base();
    config.clients[0].client_secret = { env: "NOPE" };
    expect(problem(config)).toBe('Cannot load config "app.json": clients[0].client_secret: environment variable "NOPE" is not set');
    const named: any = base();
    named.clients[0].name = { env: "NAME" };
    expect(problem(named)).toBe('Cannot load config "app.json": clients[0].name: must be a string, not an object');
  });
});

describe("passwords", () => {
  test("plaintext passwords warn, naming each user; hashes do not", async () => {
    const config: any = base();
    config.users.push({ username: "bob", password_hash: await hashPassword("bob-password", 1000) });
    config.users.push({ username: "cy", password: "short-pw" });
    expect(configWarnings(parse(config), "app.json")).toEqual([
      'warning: config "app.json": user "ann" has a plaintext "password"; replace it with "password_hash" from `oauth2-fetch-server hash-password`',
      'warning: config "app.json": user "cy" has a plaintext "password" of fewer than 12 characters; replace it with "password_hash" from `oauth2-fetch-server hash-password`',
    ]);
  });

  test("a password_hash signs its user in; a wrong password and an unknown user do not", async () => {
    const hash = await hashPassword("bob-password", 1000);
    expect(isPasswordHash(hash)).toBe(true);
    expect(await verifyPassword("bob-password", hash)).toBe(true);
    expect(await verifyPassword("bob-passwordx", hash)).toBe(false);
    const config = parse({ ...base(), users: [{ username: "bob", password_hash: hash }] });
    const app = await createReferenceApp({ issuer: "http://127.0.0.1", config, passwordIterations: 1000 });
    const authorize = "http://127.0.0.1/index.php?module=OAuth2&action=authorize&response_type=code&client_id=web&redirect_uri=https%3A%2F%2Fw%2Fcb&scope=read&state=s";
    await app.server.clients.register({ client_id: "web", client_secret: "web-secret-0123456789", name: "Web", type: "confidential", redirect_uris: ["https://w/cb"], scopes: ["read"], grant_types: ["authorization_code"] });
    const page = await app.fetch(new Request(authorize));
    const csrf = /name="csrf" value="([^"]*)"/.exec(await page.text())![1]!;
    const cookie = page.headers.get("set-cookie")?.split(";")[0] ?? "";
    const login = (username: string, password: string) =>
      app.fetch(new Request(authorize, { method: "POST", headers: { cookie }, body: new URLSearchParams({ username, password, csrf }) }));
    const session = (response: Response) => response.headers.getSetCookie().some((c) => c.startsWith("oauth2_session="));
    expect(session(await login("bob", "wrong-password"))).toBe(false);
    expect(session(await login("nobody", "bob-password"))).toBe(false);
    expect(session(await login("bob", "bob-password"))).toBe(true);
  });
});

describe("the published JSON Schema", () => {
  const published = JSON.parse(readFileSync("lib/reference/config.schema.json", "utf8"));

  test("lib/reference/config.schema.json is the one generated from the parser's table (npm run schema)", () => {
    expect(published).toEqual(configSchema());
  });

  test("the schema and the parser agree on every key, at every level", () => {
    // Every property the schema declares is accepted by the parser with a value of its type, and the schema
    // refuses unknown keys exactly where the parser does.
    const walk = (schema: any, path: string): string[] =>
      schema.type === "object"
        ? [path, ...Object.entries(schema.properties).flatMap(([k, s]) => walk(s, `${path}.${k}`))]
        : schema.type === "array" ? walk(schema.items, `${path}[]`) : [];
    const objects = walk(published, "$");
    expect(objects.sort()).toEqual([
      "$", "$.users[]", "$.scopes[]", "$.clients[]", "$.registration", "$.client_metadata_documents", "$.cors", "$.metrics", "$.lifetimes", "$.signing_keys",
      "$.clients[].jwks", "$.clients[].jwks.keys[]", "$.trusted_issuers[]", "$.trusted_issuers[].jwks", "$.trusted_issuers[].jwks.keys[]", "$.token_exchange",
      "$.dpop", "$.device_authorization",
    ].sort());
    // At each object of the schema, an unknown key is refused by the parser too.
    for (const path of objects) {
      const config: any = base();
      const at = path.replace(/^\$\.?/, "").replace(/\[\]/g, "[0]");
      const target = at === "" ? config : at.split(".").reduce((o: any, k) => {
        const [name, index] = k.split("[");
        o[name!] ??= index === undefined ? {} : [{}];
        return index === undefined ? o[name!] : o[name!][0];
      }, config);
      target.zzz_unknown = 1;
      expect(problem(config), path).toContain(`${at === "" ? "" : `${at}.`}zzz_unknown: unknown key`);
    }
    const keys = (schema: any) => Object.keys(schema.properties).sort();
    expect(keys(published)).toEqual(
      ["$schema", "users", "scopes", "clients", "store", "secret", "scope_policy", "default_scope", "resources", "client_metadata_documents",
        "registration", "cors", "refresh_grace_seconds", "trust_proxy", "body_timeout_seconds", "token_cache_ms", "audit_log", "metrics", "lifetimes", "offline_access",
        "access_token_format", "access_token_audience", "signing_keys", "trusted_issuers", "token_exchange", "dpop", "device_authorization"].sort(),
    );
    expect(keys(published.properties.clients.items)).toEqual(
      ["client_id", "client_secret", "name", "redirect_uris", "scopes", "grant_types", "client_credentials_refresh_token", "default_scope", "introspection", "access_token_format",
        "token_endpoint_auth_method", "jwks", "jwks_uri", "dpop_bound_access_tokens"].sort(),
    );
    expect(keys(published.properties.users.items)).toEqual(["username", "password", "password_hash", "name", "email"].sort());
  });

  test("the demo config and the reference server's documented example pass the parser", () => {
    expect(() => parse(DEMO_CONFIG)).not.toThrow();
    const readme = readFileSync("lib/reference/README.md", "utf8");
    const block = /## The config file[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)![1]!;
    expect(() => parse(JSON.parse(block), { EXPORT_JOB_SECRET: "from-the-environment-0123" })).not.toThrow();
  });
});
