import { describe, expect, it } from "vitest";
import { parseTarget, TargetError } from "../../conformance/mod.ts";
import { referenceTarget } from "./reference.ts";

const minimal = () => ({
  base_url: "https://as.example.com/analytics/",
  clients: {
    public: { client_id: "spa", redirect_uri: "https://app.example.com/cb", scope: "read" },
    confidential: { client_id: "web", client_secret: "s", redirect_uri: "https://web.example.com/cb", scope: "read" },
    client_credentials: { client_id: "job", client_secret: "s", scope: "export" },
    second: { client_id: "other" },
  },
  forbidden_scope: "admin",
  approval: { username: "u", password: "p" },
});

describe("parseTarget", () => {
  it("fills in the spec's addresses below base_url", () => {
    const t = parseTarget(minimal());
    expect(t.authorize_url).toBe("https://as.example.com/analytics/index.php?module=OAuth2&action=authorize");
    expect(t.token_url).toBe("https://as.example.com/analytics/index.php?module=OAuth2&action=token");
    expect(t.issuer).toBe("https://as.example.com/analytics");
    expect(t.approval).toEqual({ driver: "html_form", username: "u", password: "p", deny: true });
    expect(t.resource).toBeUndefined();
  });

  it("re-resolves relative addresses against an overriding base_url", () => {
    const t = parseTarget({ ...minimal(), token_url: "/oauth/token", resource: { url: "api/me" } }, { base_url: "http://127.0.0.1:5555" });
    expect(t.token_url).toBe("http://127.0.0.1:5555/oauth/token");
    expect(t.resource).toEqual({ url: "http://127.0.0.1:5555/api/me", client: "client_credentials", scope: "export" });
  });

  it("resolves a driver module next to the target file", () => {
    const t = parseTarget({ ...minimal(), approval: { driver: "module", module: "./drivers/sso.ts" } }, { location: "file:///srv/conf/target.json" });
    expect(t.approval).toEqual({ driver: "module", module: "file:///srv/conf/drivers/sso.ts", deny: true });
  });

  it("lists every problem at once, naming the field", () => {
    const bad = minimal() as Record<string, unknown>;
    bad.base_url = "not a url";
    (bad.clients as Record<string, Record<string, unknown>>).public!.scope = "read write";
    delete (bad.clients as Record<string, Record<string, unknown>>).confidential!.client_secret;
    bad.forbidden_scope = "export";
    const error = (() => {
      try {
        parseTarget(bad);
      } catch (e) {
        return e;
      }
    })() as TargetError;
    expect(error).toBeInstanceOf(TargetError);
    expect(error.problems).toEqual([
      `"base_url" must be an absolute http(s) URL: "not a url"`,
      `"clients.public.scope" must be exactly one scope token: "read write"`,
      `"clients.confidential.client_secret" must be a non-empty string`,
      `"forbidden_scope" must not be one of client "job"'s scopes: "export"`,
    ]);
  });

  it("reads the reference target, and is idempotent", () => {
    const t = referenceTarget();
    expect(parseTarget(t)).toEqual(t);
    expect(t.clients.client_credentials_refresh?.client_id).toBe("demo-backend-refresh");
  });
});
