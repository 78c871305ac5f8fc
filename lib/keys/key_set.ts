/**
 * The key set of one issuer as the store keeps it (one setting, one JSON document), and the life of a key in it,
 * worked out from timestamps alone so that every instance reading the same document agrees:
 *
 * - **next**: published at `/jwks`, not signing yet (`now < signs_from`). A key is published at least
 *   {@link PUBLISH_LEAD_MS} before it signs, so resource servers that cache the set have it before they see it.
 * - **current**: the published key with the latest `signs_from <= now`; it signs every new token.
 * - **previous**: an older published key; it still verifies the tokens it signed.
 * - **retired**: `retires_at <= now`; no longer published nor accepted, and dropped at the next write.
 *
 * @module
 */
import { isJwsAlgorithm, type JwsAlgorithm } from "../jose/algorithms.ts";
import type { Jwk } from "../jose/jwk.ts";

/** A key as stored: the public JWK in clear, the private JWK sealed (see `sealing.ts`). */
export interface StoredKey {
  /** The RFC 7638 thumbprint of the public key. */
  kid: string;
  alg: JwsAlgorithm;
  /** The public JWK, with `kid`, `alg` and `use: "sig"`: what `/jwks` serves. */
  jwk: Jwk;
  /** The private JWK, sealed under the server's secret, bound to `kid`. */
  sealed: string;
  /** When the key was made (ms since the epoch). */
  created_at: number;
  /** When it starts signing. */
  signs_from: number;
  /** When it stops being published and accepted; set when its successor is made. */
  retires_at?: number;
}

/** The stored document. */
export interface KeySetDocument {
  v: 1;
  /** The fingerprint of the key-encryption key that sealed every private key here (`Sealer.id`). */
  sealer: string;
  keys: StoredKey[];
}

/** A key's state at a given time. */
export type KeyState = "next" | "current" | "previous" | "retired";

/** How long a new key is published before it signs: longer than `/jwks`'s max-age and common JWKS caches (10 min). */
export const PUBLISH_LEAD_MS: number = 15 * 60_000;

/** Parses a stored document; throws on anything malformed (a store is trusted, but not blindly). */
export function parseKeySet(text: string): KeySetDocument {
  const bad = (why: string): never => {
    throw new Error(`Cannot read the signing keys from the store: ${why}`);
  };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return bad("the setting is not JSON");
  }
  const d = doc as Partial<KeySetDocument>;
  if (typeof d !== "object" || d === null || d.v !== 1 || typeof d.sealer !== "string" || !Array.isArray(d.keys)) {
    return bad("the setting is not a key set of version 1");
  }
  for (const k of d.keys as unknown[]) {
    const key = k as Partial<StoredKey>;
    const time = (v: unknown) => typeof v === "number" && Number.isFinite(v);
    if (
      typeof key !== "object" || key === null || typeof key.kid !== "string" || !isJwsAlgorithm(key.alg) ||
      typeof key.jwk !== "object" || key.jwk === null || key.jwk.kid !== key.kid || typeof key.sealed !== "string" ||
      !time(key.created_at) || !time(key.signs_from) || (key.retires_at !== undefined && !time(key.retires_at))
    ) {
      return bad("a key entry is malformed");
    }
  }
  return d as KeySetDocument;
}

/** The state of `key` in `doc` at `now`. */
export function stateOf(doc: KeySetDocument, key: StoredKey, now: number): KeyState {
  if (key.retires_at !== undefined && key.retires_at <= now) return "retired";
  if (key.signs_from > now) return "next";
  return currentKey(doc, now) === key ? "current" : "previous";
}

/** The published keys at `now`: every key not retired. */
export function publishedKeys(doc: KeySetDocument, now: number): StoredKey[] {
  return doc.keys.filter((k) => k.retires_at === undefined || now < k.retires_at);
}

/** The key that signs at `now`: the published key with the latest `signs_from` not after `now`. */
export function currentKey(doc: KeySetDocument, now: number): StoredKey | undefined {
  let best: StoredKey | undefined;
  for (const key of publishedKeys(doc, now)) {
    if (key.signs_from <= now && (best === undefined || key.signs_from > best.signs_from)) best = key;
  }
  return best;
}

/** The published key waiting to sign, if any. */
export function nextKey(doc: KeySetDocument, now: number): StoredKey | undefined {
  return publishedKeys(doc, now).find((k) => k.signs_from > now);
}

/** The rotation schedule. Times in ms. */
export interface Schedule {
  /** A key signs for this long, then its successor (published {@link PUBLISH_LEAD_MS} earlier) takes over. */
  rotateMs: number;
  /** A key stays published this long after it stops signing, so the tokens it signed verify until they expire. */
  retireMs: number;
}

/** When a successor of the current key is due: `now` for a manual rotation, else by the schedule. */
export type Due = "scheduled" | "now";

/**
 * Whether the set needs a new key at `now`: none signs yet, or (`due`) the current key's successor should be
 * published and none is.
 */
export function needsKey(doc: KeySetDocument | null, now: number, schedule: Schedule, due: Due): boolean {
  const current = doc === null ? undefined : currentKey(doc, now);
  if (current === undefined) return true;
  if (nextKey(doc!, now) !== undefined) return false;
  return due === "now" || now >= current.signs_from + schedule.rotateMs - PUBLISH_LEAD_MS;
}

/**
 * The document with `key` added, the retired keys dropped, and the current key's retirement fixed. A first key
 * signs at once (no one can hold a stale copy of an empty set); a successor signs after the publishing lead, and
 * not before the current key's period ends.
 */
export function withNewKey(
  doc: KeySetDocument | null,
  key: Omit<StoredKey, "signs_from" | "created_at">,
  sealer: string,
  now: number,
  schedule: Schedule,
  due: Due,
): KeySetDocument {
  const kept = doc === null ? [] : publishedKeys(doc, now).map((k) => ({ ...k }));
  const current = doc === null ? undefined : currentKey({ ...doc, keys: kept }, now);
  const signsFrom = current === undefined
    ? now
    : due === "now"
    ? now + PUBLISH_LEAD_MS
    : Math.max(now + PUBLISH_LEAD_MS, current.signs_from + schedule.rotateMs);
  if (current !== undefined) current.retires_at = signsFrom + schedule.retireMs;
  return { v: 1, sealer, keys: [...kept, { ...key, created_at: now, signs_from: signsFrom }] };
}
