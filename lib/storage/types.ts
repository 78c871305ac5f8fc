/**
 * The storage contract: a typed interface of OAuth actions, not get/put of key strings.
 *
 * Every secret (client secret, code, access token, refresh token) reaches a store only as its SHA-256 hash.
 * The verbs that decide a race are atomic and say who won: {@link Storage.redeemCode},
 * {@link Storage.rotateRefreshToken} and {@link Storage.markOnce}. `storageContract` in
 * `lib/storage/contract.ts` (the `./storage/contract` subpath) proves it for any store.
 *
 * Rules every store keeps (a SQL or Redis implementer needs nothing beyond this file):
 * - Times are milliseconds since the epoch, as the server's clock gives them. A verb that takes `now` judges
 *   expiry by that argument, never by its own clock (tests inject the clock).
 * - A record is live while `now < expires_at`; at `now >= expires_at` it counts as absent for every verb.
 * - Records passed in and handed out are read-only to both sides (a store may hand out its own objects).
 *   Optional fields that were not given are absent (not `undefined`, not `null`) in what the store returns.
 * - A revoked grant stays revoked: a write for its `grant_id` that lands after {@link Storage.revokeGrant}
 *   (a racing redemption or rotation) stores nothing.
 *
 * @module
 */

/**
 * A grant type's wire name (`authorization_code`, `refresh_token`, `client_credentials`, ...). The server's grant
 * registry (`lib/grants/registry.ts`) is the one list of them: a store keeps the name as it is given, and every
 * way of registering a client checks it against the registry, so adding a grant touches no store.
 */
export type GrantType = string;

/** Who created a client record. */
export type ClientOrigin = "config" | "cli" | "registration" | "document";

/** A registered client (spec §2 "Client"). */
export interface ClientRecord {
  /** The client identifier (RFC 6749 §2.2). */
  client_id: string;
  /** SHA-256 of the secret, base64url; confidential clients only. */
  secret_hash?: string;
  /** Shown to the user on the consent page. */
  name: string;
  /** `public` clients keep no secret and must use PKCE (RFC 6749 §2.1). */
  type: "public" | "confidential";
  /** Exact redirect URIs; compared as strings (RFC 9700 §4.1.3). */
  redirect_uris: string[];
  /** Scopes the client may ask for. */
  scopes: string[];
  /** Space-delimited scope granted when a request names none (RFC 6749 §3.3); without it, `scope` is required. */
  default_scope?: string;
  /** The grant types the client may use. */
  grant_types: GrantType[];
  /** Whether a client_credentials response carries a refresh token. */
  client_credentials_refresh_token: boolean;
  /** A paused client (false) cannot authenticate, and its tokens stop working. */
  active: boolean;
  /** When the client was first stored. */
  created_at: number;
  /** Which tokens the client may introspect: its own (default) or every token (a resource server). */
  introspection?: "own" | "all";
  /** Who created the record: the config file, the CLI, dynamic registration or a client metadata document. */
  origin?: ClientOrigin;
  /**
   * When tokens were last stored for this client. Stores set it themselves when they store tokens (see
   * {@link Storage.saveTokens}), at a coarse granularity: it may lag by up to a minute.
   */
  last_used_at?: number;
  /** Registration metadata echoed back to the client (client_uri, logo_uri, contacts, ...); JSON values only. */
  metadata?: Record<string, unknown>;
}

/** An issued authorization code, stored by hash. */
export interface CodeRecord {
  /** SHA-256 of the code, base64url. */
  hash: string;
  /** The grant (token family) every token issued from this code belongs to. */
  grant_id: string;
  /** The client the code was issued to. */
  client_id: string;
  /** The user who approved it. */
  user_id: string;
  /** The redirect URI of the request; the token request must repeat it (RFC 6749 §4.1.3). */
  redirect_uri: string;
  /** The scope granted, space-delimited. */
  scope: string;
  /** The S256 challenge, when the request carried one (RFC 7636 §4.4). */
  code_challenge?: string;
  /** The audiences the code is bound to at /authorize (RFC 8707). */
  resource?: string[];
  /** When the code stops being redeemable. */
  expires_at: number;
  /** Set once redeemed; a redeemed code is kept until it expires so that a replay is recognised. */
  redeemed_at?: number;
  /** The DPoP key thumbprint the code is bound to at the authorization endpoint (RFC 9449 §10, `dpop_jkt`). */
  dpop_jkt?: string;
  /** When the user signed in (seconds since the epoch), where known. */
  auth_time?: number;
}

