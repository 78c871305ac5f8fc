/**
 * A JWK Set fetched from a URL (an issuer's `jwks_uri`, a client's `jwks_uri`) as a key source: fetched
 * through the guarded outbound door, cached within Cache-Control bounds, refetched once on an unknown `kid`
 * at most once per cooldown, and kept when a refetch fails.
 *
 * @module
 */
import { type GuardedFetchOptions, guardedFetch } from "../outbound.ts";
import { JoseError } from "./errors.ts";
import { importSelected, parseJwks, selectKeys, type SetKey } from "./jwks.ts";
import type { KeySource, VerifiedHeader } from "./jws.ts";

/** Options of {@link remoteJwks}. Times in milliseconds. */
export interface RemoteJwksOptions extends Pick<GuardedFetchOptions, "allowOrigins" | "trusted" | "allowFetch" | "fetch"> {
  /** Deadline of one fetch, headers and body. Default 5000. */
  timeout?: number;
  /** Largest set read, in decoded bytes. Default 64 KiB. */
  maxBytes?: number;
  /** Least time between two fetches caused by an unknown `kid` or after a failure. Default 30 s. */
  cooldown?: number;
  /** Least lifetime of a fetched set, whatever Cache-Control says. Default 30 s. */
  minTtl?: number;
  /** Longest lifetime of a fetched set, whatever Cache-Control says. Default 24 h. */
  maxTtl?: number;
  /** Lifetime when Cache-Control gives none. Default 10 min. */
  defaultTtl?: number;
  /** The clock. Default `Date.now`. */
  now?: () => number;
}

/** A key source over a remote JWK Set. */
export interface RemoteJwks extends KeySource {
  /** Fetches the set now (sharing a fetch in flight); throws `ERR_JWKS_FETCH_FAILED` if it cannot. */
  reload(): Promise<void>;
}

/**
 * A key source for {@link verifyJwt} over the JWK Set at `url` (RFC 7517 §5; RFC 8414 `jwks_uri`; RFC 7591
 * `jwks_uri`). The set is fetched with {@link guardedFetch} (64 KiB, 5 s), refused if it holds private
 * keys, and kept for its Cache-Control `max-age` within [minTtl, maxTtl]. A token whose `kid` is not in the
 * set causes one refetch, at most once per cooldown; concurrent misses share that fetch. An expired set is
 * refreshed in the background and served meanwhile; when a refetch fails, the last good set stays.
 *
 * @example
 * ```ts
 * const keys = remoteJwks("https://as.example/jwks");
 * const { payload } = await verifyJwt(token, { algorithms: ["ES256"], key: keys, typ: "at+jwt", issuer, audience });
 * ```
 */
export function remoteJwks(url: string | URL, options: RemoteJwksOptions = {}): RemoteJwks {
  const now = options.now ?? Date.now;
  const cooldown = options.cooldown ?? 30_000;
  const minTtl = options.minTtl ?? 30_000;
  const maxTtl = options.maxTtl ?? 86_400_000;
  const defaultTtl = options.defaultTtl ?? 600_000;
  const fetchOptions: GuardedFetchOptions = {
    maxBytes: options.maxBytes ?? 64 * 1024,
    timeout: options.timeout ?? 5000,
    ...(options.allowOrigins && { allowOrigins: options.allowOrigins }),
    ...(options.trusted !== undefined && { trusted: options.trusted }),
    ...(options.allowFetch && { allowFetch: options.allowFetch }),
    ...(options.fetch && { fetch: options.fetch }),
  };
  let keys: readonly SetKey[] | undefined;
  let expiresAt = 0;
  let lastAttempt = -Infinity;
  let lastFailure: unknown;
  let inFlight: Promise<void> | undefined;

  /** One fetch at a time; it never rejects: a failure is recorded and the last good set kept. */
  const load = (): Promise<void> =>
    inFlight ??= (async () => {
      lastAttempt = now();
      try {
        const response = await guardedFetch(url, fetchOptions);
        let document: unknown;
        try {
          document = JSON.parse(response.text());
        } catch {
          throw new JoseError("ERR_JWKS_INVALID", "JWK Set is not JSON");
        }
        keys = parseJwks(document);
        expiresAt = now() + lifetime(response.headers.get("cache-control"), minTtl, maxTtl, defaultTtl);
        lastFailure = undefined;
      } catch (error) {
        lastFailure = error;
      }
    })().finally(() => {
      inFlight = undefined;
    });

  const cooled = (): boolean => now() - lastAttempt >= cooldown;
  const unavailable = (): JoseError =>
    new JoseError("ERR_JWKS_FETCH_FAILED", "JWK Set could not be fetched", { cause: lastFailure });

  const source = async (header: VerifiedHeader): Promise<CryptoKey[]> => {
    if (keys === undefined) {
      if (inFlight || lastFailure === undefined || cooled()) await load();
      if (keys === undefined) throw unavailable();
    } else if (now() >= expiresAt && !inFlight && (lastFailure === undefined || cooled())) {
      void load();
    }
    if (selectKeys(keys, header).length === 0) {
      // RFC 7517 §4.5: an unknown kid may be a key rotated in since the last fetch.
      if (inFlight) await inFlight;
      else if (cooled()) await load();
    }
    return importSelected(keys, header);
  };
  return Object.assign(source, {
    reload: async (): Promise<void> => {
      await load();
      if (lastFailure !== undefined) throw unavailable();
    },
  });
}

/** Lifetime from Cache-Control (RFC 9111 §5.2.2): `max-age` within bounds; `no-store`/`no-cache` the least. */
function lifetime(header: string | null, min: number, max: number, fallback: number): number {
  if (header === null) return fallback;
  if (/(?:^|,)\s*no-(?:store|cache)\b/i.test(header)) return min;
  const match = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/i.exec(header);
  if (!match) return fallback;
  return Math.min(max, Math.max(min, Number(match[1]) * 1000));
}
