/**
 * Capability discovery: the features read from a server's metadata, cases of a feature the server does not
 * offer reported NOT_OFFERED (never passed), the target file's say over the metadata, and what a profile
 * requires failing or warning when missing.
 */
import { describe, expect, it } from "vitest";
import {
  type CaseDef,
  FEATURES,
  featuresOf,
  type FeatureId,
  formatJunit,
  formatText,
  type Metadata,
  runConformance,
} from "../../conformance/mod.ts";
import { referenceApp, referenceTarget, run } from "./reference.ts";

const ISSUER = "http://127.0.0.1:8080";

/** A metadata document advertising every feature the suite knows. */
const EVERYTHING: Metadata = {
  issuer: ISSUER,
  response_types_supported: ["code"],
  code_challenge_methods_supported: ["S256"],
  registration_endpoint: `${ISSUER}/register`,
  client_id_metadata_document_supported: true,
  revocation_endpoint: `${ISSUER}/revoke`,
  introspection_endpoint: `${ISSUER}/introspect`,
  jwks_uri: `${ISSUER}/jwks`,
  token_endpoint_auth_methods_supported: ["private_key_jwt"],
  grant_types_supported: [
    "client_credentials",
    "urn:ietf:params:oauth:grant-type:jwt-bearer",
    "urn:ietf:params:oauth:grant-type:token-exchange",
    "urn:ietf:params:oauth:grant-type:device_code",
  ],
  device_authorization_endpoint: `${ISSUER}/device_authorization`,
  dpop_signing_alg_values_supported: ["ES256"],
  authorization_response_iss_parameter_supported: true,
  scopes_supported: ["read", "offline_access"],
};

/** A server that serves `metadata` and answers everything else 404. */
const serving = (metadata: Metadata | undefined) => (request: Request) =>
  Promise.resolve(
    metadata !== undefined && new URL(request.url).pathname === "/.well-known/oauth-authorization-server"
      ? Response.json(metadata)
      : new Response("not here", { status: 404 }),
  );

const driver = { approve: () => Promise.reject(new Error("no approvals here")) };
const needs = (id: string, features: FeatureId[]): CaseDef => ({
  id,
  title: id,
  area: "token",
  ref: "test",
  level: "MUST",
  profiles: ["spec"],
  features,
  run: () => Promise.resolve("ran"),
});

describe("the feature table", () => {
  it("detects every feature from the metadata field that announces it, and none from an empty document", () => {
    const offered = (m: Metadata) => featuresOf(referenceTarget(), m).filter((f) => f.offered).map((f) => f.id);
    // RFC 8707 defines no metadata field: resource indicators come from the target file alone.
    expect(offered(EVERYTHING).sort()).toEqual(Object.keys(FEATURES).filter((id) => id !== "resource_indicators").sort());
    expect(offered({})).toEqual(["metadata"]);
    for (const [field, value] of Object.entries(EVERYTHING)) {
      if (field === "issuer") continue;
      const { [field]: _, ...rest } = EVERYTHING;
      const lost = offered(EVERYTHING).filter((id) => !offered(rest).includes(id));
      expect(lost.length, `${field} ${JSON.stringify(value)} announces a feature`).toBeGreaterThan(0);
    }
  });

  it("lets the target file say what the server has, over the metadata", () => {
    const target = referenceTarget();
    target.features = { dpop: true, revocation: false };
    const byId = new Map(featuresOf(target, EVERYTHING).map((f) => [f.id, f]));
    expect(byId.get("revocation")).toMatchObject({ offered: false, advertised: true, source: "target" });
    const none = new Map(featuresOf(target, undefined).map((f) => [f.id, f]));
    expect(none.get("dpop")).toMatchObject({ offered: true, advertised: false, source: "target" });
    expect(none.get("jwks_uri" as FeatureId)).toBeUndefined();
    expect(none.get("introspection")).toMatchObject({ offered: false, detail: "no metadata (introspection_endpoint)" });
  });
});