/** An access token, stored by hash. */
export interface AccessTokenRecord {
  /** SHA-256 of the token, base64url. */
  hash: string;
  /** The client the token was issued to. */
  client_id: string;
  /** Absent for client_credentials tokens, which act for the client itself. */
  user_id?: string;
  /** The scope of the token, space-delimited. */
  scope: string;
  /** The audiences of the token (RFC 8707). */
  resource?: string[];
  /** When the token stops working. */
  expires_at: number;
  /** The grant it belongs to; absent for a client_credentials token that has no refresh token. */
  grant_id?: string;
  /** The JWK thumbprint (RFC 7638) of the DPoP key the token is bound to (RFC 9449 §6); absent: a bearer token. */
  jkt?: string;
  /** The actor of a delegation (RFC 8693 §4.1 `act`), as a JSON object; absent without one. */
  act?: Record<string, unknown>;
  /** When the user signed in (seconds since the epoch, as `auth_time`), where known. */
  auth_time?: number;
}

/** A refresh token, stored by hash. */
export interface RefreshTokenRecord {
  /** SHA-256 of the token, base64url. */
  hash: string;
  /** The grant (token family) it belongs to. */
  grant_id: string;
  /** The client the token was issued to. */
  client_id: string;
  /** The user of the grant; absent for a client_credentials grant. */
  user_id?: string;
  /** The scope of the grant, space-delimited. */
  scope: string;
  /** The audiences of the grant (RFC 8707). */
  resource?: string[];
  /** When the token, and the grant with it, stops working. */
  expires_at: number;
  /** Set once rotated; a rotated token is kept until it expires so that its reuse is recognised. */
  rotated_at?: number;
  /**
   * Hash of the refresh token that replaced this one at its first rotation. Set by the store in
   * {@link Storage.rotateRefreshToken}; the grace window checks that this successor is still unrotated.
   */
  replaced_by?: string;
  /**
   * The successor sealed for the grace window: only on the record {@link Storage.rotateRefreshToken} returns to
   * a grace retry. It is the `sealed` value of the first rotation, which the caller opens with the token it holds.
   */
  successor?: string;
  /** The JWK thumbprint (RFC 7638) of the DPoP key the token is bound to (RFC 9449 §6); absent: a bearer token. */
  jkt?: string;
  /** The actor of a delegation (RFC 8693 §4.1 `act`), as a JSON object; absent without one. */
  act?: Record<string, unknown>;
  /** When the user signed in (seconds since the epoch, as `auth_time`), where known. */
  auth_time?: number;
}

/**
 * How fresh a read of a code or refresh token must be. The fields of a code and of a refresh token never change
 * once stored, apart from `redeemed_at`, `rotated_at`, `replaced_by` and `successor`, and the record's going away
 * (revoked, deleted). So a caller that is about to spend the record, and trusts only the deciding verb
 * ({@link Storage.redeemCode}, {@link Storage.rotateRefreshToken}), can work from a copy this process stored
 * itself (`issuedRecords`), and save the read.
 */
export interface ReadOptions {
  /**
   * The caller spends the record next and acts on nothing else it says: when the deciding verb fails, it reads
   * again without this option and decides from that read. The answer may then be a record that was since
   * spent, revoked or deleted, or one the store declined to keep (a revoked grant's), but never one that no
   * caller stored.
   */
  beforeDecision?: boolean;
}

/** What one successful code redemption, refresh or client_credentials request stores. */
export interface IssuedTokens {
  /** The access token. */
  access: AccessTokenRecord;
  /** The refresh token, when one is issued. */
  refresh?: RefreshTokenRecord;
  /**
   * Only for {@link Storage.rotateRefreshToken} with a grace window: the new refresh token itself, encrypted
   * under a key derived from the token being rotated (which the store never sees), kept with the rotated record.
   */
  sealed?: string;
}

/**
 * A grant: one user's (or one client's) consent to one client, the family of every token issued from it.
 * Listed to the user as a "connected app"; revoking it revokes the whole family.
 */
export interface GrantRecord {
  /** The grant identifier every token of the family carries. */
  grant_id: string;
  /** The client it was granted to. */
  client_id: string;
  /** Absent for a client_credentials grant. */
  user_id?: string;
  /** The scope granted at creation; a narrower refresh does not change it. */
  scope: string;
  /** The audiences it is bound to (RFC 8707). */
  resource?: string[];
  /** When the first code of it was redeemed (or the client_credentials refresh token issued). */
  created_at: number;
  /** The last redemption or rotation. */
  last_used_at: number;
  /** The latest expiry of any of its tokens; the grant is live while `now < expires_at`. */
  expires_at: number;
}

