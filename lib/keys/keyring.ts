/**
 * The signing keys of one issuer, shared through its store: every instance reads the same key set (one setting),
 * signs with its current key and verifies with its published keys, from a copy in memory. New keys come only
 * through a compare-and-set on that setting, so two instances never add two keys at once: the loser reads the
 * winner's set and uses it.
 *
 * @module
 */
import { ConfigurationError } from "../errors.ts";
import { isJwsAlgorithm, type JwsAlgorithm, supportedAlgorithms } from "../jose/algorithms.ts";
import { generateSigningKey, importJwk, type Jwk } from "../jose/jwk.ts";
import type { KeySource, VerifiedHeader } from "../jose/jws.ts";
import type { Storage } from "../storage/types.ts";
import {
  currentKey,
  type Due,
  type KeySetDocument,
  type KeyState,
  needsKey,
  parseKeySet,
  publishedKeys,
  type Schedule,
  stateOf,
  type StoredKey,
  withNewKey,
} from "./key_set.ts";
import { type Sealer, sealerOf } from "./sealing.ts";

/** The setting that holds the key set. One store serves one issuer (its clients and tokens are not per issuer). */
export const KEY_SET_SETTING = "signing_keys";

/** What the keyring needs. */
export interface KeyringOptions {
  /** The parts of the store it uses (each call goes through the server's deadline). */
  storage: Pick<Storage, "getSetting" | "swapSetting">;
  clock: () => number;
  /** The server's secret, from which the key-encryption key is derived; the store never holds it. */
  secret: Uint8Array;
  /** The algorithm of new keys. */
  algorithm: JwsAlgorithm;
  schedule: Schedule;
  /** How old the copy in memory may grow before it is read again, in ms (in the background). Default 10 000. */
  refreshMs?: number;
  /** Least time between two reads caused by an unknown `kid`, in ms. Default 5000. */
  unknownKidCooldownMs?: number;
}

/** What `keys list` shows of a key. */
export interface SigningKeyInfo {
  /** The key's id: its RFC 7638 thumbprint, the `kid` of the tokens it signs. */
  kid: string;
  /** Its algorithm. */
  alg: JwsAlgorithm;
  /** Next (published, not signing yet), current (signing), previous (verifying) or retired. */
  state: KeyState;
  /** When it was made (ISO 8601). */
  created_at: string;
  /** When it starts (or started) signing (ISO 8601). */
  signs_from: string;
  /** When it leaves `/jwks` (ISO 8601); set once a successor is made. */
  retires_at?: string;
}

/** The key to sign with now. */
export interface SigningKey {
  kid: string;
  alg: JwsAlgorithm;
  key: CryptoKey;
}

/** The signing keys of one server. */
export interface Keyring {
  /** The current key, making the first key or the scheduled successor first when due. */
  signingKey(): Promise<SigningKey>;
  /** A key source over the published keys in memory: no store call, except one read on an unknown `kid` (rate-limited). */
  readonly keySource: KeySource;
  /** The published public keys, as `/jwks` serves them (RFC 7517 §5). */
  jwks(): Promise<{ keys: Jwk[] }>;
  /** Every key in the store with its state; reads the store. */
  list(): Promise<SigningKeyInfo[]>;
  /** Publishes a successor of the current key now (it signs {@link PUBLISH_LEAD_MS} later); no-op while one waits. */
  rotate(): Promise<Rotation>;
  /** Checks the runtime has the algorithm, loads the set, makes the first key if there is none, and opens it. */
  ready(): Promise<void>;
}

/** A configuration problem found when the keys are first used: the runtime lacks the algorithm, or the secret differs. */
export class SigningKeyError extends ConfigurationError {
  override name = "SigningKeyError";
}

interface Loaded {
  /** The setting's text as read, for the compare-and-set. */
  text: string | null;
  doc: KeySetDocument | null;
  at: number;
}

/** What a rotation did. */
export interface Rotation {
  /** Whether this call published the new key (false: one waited already, or another instance's call won). */
  rotated: boolean;
  /** Every key in the store afterwards. */
  keys: SigningKeyInfo[];
}

