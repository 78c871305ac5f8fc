/**
 * The public keys the server verifies others' signatures with: `private_key_jwt` clients' (RFC 7523 §2.2) and
 * trusted issuers' (identity providers, workload platforms). A set given inline is parsed once; a set at a URL is
 * fetched through the fenced outbound door (`remoteJwks`: SSRF guard, a cap on decoded bytes, a deadline, no
 * redirects), kept within Cache-Control bounds and fetched again once on an unknown `kid`, at most every 30 s
 * per URL. Always on; the metadata names the algorithms when `private_key_jwt` is offered.
 *
 * @module
 */
import { defineFeature, type Feature } from "../core/feature.ts";
import type { KeySource } from "../jose/jws.ts";
import { localJwks } from "../jose/jwks.ts";
import { remoteJwks } from "../jose/remote_jwks.ts";
import { ASSERTION_ALGORITHMS } from "../jwt_assertion.ts";
import type { ClientRecord } from "../storage/types.ts";
import { makeRoom } from "../evict.ts";

/** How key sets are fetched (`keySets` of the server). Library only. */
export interface KeySetFetchOptions {
  /** The fetch to use. Default `globalThis.fetch` (see `guardedFetch` for what a replacement must not do). */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * Decides, before each fetch of a key set a stranger named (a registered or document client's `jwks_uri`),
   * whether the URL may be fetched: the place for a DNS check of the resolved address. Default: everything that
   * passed the built-in checks.
   */
  allowFetch?: (url: URL) => boolean | Promise<boolean>;
  /** Milliseconds one fetch may take, headers and body. Default 5000. */
  timeout?: number;
}

/** The options this feature adds. */
export interface KeySetOptions {
  /** How the key sets of `private_key_jwt` clients and trusted issuers are fetched. */
  keySets?: KeySetFetchOptions;
}

/** Where a key set at a URL may be fetched from. */
export interface KeySetFence {
  /** The URL comes from the operator (a configured client, a trusted issuer): fetched as it is, loopback included. */
  trusted: boolean;
  /** Origins exempt from the https and private-host rules (those the operator listed for documents). */
  allowOrigins?: readonly string[];
}

/** The feature's state: key sources, made once per set and kept. */
export interface KeySets {
  /** The key source of an inline JWK Set; throws `JoseError` for a set that is not one. */
  inline(set: unknown): KeySource;
  /** The key source of the JWK Set at `url`. */
  remote(url: string, fence: KeySetFence): KeySource;
  /**
   * The keys of a `private_key_jwt` client (its `jwks` or `jwks_uri`), or null for a client without. A URL the
   * operator gave (config file, command line, library) is trusted as such; a registered or document client's is
   * fenced, exempt only where `allowOrigins` lists its origin.
   */
  ofClient(client: ClientRecord, allowOrigins: readonly string[]): KeySource | null;
}

/** Most key sets kept: a stranger registering clients with new URLs cannot grow the cache past it. */
const MAX_SETS = 1000;

/** A map that forgets its oldest entry past {@link MAX_SETS}. */
function bounded<V>(): { get(key: string): V | undefined; put(key: string, value: V): V } {
  const map = new Map<string, V>();
  return {
    get: (key) => map.get(key),
    put(key, value) {
      makeRoom(map, MAX_SETS);
      map.set(key, value);
      return value;
    },
  };
}

/** Creates the key sets of one server. */
export function keySets(options: KeySetFetchOptions, clock: () => number): KeySets {
  const inlineSets = bounded<KeySource>();
  const remoteSets = bounded<KeySource>();
  const state: KeySets = {
    inline(set) {
      const text = JSON.stringify(set);
      return inlineSets.get(text) ?? inlineSets.put(text, localJwks(set));
    },
    remote(url, fence) {
      const allowOrigins = fence.allowOrigins ?? [];
      const key = `${fence.trusted ? "t" : "f"}|${allowOrigins.join(" ")}|${url}`;
      return remoteSets.get(key) ?? remoteSets.put(key, remoteJwks(url, {
        trusted: fence.trusted,
        allowOrigins,
        now: clock,
        ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
        ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
        // The operator's own URLs need no DNS check; a stranger's go through the hook.
        ...(options.allowFetch === undefined || fence.trusted ? {} : { allowFetch: options.allowFetch }),
      }));
    },
    ofClient(client, allowOrigins) {
      const { jwks, jwks_uri } = client.metadata ?? {};
      if (jwks !== undefined) return state.inline(jwks);
      if (typeof jwks_uri !== "string") return null;
      const trusted = client.origin !== "registration" && client.origin !== "document";
      return state.remote(jwks_uri, { trusted, allowOrigins: client.origin === "document" ? allowOrigins : [] });
    },
  };
  return state;
}

const fn = { kind: "value", expect: "a function", test: (v: unknown) => typeof v === "function" } as const;

/** Every endpoint whose client authentication may use `private_key_jwt`, by its metadata prefix (RFC 8414 §2). */
const AUTH_ENDPOINTS = ["token_endpoint", "revocation_endpoint", "introspection_endpoint"];

/** The key sets feature. */
export const keySetsFeature: Feature<"private_key_jwt", KeySets, KeySetOptions> = defineFeature({
  name: "private_key_jwt",
  doc: "Public keys of private_key_jwt clients and trusted issuers, inline or fetched (fenced, cached).",
  options: [{
    key: "keySets",
    type: {
      kind: "object",
      fields: [
        { key: "fetch", type: fn, doc: "The fetch to use." },
        { key: "allowFetch", type: fn, doc: "Decides whether a stranger's key-set URL may be fetched." },
        { key: "timeout", type: { kind: "integer", min: 1 }, doc: "Milliseconds one fetch may take; default 5000." },
      ],
    },
    doc: "How the key sets of private_key_jwt clients and trusted issuers are fetched.",
    config: null,
  }],
  reads: ["clock"],
  setup: (options, core): KeySets => keySets(options.keySets ?? {}, core.clock),
  // RFC 8414 §2: with private_key_jwt offered, the algorithms it takes (the MCP client-credentials extension
  // requires the token endpoint's).
  metadata(_, { document }) {
    const fields: Record<string, unknown> = {};
    for (const endpoint of AUTH_ENDPOINTS) {
      const methods = document[`${endpoint}_auth_methods_supported`];
      if (Array.isArray(methods) && methods.includes("private_key_jwt")) fields[`${endpoint}_auth_signing_alg_values_supported`] = [...ASSERTION_ALGORITHMS];
    }
    return fields;
  },
});