/**
 * A device authorization (RFC 8628 §3.1), stored by the hashes of its two codes. It moves once from `pending`
 * to `approved` or `denied` (the user's decision), and once from `approved` to `redeemed` (the tokens).
 */
export interface DeviceAuthorizationRecord {
  /** SHA-256 of the device code, base64url. */
  hash: string;
  /** SHA-256 of the user code in its canonical form (upper case, no dash), base64url. */
  user_code_hash: string;
  /** The client that asked. */
  client_id: string;
  /** The scope asked for, space-delimited. */
  scope: string;
  /** The audiences asked for (RFC 8707). */
  resource?: string[];
  /** The grant its tokens will belong to. */
  grant_id: string;
  /** When the device asked (shown to the user). */
  created_at: number;
  /** When its codes stop working: a poll after it gets `expired_token` (RFC 8628 §3.5). */
  codes_expire_at: number;
  /** When the store may forget it (at or after `codes_expire_at`, so that a late poll is still recognised). */
  expires_at: number;
  /** The least time between polls, in ms; grows by 5000 at each poll that came too soon (`slow_down`). */
  interval: number;
  /** When the device last polled. */
  last_polled_at?: number;
  /** Where it stands. */
  status: "pending" | "approved" | "denied" | "redeemed";
  /** The user who decided; set with the decision. */
  user_id?: string;
  /** When that user signed in (seconds since the epoch), where known. */
  auth_time?: number;
}

/** The user's decision on a device authorization. */
export interface DeviceDecision {
  /** true: approved; false: denied. */
  approved: boolean;
  /** Who decided. */
  user_id: string;
  /** When that user signed in (seconds since the epoch), where known. */
  auth_time?: number;
}

/** What one poll found: the record after the poll, and whether it came too soon. */
export interface DevicePoll {
  /** The record, with `last_polled_at = now` and the interval as it stands after this poll. */
  record: DeviceAuthorizationRecord;
  /** This poll came less than `interval` after the previous one; the interval has grown by 5000 ms. */
  slow_down: boolean;
}

/**
 * The storage contract every store implements.
 *
 * Every verb may reject when the store is unreachable; the server turns that into 503
 * `temporarily_unavailable`. A verb that rejected may or may not have taken effect.
 */
export interface Storage {
  /** A client by id, or null. */
  getClient(clientId: string): Promise<ClientRecord | null>;
  /** Adds a client, or replaces the one with the same id (every field, `metadata` included). */
  saveClient(client: ClientRecord): Promise<void>;
  /** Pauses (false) or resumes (true) a client; returns the updated record, or null if there is none. */
  setClientActive(clientId: string, active: boolean): Promise<ClientRecord | null>;
  /** Every client, in no particular order. */
  listClients(): Promise<ClientRecord[]>;
  /**
   * Deletes a client and everything issued to it: it does {@link Storage.revokeClientGrants} first.
   * Returns true if the client existed.
   */
  deleteClient(clientId: string): Promise<boolean>;
  /**
   * Revokes every grant of a client (as {@link Storage.revokeGrant} does, one by one) and deletes every code
   * and token issued to it, including client_credentials access tokens that belong to no grant. Returns how
   * many {@link GrantRecord}s it deleted.
   */
  revokeClientGrants(clientId: string): Promise<number>;

  /**
   * Stores a newly issued authorization code. With `limit`, afterwards at most `limit` unredeemed codes
   * (expired or not, this one included) exist for its (client_id, user_id) pair: the others with the earliest
   * `expires_at` are deleted. This caps how many codes one consent can mint. Redeemed codes do not count.
   * A code of a revoked grant is not stored.
   */
  saveCode(code: CodeRecord, limit?: number): Promise<void>;
  /**
   * A code by hash, redeemed or not, or null once it has expired or was never issued. With
   * `{ beforeDecision: true }` the answer may be out of date (see {@link ReadOptions}); a store may ignore it.
   */
  findCode(hash: string, now: number, options?: ReadOptions): Promise<CodeRecord | null>;
  /**
   * Atomically marks the code redeemed (`redeemed_at = now`) and stores `tokens`, if and only if the code
   * exists, is live, was not redeemed before and its grant is not revoked. Returns the code record to the one
   * caller that won (its `redeemed_at` may or may not show this redemption) and null to every other; a loser
   * stores nothing.
   *
   * The winner also creates the {@link GrantRecord} `code.grant_id` with the code's client_id, user_id, scope
   * and resource, `created_at = last_used_at = now`, and `expires_at` the latest expiry among `tokens`.
   * Updates the client's `last_used_at` as {@link Storage.saveTokens} does.
   */
  redeemCode(hash: string, tokens: IssuedTokens, now: number): Promise<CodeRecord | null>;

