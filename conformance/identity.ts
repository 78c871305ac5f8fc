/**
 * The suite as a signer: the key pair of a `private_key_jwt` client, an identity provider that issues ID-JAGs,
 * and a workload platform, each an ES256 key made once per key host (so once per run) and published on it:
 * `/client/jwks`, `/idp/jwks` and `/workload/jwks`. The issuers' identifiers are `{origin}/idp` and
 * `{origin}/workload`. A fourth key, never published, signs what must not verify.
 *
 * @module
 */
import { generateSigningKey, type SigningKeyPair } from "../lib/jose/jwk.ts";
import { signJwt } from "../lib/jose/jwt.ts";
import type { DocumentHost } from "./context.ts";

/** The suite's keys on one host. */
export interface SuiteKeys {
  /** The origin they are served from. */
  readonly origin: string;
  /** The `private_key_jwt` client's key, at `/client/jwks`. */
  readonly client: SigningKeyPair;
  /** The identity provider's key, at `/idp/jwks`; its issuer is `{origin}/idp`. */
  readonly idp: SigningKeyPair;
  /** The workload platform's key, at `/workload/jwks`; its issuer is `{origin}/workload`. */
  readonly workload: SigningKeyPair;
  /** A key nobody publishes, carrying the `kid` of whichever key it impersonates. */
  readonly rogue: SigningKeyPair;
}

const made = new WeakMap<DocumentHost, Promise<SuiteKeys>>();

/** The suite's keys on `host`, made and published at the first call. */
export function suiteKeys(host: DocumentHost): Promise<SuiteKeys> {
  let keys = made.get(host);
  if (keys === undefined) {
    keys = (async () => {
      const [client, idp, workload, rogue] = await Promise.all([0, 1, 2, 3].map(() => generateSigningKey("ES256")));
      for (const [path, pair] of [["/client/jwks", client], ["/idp/jwks", idp], ["/workload/jwks", workload]] as const) {
        const body = JSON.stringify({ keys: [pair!.publicJwk] });
        // Short-lived in caches: a server that fetched another run's keys refetches on their unknown kid anyway.
        host.serve(path, () => new Response(body, { headers: { "content-type": "application/jwk-set+json", "cache-control": "max-age=60" } }));
      }
      return { origin: host.origin, client: client!, idp: idp!, workload: workload!, rogue: rogue! };
    })();
    made.set(host, keys);
  }
  return keys;
}

/** Signs `claims` with `pair` (ES256, its kid unless `kid` is given; `typ` when given). */
export function signWith(pair: SigningKeyPair, claims: Record<string, unknown>, header: { typ?: string; kid?: string } = {}): Promise<string> {
  return signJwt(claims, { alg: "ES256", key: pair.privateJwk, kid: header.kid ?? pair.publicJwk.kid!, ...(header.typ === undefined ? {} : { typ: header.typ }) });
}

/** A fresh jti. */
export function jti(): string {
  return crypto.randomUUID();
}

/** Now, in seconds since the epoch. */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