/** Builds the keyring of one server. Nothing is read or made until first use. */
export function keyring(options: KeyringOptions): Keyring {
  const { storage, clock, schedule, algorithm } = options;
  const refreshMs = options.refreshMs ?? 10_000;
  const cooldownMs = options.unknownKidCooldownMs ?? 5_000;
  let sealer: Promise<Sealer> | undefined;
  const sealerNow = () => sealer ??= sealerOf(options.secret);
  let loaded: Loaded | undefined;
  let reading: Promise<Loaded> | undefined;
  let lastUnknownKid = -Infinity;
  let checked: Promise<void> | undefined;
  const privateKeys = new Map<string, Promise<CryptoKey>>();

  /** Reads the setting; concurrent callers share one read. */
  const read = (): Promise<Loaded> =>
    reading ??= (async () => {
      const at = clock();
      const text = await storage.getSetting(KEY_SET_SETTING);
      loaded = { text, doc: text === null ? null : parseKeySet(text), at };
      return loaded;
    })().finally(() => {
      reading = undefined;
    });

  /** The copy in memory; read once if there is none, refreshed in the background when old. */
  const cached = async (): Promise<Loaded> => {
    if (loaded === undefined) return read();
    if (clock() - loaded.at >= refreshMs && reading === undefined) read().catch(() => {});
    return loaded;
  };

  const checkRuntime = (): Promise<void> =>
    checked ??= supportedAlgorithms().then((algorithms) => {
      if (!algorithms.includes(algorithm)) {
        throw new SigningKeyError(
          `Cannot sign with ${algorithm}: this runtime's WebCrypto does not support it (it has ${algorithms.join(", ")})`,
          "signingKeys.algorithm",
        );
      }
    });

  let adding: Promise<Loaded & { added: boolean }> | undefined;
  /** One addition at a time in this instance: a burst of requests at rotation time generates one key pair. */
  const addKeyIf = (due: Due, from: Loaded): Promise<Loaded & { added: boolean }> =>
    adding ??= addKey(due, from).finally(() => {
      adding = undefined;
    });

  /** Adds a key when `due` and none was added meanwhile; one compare-and-set decides between instances. */
  async function addKey(due: Due, from: Loaded): Promise<Loaded & { added: boolean }> {
    let state = from;
    for (let attempt = 0; attempt < 5; attempt++) {
      const now = clock();
      if (!needsKey(state.doc, now, schedule, due)) return { ...state, added: false };
      const seal = await sealerNow();
      if (state.doc !== null && state.doc.sealer !== seal.id) throw foreignSealer();
      await checkRuntime();
      const pair = await generateSigningKey(algorithm);
      const kid = pair.publicJwk.kid!;
      const entry = { kid, alg: algorithm, jwk: pair.publicJwk, sealed: await seal.seal(JSON.stringify(pair.privateJwk), kid) };
      const next = withNewKey(state.doc, entry, seal.id, now, schedule, due);
      const text = JSON.stringify(next);
      if (await storage.swapSetting(KEY_SET_SETTING, state.text, text)) {
        loaded = { text, doc: next, at: now };
        return { ...loaded, added: true };
      }
      // Another instance moved first: use its set (a manual rotation it made counts as this one).
      state = await read();
      due = "scheduled";
    }
    throw new Error("Cannot update the signing keys: the setting kept changing under five attempts");
  }

  const foreignSealer = () =>
    new SigningKeyError(
      "Cannot use the signing keys in the store: they were sealed under another secret. Every instance of one " +
        "issuer needs the same secret (the `secret` option, or `secret` in the config file).",
      "secret",
    );

  async function open(key: StoredKey): Promise<CryptoKey> {
    let opened = privateKeys.get(key.kid);
    if (opened === undefined) {
      opened = (async () => {
        const seal = await sealerNow();
        const plain = await seal.open(key.sealed, key.kid);
        return importJwk(JSON.parse(plain) as Jwk, key.alg, "sign");
      })();
      privateKeys.set(key.kid, opened);
      opened.catch(() => privateKeys.delete(key.kid));
    }
    return opened;
  }

  async function signingKey(): Promise<SigningKey> {
    let state = await cached();
    if (needsKey(state.doc, clock(), schedule, "scheduled")) state = await addKeyIf("scheduled", state);
    const key = currentKey(state.doc!, clock())!;
    if (state.doc!.sealer !== (await sealerNow()).id) throw foreignSealer();
    return { kid: key.kid, alg: key.alg, key: await open(key) };
  }

  async function keySource(header: VerifiedHeader): Promise<CryptoKey[]> {
    let state = await cached();
    const find = (s: Loaded) => (s.doc === null ? [] : publishedKeys(s.doc, clock())).filter((k) => keyFits(k, header));
    let found = find(state);
    const now = clock();
    if (found.length === 0 && header.kid !== undefined && now - lastUnknownKid >= cooldownMs) {
      // A key another instance added since the last read; at most one read per cooldown, whatever is sent.
      lastUnknownKid = now;
      state = await read();
      found = find(state);
    }
    return Promise.all(found.map((k) => importJwk(k.jwk, k.alg, "verify")));
  }

  const info = (doc: KeySetDocument, key: StoredKey, now: number): SigningKeyInfo => {
    const iso = (ms: number) => new Date(ms).toISOString();
    const out: SigningKeyInfo = {
      kid: key.kid, alg: key.alg, state: stateOf(doc, key, now), created_at: iso(key.created_at), signs_from: iso(key.signs_from),
    };
    if (key.retires_at !== undefined) out.retires_at = iso(key.retires_at);
    return out;
  };
  const listOf = (state: Loaded): SigningKeyInfo[] => {
    const now = clock();
    return state.doc === null ? [] : state.doc.keys.map((k) => info(state.doc!, k, now)).sort((a, b) => a.signs_from.localeCompare(b.signs_from));
  };

  return {
    signingKey,
    keySource,
    async jwks() {
      let state = await cached();
      if (state.doc === null) state = await addKeyIf("scheduled", state);
      return { keys: publishedKeys(state.doc!, clock()).map((k) => k.jwk) };
    },
    async list() {
      return listOf(await read());
    },
    async rotate() {
      const after = await addKeyIf("now", await read());
      return { rotated: after.added, keys: listOf(after) };
    },
    async ready() {
      await checkRuntime();
      await signingKey();
    },
  };
}

/** Whether a stored key may verify a token with this header: the same `kid` when it names one, and its `alg`. */
function keyFits(key: StoredKey, header: VerifiedHeader): boolean {
  return (header.kid === undefined || header.kid === key.kid) && header.alg === key.alg && isJwsAlgorithm(key.alg);
}