  /**
   * Stores tokens issued without a code or a previous refresh token (client_credentials). When they carry a
   * refresh token, it also creates the {@link GrantRecord} of that refresh token's grant_id (client_id,
   * user_id, scope and resource from the refresh token, `created_at = last_used_at = now`, `expires_at` the
   * latest expiry among `tokens`). Tokens of a revoked grant are not stored.
   *
   * Every verb that stores tokens (this one, {@link Storage.redeemCode}, {@link Storage.rotateRefreshToken})
   * sets the client's `last_used_at` to `now` when it is absent or at least 60 000 ms older than `now`
   * (a store may do it more often; a missing client is ignored).
   */
  saveTokens(tokens: IssuedTokens, now: number): Promise<void>;
  /** A live access token by hash, or null (unknown, expired or revoked). */
  findAccessToken(hash: string, now: number): Promise<AccessTokenRecord | null>;
  /**
   * A refresh token by hash, rotated or not, or null (unknown, expired or revoked). With
   * `{ beforeDecision: true }` the answer may be out of date (see {@link ReadOptions}); a store may ignore it.
   */
  findRefreshToken(hash: string, now: number, options?: ReadOptions): Promise<RefreshTokenRecord | null>;
  /**
   * Atomically rotates a refresh token and stores `next`. Succeeds, for one caller only, when the token exists,
   * is live, its grant is not revoked and it was not rotated before: then sets `rotated_at = now`,
   * `replaced_by = next.refresh?.hash`, keeps `next.sealed` with the rotated record, and drops the sealed
   * successor kept with the record this token replaced (the one whose `replaced_by` is `hash`): once a token
   * rotates, its predecessor can no longer be retried, and its sealed value would only be a liability.
   *
   * With `graceMs > 0` it also succeeds for a token rotated at `rotated_at > now - graceMs` that keeps a sealed
   * successor, while that successor (`replaced_by`) is unrotated: a retry by a client whose processes share one
   * refresh token. Such a success stores `next.access` only, never `next.refresh`, changes nothing on the old
   * record and revokes nothing; the record it returns carries the sealed successor as `successor`, and the
   * caller answers with that same successor. So a retry, or an attacker's replay, inside the window never
   * starts a second live chain: both holders share one refresh token, and whichever rotates it second (after
   * the window) is caught as reuse. (Siblings that retire each other would also keep one chain, but one of a
   * legitimate client's processes would then keep a retired token, and its next refresh would revoke the grant.)
   *
   * Every success also sets the grant's `last_used_at = now` and raises its `expires_at` to cover `next`, and
   * updates the client's `last_used_at` (see {@link Storage.saveTokens}). Returns the old record as it was
   * before this call to each caller that succeeded (so `rotated_at` is absent for the first rotation, and set,
   * with `successor`, for a grace retry), and null to every other, who stored nothing (the caller then revokes
   * the grant, RFC 9700 §4.14.2).
   */
  rotateRefreshToken(hash: string, next: IssuedTokens, now: number, graceMs?: number): Promise<RefreshTokenRecord | null>;

  /**
   * Revokes a grant: deletes every code, access token and refresh token of `grantId` and its
   * {@link GrantRecord}, and drops any later write for it (see the module rules). Unknown ids are revoked too.
   */
  revokeGrant(grantId: string): Promise<void>;
  /** Revokes one access token. */
  revokeAccessToken(hash: string): Promise<void>;
  /** The live grants of a user (its connected apps), in no particular order. */
  listGrants(userId: string, now: number): Promise<GrantRecord[]>;

  /**
   * Marks `key` until `expiresAt`. Resolves true to exactly one caller among any number of concurrent ones,
   * and false while the mark is live (`now < expiresAt` of the mark). Once the mark has expired, the next call
   * marks again and gets true. For single-use consent approvals, nonces and idempotency keys.
   */
  markOnce(key: string, expiresAt: number, now: number): Promise<boolean>;
  /** Whether `key` is marked and its mark is live at `now`. */
  isMarked(key: string, now: number): Promise<boolean>;