describe("a case whose feature the server does not offer", () => {
  it("is NOT_OFFERED, counted apart, and never passed: with its dependants, in every report format", async () => {
    const cases: CaseDef[] = [needs("X-DPOP", ["dpop"]), { ...needs("X-AFTER", []), needs: ["X-DPOP"] }, needs("X-CORE", [])];
    const report = await runConformance(referenceTarget(), { cases, fetch: serving({ issuer: ISSUER }), driver, preflight: false });
    expect(report.results.map((r) => [r.id, r.verdict])).toEqual([["X-DPOP", "NOT_OFFERED"], ["X-AFTER", "NOT_OFFERED"], ["X-CORE", "PASS"]]);
    expect(report.results[0]!.message).toBe("Not offered: DPoP sender-constrained tokens (the metadata lacks dpop_signing_alg_values_supported (a non-empty list))");
    expect(report.summary).toMatchObject({ passed: 1, not_offered: 2, skipped: 0, failed: 0 });
    expect(report.discovery?.features.find((f) => f.id === "dpop")).toMatchObject({ offered: false });
    const text = formatText(report);
    expect(text).toMatch(/NOT OFFERED +X-DPOP/);
    expect(text).toMatch(/not offered +dpop/);
    expect(text).toContain("2 not offered");
    expect(text.split("\n").at(-1)).toBe("1 passed, 0 failed, 0 blocked");
    expect(formatJunit(report)).toContain(`<skipped message="NOT OFFERED: Not offered: DPoP`);
  });

  it("runs where the metadata advertises the feature, or the target file says so", async () => {
    const cases = [needs("X-DPOP", ["dpop"])];
    const advertised = await runConformance(referenceTarget(), { cases, fetch: serving(EVERYTHING), driver, preflight: false });
    expect(advertised.results[0]!.verdict).toBe("PASS");
    const target = referenceTarget();
    target.features = { dpop: true };
    const declared = await runConformance(target, { cases, fetch: serving(undefined), driver, preflight: false });
    expect(declared.results[0]!.verdict).toBe("PASS");
  });

  it("is NOT_OFFERED even when it is an expected failure: not offered is no failure", async () => {
    const cases = [needs("X-DPOP", ["dpop"])];
    const report = await runConformance(referenceTarget(), { cases, fetch: serving({}), driver, preflight: false, expected: new Map([["X-DPOP", "known"]]) });
    expect(report.summary).toMatchObject({ not_offered: 1, expected: 0 });
  });
});

describe("what a profile requires", () => {
  it("fails a missing MUST feature and warns on a missing SHOULD, with the metadata as evidence", async () => {
    const app = await referenceApp();
    const withoutS256 = async (request: Request) => {
      const response = await app.fetch(request);
      if (!new URL(request.url).pathname.startsWith("/.well-known/oauth-authorization-server")) return response;
      const body = await response.json() as Metadata;
      delete body.code_challenge_methods_supported;
      return Response.json(body);
    };
    const report = await run(withoutS256, { profile: "mcp", only: "MCP-METADATA-*,MCP-CIMD-SUPPORTED" });
    const verdicts = Object.fromEntries(report.results.map((r) => [r.id, r.verdict]));
    expect(verdicts).toEqual({ "MCP-METADATA-PKCE": "FAIL", "MCP-METADATA-CODE": "PASS", "MCP-CIMD-SUPPORTED": "WARN" });
    const pkce = report.results.find((r) => r.id === "MCP-METADATA-PKCE")!;
    expect(pkce.message).toMatch(/^Profile mcp requires PKCE with S256 announced/);
    expect(pkce.evidence[0]!.request.url).toMatch(/oauth-authorization-server$/);
  });

  it("leaves other profiles alone: the spec profile requires none of it", async () => {
    const app = await referenceApp();
    const report = await run(app.fetch, { profile: "spec", only: "AUTHZ-CODE-ISSUED" });
    expect(report.results.some((r) => r.area === "requirements")).toBe(false);
  });
});
