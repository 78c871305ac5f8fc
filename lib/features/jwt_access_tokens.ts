/**
 * JWT access tokens (RFC 9068) and the signing keys behind them: keys kept in the store, sealed under the
 * server's secret and shared by every instance of one issuer, published at `/jwks` (RFC 7517 §5, RFC 8414
 * `jwks_uri`) and rotated on a schedule. Opaque tokens stay the default; the format is chosen server-wide or per
 * client. Dormant until `accessTokenFormat` or `signingKeys` is set: then `/jwks` is served and clients may ask
 * for JWTs.
 *
 * @module
 */
import { AdmissionError } from "../core/admission.ts";
import { defineEndpoint, type Endpoint } from "../core/endpoint.ts";
import { defineFeature, type Feature } from "../core/feature.ts";
import { optionError } from "../core/option_table.ts";
import type { JwsAlgorithm } from "../jose/algorithms.ts";
import { ConfigurationError } from "../errors.ts";
import type { Jwk } from "../jose/jwk.ts";
import type { KeySource } from "../jose/jws.ts";
import { type Keyring, keyring, type Rotation, type SigningKeyInfo } from "../keys/keyring.ts";
import type { ClientRecord } from "../storage/types.ts";

/** The format of access tokens: random strings looked up in the store, or signed JWTs (RFC 9068). */
export type AccessTokenFormat = "opaque" | "jwt";

/** Algorithms of new signing keys (RFC 7518 §3, RFC 8037). */
export const SIGNING_ALGORITHMS: readonly JwsAlgorithm[] = ["ES256", "EdDSA", "RS256", "PS256"];

/** The signing keys' options. */
export interface SigningKeysOptions {
  /** The algorithm of new keys. Default `ES256`. A change takes effect at the next rotation. */
  algorithm?: "ES256" | "EdDSA" | "RS256" | "PS256";
  /** Days a key signs before its successor (published 15 minutes earlier) takes over. Default 90. */
  rotateAfterDays?: number;
  /**
   * Days a key stays published at `/jwks` after it stops signing, so the tokens it signed verify until they
   * expire; at least the access-token lifetime. Default 7.
   */
  retireAfterDays?: number;
}

/** The options this feature adds. */
export interface JwtAccessTokenOptions {
  /**
   * `"jwt"` issues RFC 9068 access tokens that resource servers verify with the keys at `/jwks`; `"opaque"`
   * (the default) random ones. A client's own `access_token_format` overrides it. Refresh tokens stay opaque.
   */
  accessTokenFormat?: AccessTokenFormat;
  /**
   * The `aud` of JWT access tokens bound to no resource (RFC 9068 §3 requires a default audience): your API's
   * identifier. Default: the issuer, which no resource server but the issuer's own should accept.
   */
  accessTokenAudience?: string;
  /** The signing keys behind JWT access tokens: algorithm and rotation. Setting it serves `/jwks`. */
  signingKeys?: SigningKeysOptions;
}

/** The feature's state: always present; `enabled` when configured. */
export interface JwtAccessTokens {
  /** Whether `/jwks` is served and JWTs may be issued. */
  readonly enabled: boolean;
  /** The format for clients that name none. */
  readonly format: AccessTokenFormat;
  /** The `aud` of tokens bound to no resource. */
  readonly audience: string;
  /** The `iss` of every token. */
  readonly issuer: string;
  /** The keys. */
  readonly keys: Keyring;
}

const DAY_MS = 86_400_000;

/** The access-token format of a client: its own `access_token_format`, else the server's. */
export function accessTokenFormat(state: JwtAccessTokens, client: Pick<ClientRecord, "metadata">): AccessTokenFormat {
  const own = client.metadata?.access_token_format;
  return own === "jwt" || own === "opaque" ? own : state.format;
}

/** `GET /jwks`: the published public keys, cacheable for a short while so that rotations propagate. */
function jwksEndpoint(state: JwtAccessTokens): Endpoint {
  return defineEndpoint({
    name: "jwks",
    route: "/jwks",
    page: false,
    cors: true,
    reads: [],
    methods: {
      GET: async () => ({
        status: 200,
        // RFC 7517 §8.5; five minutes is well inside the 15 minutes a new key is published before it signs.
        headers: [["content-type", "application/jwk-set+json"], ["cache-control", "public, max-age=300"]],
        body: JSON.stringify(await state.keys.jwks()),
      }),
    },
  });
}