  /**
   * Stores `value` under `name` if nothing is stored there yet, and returns the stored value: the given one to
   * the first caller, the earlier one to every later caller, also when they race. Settings never expire.
   * For values every instance must share, such as a generated signing secret.
   */
  initSetting(name: string, value: string): Promise<string>;
  /** The value stored under `name`, or null when there is none. */
  getSetting(name: string): Promise<string | null>;
  /**
   * Atomically replaces the value under `name` with `next` if it is `expected` now, and says whether it did:
   * among any number of callers racing with the same `expected`, exactly one gets true (while `next` differs
   * from `expected`). `expected: null` means "only if nothing is stored yet". For values that move on, such as
   * a set of signing keys: read with {@link Storage.getSetting}, compute the next value, swap, and on false
   * read again (another instance moved first).
   */
  swapSetting(name: string, expected: string | null, next: string): Promise<boolean>;

  /**
   * Stores a new device authorization (status `pending`, no `last_polled_at`). Returns false, storing nothing,
   * when a live record already holds its `user_code_hash` (the caller draws another user code).
   */
  saveDeviceAuthorization(record: DeviceAuthorizationRecord, now: number): Promise<boolean>;
  /** A live device authorization by the hash of its user code, whatever its status, or null. */
  findDeviceAuthorization(userCodeHash: string, now: number): Promise<DeviceAuthorizationRecord | null>;
  /**
   * Atomically records the user's decision: `pending` becomes `approved` or `denied`, with `user_id` and
   * `auth_time`, if and only if the record is live, pending, and `now < codes_expire_at`. Returns the updated
   * record to the one caller that decided, null to every other (a decision is made once).
   */
  decideDeviceAuthorization(userCodeHash: string, decision: DeviceDecision, now: number): Promise<DeviceAuthorizationRecord | null>;
  /**
   * One poll by the device, decided atomically: for a live record, `slow_down` is true when `last_polled_at` is
   * set and `now < last_polled_at + interval`, and then `interval` grows by 5000 (RFC 8628 §3.5); either way
   * `last_polled_at` becomes `now`. Of any number of concurrent polls, at most one sees `slow_down: false`
   * within one interval. Null when there is no live record.
   */
  pollDeviceAuthorization(hash: string, now: number): Promise<DevicePoll | null>;
  /**
   * Atomically marks an `approved` device authorization `redeemed` and stores `tokens`, if and only if it is
   * live, approved, `now < codes_expire_at` and its grant is not revoked, exactly as {@link Storage.redeemCode}
   * does for a code (one winner; the grant record `grant_id` created from the record's client_id, user_id,
   * scope and resource; the client's `last_used_at`). Returns the record as it was to the winner, null to every
   * other caller, who stored nothing.
   */
  redeemDeviceAuthorization(hash: string, tokens: IssuedTokens, now: number): Promise<DeviceAuthorizationRecord | null>;

  /**
   * Deletes expired codes, device authorizations, access tokens, refresh tokens, grants (and the tombstones of
   * revoked grants) and marks; live records are untouched. Returns how many records it deleted. A store may keep a record that
   * expired less than 60 000 ms before `now` until a later call, and a store whose records expire by themselves
   * (Redis TTLs) may do nothing and return 0. Must not block the store for long: delete in bounded batches.
   */
  purgeExpired(now: number): Promise<number>;
}

const METHODS = [
  "getClient", "saveClient", "setClientActive", "listClients", "deleteClient", "revokeClientGrants",
  "saveCode", "findCode", "redeemCode", "saveTokens", "findAccessToken", "findRefreshToken",
  "rotateRefreshToken", "revokeGrant", "revokeAccessToken", "listGrants", "markOnce", "isMarked",
  "initSetting", "getSetting", "swapSetting", "purgeExpired", "saveDeviceAuthorization", "findDeviceAuthorization",
  "decideDeviceAuthorization", "pollDeviceAuthorization", "redeemDeviceAuthorization",
] as const satisfies readonly (keyof Storage)[];
// Fails to compile when Storage gains a method this list misses.
const complete: [Exclude<keyof Storage, (typeof METHODS)[number]>] extends [never] ? true : never = true;
void complete;

/** Every method of {@link Storage}, for wrappers (deadlines, instrumentation) that forward each one. */
export const STORAGE_METHODS: readonly (keyof Storage)[] = METHODS;
