/**
 * Builds one server from its options and the tables of the core and the features: checks every option against
 * the one option table, resolves the core context, sets up each feature, binds the enabled grants,
 * client-authentication methods and endpoints to views of the core, and builds the metadata document.
 *
 * @module
 */
import { hmacKey } from "../crypto.ts";
import { clientAdmission, type AdmissionRule } from "./admission.ts";
import { bindClientAuth, type ClientAuthMethod } from "./client_auth.ts";
import type { BoundClientAuth, BoundGrant, Core } from "./context.ts";
import { CORE_OPTIONS, type CoreOptions, resolveCore } from "./core_options.ts";
import { type BoundEndpoint, bindEndpoint, type Endpoint } from "./endpoint.ts";
import { emitEvent } from "./exchange.ts";
import type { Feature } from "./feature.ts";
import { bindGrant, type Grant } from "./grant.ts";
import { checkOptions, type OptionSpec } from "./option_table.ts";
import type { HttpHooks } from "./router.ts";
import { bindView } from "./view.ts";

/** A feature of any state and options, as a table holds it. */
// deno-lint-ignore no-explicit-any
export type AnyFeature = Feature<string, any, any>;

/** What a server is built from: the core's own endpoints, grants and methods, and the feature table. */
export interface ServerTables {
  readonly endpoints: readonly Endpoint[];
  readonly grants: Readonly<Record<string, Grant>>;
  readonly clientAuth: Readonly<Record<string, ClientAuthMethod>>;
  readonly features: readonly AnyFeature[];
}

/** A built server: its core context, bound endpoints, the features' HTTP hooks and states. */
export interface Assembled {
  readonly core: Core;
  readonly endpoints: readonly BoundEndpoint[];
  readonly hooks: readonly HttpHooks[];
  readonly states: ReadonlyMap<string, unknown>;
}

/** The whole option table: the core's options, then each feature's. */
export function optionTable(features: readonly AnyFeature[]): readonly OptionSpec[] {
  return [...CORE_OPTIONS, ...features.flatMap((f) => f.options)];
}

/** Builds a server; throws `ConfigurationError` naming the bad option. */
export function assemble(options: CoreOptions, tables: ServerTables): Assembled {
  checkOptions(optionTable(tables.features), options);
  const { paths, ...values } = resolveCore(options);
  let csrf: Promise<CryptoKey> | undefined;
  // Filled in below, then frozen: features set up against the fields resolved so far.
  const core = {
    ...values,
    csrfKey: () => (csrf ??= hmacKey(values.secret)),
    emit: (event) => emitEvent(values, event, undefined),
  } as Partial<Core> as { -readonly [K in keyof Core]: Core[K] };

  const states = new Map<string, unknown>();
  for (const feature of tables.features) {
    states.set(feature.name, feature.setup(options, bindView(core, states, feature.reads, []) as never));
  }
  const enabled = tables.features.filter((f) => states.get(f.name) !== null);
  const stateOf = (f: AnyFeature) => states.get(f.name);

  const grantTable: Record<string, Grant> = { ...tables.grants };
  const methodTable: Record<string, ClientAuthMethod> = { ...tables.clientAuth };
  for (const feature of enabled) {
    Object.assign(grantTable, feature.grants?.(stateOf(feature)));
    Object.assign(methodTable, feature.clientAuth?.(stateOf(feature)));
  }
  const rules: AdmissionRule[] = enabled.flatMap((f) => (f.admission ? [f.admission(stateOf(f))] : []));
  core.admission = clientAdmission({
    scopes: values.scopes,
    grants: new Map(Object.entries(grantTable)),
    methods: new Map(Object.entries(methodTable)),
    rules,
    clock: values.clock,
  });
  const grants = new Map<string, BoundGrant>();
  const clientAuth = new Map<string, BoundClientAuth>();
  core.grants = grants;
  core.clientAuth = clientAuth;
  for (const [name, grant] of Object.entries(grantTable)) grants.set(name, bindGrant(grant, core, states));
  for (const [name, method] of Object.entries(methodTable)) clientAuth.set(name, bindClientAuth(method, core, states));

  const endpoints: Endpoint[] = [];
  for (const endpoint of tables.endpoints) {
    const route = Object.hasOwn(paths, endpoint.name) ? paths[endpoint.name as keyof typeof paths] : endpoint.route;
    endpoints.push(route === endpoint.route ? endpoint : { ...endpoint, route });
  }
  for (const feature of enabled) endpoints.push(...(feature.endpoints?.(stateOf(feature)) ?? []));
  const served = endpoints.filter((e) => e.when?.(core) ?? true);

  const origin = new URL(values.issuer).origin;
  const byName = new Map(served.map((e) => [e.name, e]));
  const url = (name: string): string | undefined => {
    const endpoint = byName.get(name);
    if (endpoint?.route == null) return undefined;
    return endpoint.wellKnown ? origin + endpoint.route + values.basePath : values.issuer + endpoint.route;
  };
  const metadata: Record<string, unknown> = {
    issuer: values.issuer,
    authorization_endpoint: url("authorize"),
    token_endpoint: url("token"),
    revocation_endpoint: url("revoke"),
    introspection_endpoint: url("introspect"),
    scopes_supported: [...values.scopes.keys()],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: [...grants.keys()],
    token_endpoint_auth_methods_supported: [...clientAuth.keys()],
    revocation_endpoint_auth_methods_supported: [...clientAuth.keys()],
    // RFC 7662 §2.1: the caller must authenticate (a public client proves nothing).
    introspection_endpoint_auth_methods_supported: [...clientAuth].filter(([, m]) => m.confidential).map(([name]) => name),
    code_challenge_methods_supported: ["S256"],
    authorization_response_iss_parameter_supported: true,
  };
  const has = (name: string) => byName.has(name);
  for (const feature of enabled) Object.assign(metadata, feature.metadata?.(stateOf(feature), { url, has, document: metadata }));
  for (const key of Object.keys(metadata)) if (metadata[key] === undefined) delete metadata[key];
  core.metadata = Object.freeze(metadata);
  const bound = served.map((e) => bindEndpoint(e, core, states));

  const hooks: HttpHooks[] = [];
  for (const feature of enabled) {
    const state = stateOf(feature);
    if (feature.intercept || feature.decorate) {
      hooks.push({
        ...(feature.intercept ? { intercept: (exchange, endpoint) => feature.intercept!(state, exchange, endpoint) } : {}),
        ...(feature.decorate ? { decorate: (exchange, endpoint, answer) => feature.decorate!(state, exchange, endpoint, answer) } : {}),
      });
    }
  }
  return { core: Object.freeze(core) as Core, endpoints: bound, hooks, states };
}
