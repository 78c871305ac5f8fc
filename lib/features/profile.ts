/**
 * The rule book: the spec's (its `index.php?module=OAuth2&action=…` addresses besides the clean paths, and
 * exactly one scope per request, spec §8) or RFC 6749's (clean paths only, several space-delimited scopes, as
 * MCP hosts send them). Always on; `"spec"` by default.
 *
 * @module
 */
import { AdmissionError, type AdmissionRule } from "../core/admission.ts";
import { defineEndpoint, type Endpoint } from "../core/endpoint.ts";
import { defineFeature, type Feature } from "../core/feature.ts";
import { optionError } from "../core/option_table.ts";
import { queryOf } from "../http.ts";
import type { ScopePolicy } from "../scope.ts";

/**
 * Which rule book the server follows. `"spec"` (the default): the spec's `index.php?module=OAuth2&action=…`
 * addresses besides the clean paths, and exactly one scope per request (spec §8). `"rfc6749"`: clean paths
 * only, and several space-delimited scopes (RFC 6749 §3.3). An object picks each part; what it leaves out
 * comes from `"spec"`.
 *
 * @example
 * ```ts
 * createAuthorizationServer({ issuer, scopes, profile: { scopePolicy: "multiple" } });
 * ```
 */
export type Profile = "spec" | "rfc6749" | ProfileParts;

/** The parts of a {@link Profile}. */
export interface ProfileParts {
  /** Serve `{issuer}/index.php?module=OAuth2&action=authorize|token` (spec §4.1, §4.2). */
  specAddresses?: boolean;
  /** `"single"`: exactly one scope per request; `"multiple"`: RFC 6749 §3.3. */
  scopePolicy?: ScopePolicy;
}

/** The options this feature adds. */
export interface ProfileOptions {
  /** The spec's rules or RFC 6749's; see {@link Profile}. Default `"spec"`. */
  profile?: Profile;
}

/** The rule book in force. */
export interface ProfileState {
  readonly specAddresses: boolean;
  readonly scopePolicy: ScopePolicy;
}

const PROFILES = {
  spec: { specAddresses: true, scopePolicy: "single" },
  rfc6749: { specAddresses: false, scopePolicy: "multiple" },
} as const satisfies Record<string, ProfileState>;

/** The spec's addresses: `{base}/index.php?module=OAuth2&action=…`, handed to the endpoint of that name. */
const SPEC_ADDRESSES: Endpoint = defineEndpoint({
  name: "spec_addresses",
  route: "/index.php",
  page: false,
  cors: false,
  reads: [],
  methods: {},
  dispatch(target) {
    const raw = queryOf(target);
    // The token address as every spec client writes it, without parsing (the same answer the parse gives).
    if (raw === "module=OAuth2&action=token") return "token";
    const query = new URLSearchParams(raw);
    if (query.get("module") !== "OAuth2") return undefined;
    const action = query.get("action");
    return action === "authorize" || action === "token" ? action : undefined;
  },
});

/** The profile feature. */
export const profile: Feature<"profile", ProfileState, ProfileOptions> = defineFeature({
  name: "profile",
  doc: "The spec's addresses and one-scope rule, or RFC 6749's several scopes (always on).",
  options: [{
    key: "profile",
    type: {
      kind: "value",
      expect: '"spec", "rfc6749" or an object { specAddresses, scopePolicy }',
      test: (v) => v === "spec" || v === "rfc6749" || (typeof v === "object" && v !== null && !Array.isArray(v)),
    },
    doc: 'The rule book: "spec" (default) or "rfc6749", or { specAddresses, scopePolicy }.',
    config: {
      key: "scope_policy",
      type: { kind: "string", enum: ["single", "multiple"] },
      doc: '"single" (the spec: exactly one scope per request, default) or "multiple" (RFC 6749 §3.3).',
      // The reference server keeps the spec's addresses whatever the scope policy.
      convert: (scopePolicy) => ({ specAddresses: true, scopePolicy }),
    },
  }],
  reads: ["defaultScope"],
  setup(options, core): ProfileState {
    const value = options.profile;
    let state: ProfileState;
    if (value === undefined || value === "spec" || value === "rfc6749") state = PROFILES[value ?? "spec"];
    else {
      const { specAddresses = true, scopePolicy = "single" } = value;
      if (typeof specAddresses !== "boolean") throw optionError("profile.specAddresses", "must be true or false");
      if (scopePolicy !== "single" && scopePolicy !== "multiple") {
        throw optionError("profile.scopePolicy", `must be "single" or "multiple": "${String(scopePolicy)}"`);
      }
      state = { specAddresses, scopePolicy };
    }
    if (state.scopePolicy === "single" && core.defaultScope?.includes(" ")) {
      throw optionError("defaultScope", `must be one scope under the single scope policy: "${core.defaultScope}"`);
    }
    return state;
  },
  endpoints: (state) => (state.specAddresses ? [SPEC_ADDRESSES] : []),
  metadata(state, { url, has, document }) {
    if (!state.specAddresses) return {};
    // Where a clean path is switched off, the spec's address is the endpoint's address.
    const spec = (action: string) => `${document.issuer as string}/index.php?module=OAuth2&action=${action}`;
    return {
      authorization_endpoint: url("authorize") ?? (has("authorize") ? spec("authorize") : undefined),
      token_endpoint: url("token") ?? spec("token"),
    };
  },
  admission: (state): AdmissionRule => (client) => {
    if (state.scopePolicy === "single" && client.default_scope?.includes(" ")) {
      throw new AdmissionError("default_scope", `the default scope of client "${client.client_id}" must be one scope under the single scope policy`);
    }
  },
});