/** The JWT access tokens feature. */
export const jwtAccessTokens: Feature<"jwt_access_tokens", JwtAccessTokens, JwtAccessTokenOptions> = defineFeature({
  name: "jwt_access_tokens",
  doc: "RFC 9068 JWT access tokens, signed with keys kept in the store and published at /jwks.",
  options: [
    {
      key: "accessTokenFormat",
      type: { kind: "string", enum: ["opaque", "jwt"] },
      doc: 'Access tokens: "opaque" (default) or "jwt" (RFC 9068); a client\'s access_token_format overrides it.',
    },
    {
      key: "accessTokenAudience",
      type: { kind: "string" },
      doc: "The aud of JWT access tokens bound to no resource (RFC 9068 §3); default the issuer.",
    },
    {
      key: "signingKeys",
      type: {
        kind: "object",
        fields: [
          { key: "algorithm", type: { kind: "string", enum: SIGNING_ALGORITHMS }, doc: "Algorithm of new keys; default ES256." },
          { key: "rotateAfterDays", type: { kind: "integer", min: 1 }, doc: "Days a key signs before its successor takes over; default 90." },
          {
            key: "retireAfterDays",
            type: { kind: "integer", min: 1 },
            doc: "Days a key stays at /jwks after it stops signing (at least the access-token lifetime); default 7.",
          },
        ],
      },
      doc: "The keys that sign JWT access tokens: kept in the store, sealed under the secret, published at /jwks.",
    },
  ],
  reads: ["issuer", "storage", "clock", "secret", "accessTokenTtl"],
  setup(options, core): JwtAccessTokens {
    const value = options.signingKeys ?? {};
    const enabled = options.accessTokenFormat !== undefined || options.signingKeys !== undefined;
    const retireMs = (value.retireAfterDays ?? 7) * DAY_MS;
    if (enabled && retireMs < core.accessTokenTtl) {
      throw optionError("signingKeys.retireAfterDays", "must cover the access-token lifetime: a retired key no longer verifies the tokens it signed");
    }
    return {
      enabled,
      format: options.accessTokenFormat ?? "opaque",
      audience: options.accessTokenAudience ?? core.issuer,
      issuer: core.issuer,
      keys: keyring({
        storage: core.storage,
        clock: core.clock,
        secret: core.secret,
        algorithm: value.algorithm ?? "ES256",
        schedule: { rotateMs: (value.rotateAfterDays ?? 90) * DAY_MS, retireMs },
      }),
    };
  },
  endpoints: (state) => (state.enabled ? [jwksEndpoint(state)] : []),
  metadata: (state, { url }) => (state.enabled ? { jwks_uri: url("jwks") } : {}),
  admission: (state) => (client) => {
    const format = client.metadata?.access_token_format;
    if (format === undefined) return;
    if (format !== "jwt" && format !== "opaque") {
      throw new AdmissionError("access_token_format", `"access_token_format" must be "opaque" or "jwt" for client "${client.client_id}"`);
    }
    if (format === "jwt" && !state.enabled) {
      throw new AdmissionError(
        "access_token_format",
        `client "${client.client_id}" asks for JWT access tokens, but the server has no signing keys: set accessTokenFormat or signingKeys (access_token_format or signing_keys in the config file)`,
      );
    }
  },
});

/** `server.keys`: the signing keys of JWT access tokens, shared by every instance through the store. */
export interface SigningKeys {
  /** Every key in the store with its state (next, current, previous, retired) and its times. */
  list(): Promise<SigningKeyInfo[]>;
  /**
   * Publishes a successor of the current key at once; it signs 15 minutes later, and the current key stays
   * published until `retireAfterDays` after that. Does nothing while a successor waits (`rotated: false`).
   * Instances racing to rotate add one key between them. Throws `ConfigurationError` when the server has no
   * signing keys configured.
   */
  rotate(): Promise<Rotation>;
  /**
   * Checks, at start, that the runtime has the algorithm and that the keys in the store open with this server's
   * secret, and makes the first key when there is none; throws `ConfigurationError`. Resolves at once when the
   * server has no signing keys configured.
   */
  ready(): Promise<void>;
  /** The published public keys, as `/jwks` serves them. */
  jwks(): Promise<{ keys: Jwk[] }>;
  /**
   * The published keys in memory as a key source for `verifyJwt`: no store call, except one read on an unknown
   * `kid` at most every 5 seconds. `jwtTokenVerifier({ server })` uses it.
   */
  readonly keySource: KeySource;
}

/** The public API over the feature's state. */
export function signingKeys(state: JwtAccessTokens): SigningKeys {
  const { keys } = state;
  return {
    list: () => keys.list(),
    rotate() {
      if (!state.enabled) {
        return Promise.reject(new ConfigurationError("Cannot rotate keys: the server has no signing keys (set signingKeys or accessTokenFormat)", "signingKeys"));
      }
      return keys.rotate();
    },
    ready: () => (state.enabled ? keys.ready() : Promise.resolve()),
    jwks: () => keys.jwks(),
    keySource: keys.keySource,
  };
}
