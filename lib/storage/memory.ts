/**
 * The in-memory store: the default, and the model every other store is measured against.
 *
 * Each method runs to completion without awaiting, so on a single-threaded runtime every method is atomic;
 * that is what makes {@link Storage.redeemCode}, {@link Storage.rotateRefreshToken} and
 * {@link Storage.markOnce} safe here. Expired records are dropped by an incremental sweep over expiry buckets:
 * each write visits at most a bounded slice of them, so memory stays bounded by the number of live records and
 * no request pays for a large backlog (one sweep of a million records would stall the request that runs it).
 * The indexes that grow with the records are {@link TieredMap}s, and expiry buckets grow in fixed chunks, so
 * each write lands in a small container: on Bun (JavaScriptCore) a write into one large Map or array made every
 * young garbage collection re-scan all of it, which halved throughput past 100k stored tokens.
 *
 * @module
 */
import type {
  AccessTokenRecord,
  ClientRecord,
  CodeRecord,
  DeviceAuthorizationRecord,
  DeviceDecision,
  DevicePoll,
  GrantRecord,
  IssuedTokens,
  RefreshTokenRecord,
  Storage,
} from "./types.ts";
import { TieredMap, TieredSet } from "./tiered_map.ts";

/** Options of {@link memoryStorage}. */
export interface MemoryStorageOptions {
  /** Milliseconds since the epoch; the server passes its own clock. Default `Date.now`. */
  clock?: () => number;
  /** Width of an expiry bucket and least time between sweeps, in ms. Default 30 000. */
  sweepInterval?: number;
}

/** Most expired records one write visits: a bound on the sweep's share of one request. */
const SWEEP_SLICE = 512;
/**
 * Records per chunk of an expiry bucket: a bucket grows by whole chunks, so an append writes a small array
 * (JavaScriptCore re-scans a written array in full at its next young collection; see tiered_map.ts).
 */
const CHUNK_BITS = 10;
const CHUNK = 1 << CHUNK_BITS;
/** A client's `last_used_at` is written at most this often (the contract's coarse granularity). */
const TOUCH_INTERVAL = 60_000;

interface Expiring {
  hash: string;
  expires_at: number;
}

/**
 * A code as stored: every field, `redeemed_at` included, has its slot from the start, so redeeming a code
 * writes a field instead of adding one (which costs an allocation per redemption on V8).
 */
interface StoredCode {
  hash: string;
  grant_id: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  scope: string;
  code_challenge: string | undefined;
  resource: string[] | undefined;
  expires_at: number;
  redeemed_at: number | undefined;
  dpop_jkt: string | undefined;
  auth_time: number | undefined;
}

function storedCode(code: CodeRecord): StoredCode {
  return {
    hash: code.hash,
    grant_id: code.grant_id,
    client_id: code.client_id,
    user_id: code.user_id,
    redirect_uri: code.redirect_uri,
    scope: code.scope,
    code_challenge: code.code_challenge,
    resource: code.resource,
    expires_at: code.expires_at,
    redeemed_at: code.redeemed_at,
    dpop_jkt: code.dpop_jkt,
    auth_time: code.auth_time,
  };
}

/** A stored code as the contract hands it out: a copy, with no member for an absent value. */
function codeRecord(code: StoredCode): CodeRecord {
  const record: CodeRecord = {
    hash: code.hash,
    grant_id: code.grant_id,
    client_id: code.client_id,
    user_id: code.user_id,
    redirect_uri: code.redirect_uri,
    scope: code.scope,
    expires_at: code.expires_at,
  };
  if (code.code_challenge !== undefined) record.code_challenge = code.code_challenge;
  if (code.resource !== undefined) record.resource = code.resource;
  if (code.redeemed_at !== undefined) record.redeemed_at = code.redeemed_at;
  if (code.dpop_jkt !== undefined) record.dpop_jkt = code.dpop_jkt;
  if (code.auth_time !== undefined) record.auth_time = code.auth_time;
  return record;
}

/** Members of one grant, so that a replayed code or a reused refresh token can revoke them all. */
interface GrantEntry {
  /** Absent on the tombstone of a grant revoked before this store saw it. */
  client_id: string | undefined;
  codes: Set<string>;
  access: Set<string>;
  refresh: Set<string>;
  expires_at: number;
  revoked: boolean;
  /** The listed grant, once a code of it was redeemed or a client_credentials refresh token was issued. */
  record: GrantRecord | undefined;
}

/**
 * Records grouped by the time slot in which they expire. A sweep visits only slots that have ended, oldest
 * first, and resumes where the previous one stopped (a slot index and a position in its bucket).
 */
class ExpiryQueue<T extends Expiring> {
  /** Each bucket as chunks of `CHUNK` records, every chunk full but the last. */
  private readonly buckets = new Map<number, T[][]>();
  private readonly width: number;
  /** Slot keys in ascending order from `head` on; slots before `head` are done. */
  private slots: number[] = [];
  private head = 0;
  /** Records of the head slot already visited. */
  private pos = 0;

  constructor(width: number) {
    this.width = width;
  }

  add(record: T): void {
    const key = Math.floor(record.expires_at / this.width);
    const bucket = this.buckets.get(key);
    if (bucket) {
      const last = bucket[bucket.length - 1]!;
      if (last.length < CHUNK) last.push(record);
      else bucket.push([record]);
      return;
    }
    this.buckets.set(key, [[record]]);
    // Each kind has one lifetime, so new slots nearly always come last: this loop rarely steps.
    let i = this.slots.length;
    while (
      i > this.head &&
      // Stryker disable next-line EqualityOperator: no slot from head on lacks a bucket
      this.slots[i - 1]! > key
    ) i--;
    // Never in front of a half-visited head slot; a slot in the past is visited either way.
    if (i === this.head && this.pos > 0) i++;
    this.slots.splice(i, 0, key);
  }

  /** Visits up to `budget` records of slots that ended by `now`; returns the budget left (0: maybe more due). */
  sweep(now: number, budget: number, visit: (record: T) => void): number {
    const current = Math.floor(now / this.width);
    while (
      this.head < this.slots.length &&
      // Stryker disable next-line ConditionalExpression,EqualityOperator: only a lookup is saved
      budget > 0
    ) {
      const key = this.slots[this.head]!;
      if (key >= current) break;
      const bucket = this.buckets.get(key)!;
      const length = ((bucket.length - 1) << CHUNK_BITS) + bucket[bucket.length - 1]!.length;
      const end = Math.min(length, this.pos + budget);
      for (let i = this.pos; i < end; i++) visit(bucket[i >> CHUNK_BITS]![i & (CHUNK - 1)]!);
      budget -= end - this.pos;
      if (end < length) {
        this.pos = end;
        break;
      }
      this.buckets.delete(key);
      this.head++;
      this.pos = 0;
    }
    // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator,ArithmeticOperator,BlockStatement: changes only memory and time
    if (this.head > 1024 && this.head * 2 > this.slots.length) {
      this.slots = this.slots.slice(this.head);
      this.head = 0;
    }
    return budget;
  }
}

/**
 * Creates an in-memory store.
 *
 * @example
 * ```ts
 * const server = createAuthorizationServer({ issuer, storage: memoryStorage(), ... });
 * ```
 */
export function memoryStorage(options: MemoryStorageOptions = {}): MemoryStorage {
  return new MemoryStorage(options);
}

/** A set of keys: a `Set`, or a {@link TieredSet} where one key may hold very many. */
interface KeySet {
  add(value: string): unknown;
  delete(value: string): boolean;
  readonly size: number;
}

/** An index from a key to a set of keys: a `Map` or a {@link TieredMap}. */
interface Index<S> {
  get(key: string): S | undefined;
  set(key: string, value: S): unknown;
  delete(key: string): boolean;
}

const addTo = <S extends KeySet>(index: Index<S>, key: string, value: string, empty: () => S): void => {
  let set = index.get(key);
  if (!set) index.set(key, set = empty());
  set.add(value);
};

const removeFrom = <S extends KeySet>(index: Index<S>, key: string, value: string): void => {
  const set = index.get(key);
  // Stryker disable next-line CallExpression: only memory differs
  if (set?.delete(value) && set.size === 0) index.delete(key);
};

const newSet = (): Set<string> => new Set();
/** One client's tokens and grants can number in the millions: see {@link TieredSet}. */
const newTieredSet = (): TieredSet => new TieredSet();

const pairKey = (clientId: string, userId: string): string => `${clientId}\u0000${userId}`;

/** The in-memory {@link Storage}. */
export class MemoryStorage implements Storage {
  private readonly clients = new Map<string, ClientRecord>();
  private readonly codes = new TieredMap<StoredCode>();
  private readonly access = new TieredMap<AccessTokenRecord>();
  private readonly refresh = new TieredMap<RefreshTokenRecord>();
  /**
   * What a refresh token keeps for the grace window, beside its record (which the store hands out): the sealed
   * successor and the hash it replaced. Weak, so it goes with the record.
   */
  private readonly links = new WeakMap<RefreshTokenRecord, { sealed?: string; replaces?: string }>();
  private readonly grants = new TieredMap<GrantEntry>();
  private readonly marks = new TieredMap<number>();
  private readonly settings = new Map<string, string>();
  /** Device authorizations by device code hash, and device code hash by user code hash. */
  private readonly devices = new Map<string, DeviceAuthorizationRecord>();
  private readonly userCodes = new Map<string, string>();
  /** Unredeemed codes by (client_id, user_id), for the `saveCode` limit. */
  private readonly pendingCodes = new TieredMap<Set<string>>();
  /** Live grant ids by client and by user; grantless client_credentials access tokens by client. */
  private readonly clientGrants = new Map<string, TieredSet>();
  private readonly userGrants = new TieredMap<Set<string>>();
  private readonly clientTokens = new Map<string, TieredSet>();
  private readonly codeExpiry: ExpiryQueue<StoredCode>;
  private readonly accessExpiry: ExpiryQueue<AccessTokenRecord>;
  private readonly refreshExpiry: ExpiryQueue<RefreshTokenRecord>;
  private readonly grantExpiry: ExpiryQueue<Expiring>;
  private readonly markExpiry: ExpiryQueue<Expiring>;
  private readonly deviceExpiry: ExpiryQueue<Expiring>;
  private readonly clock: () => number;
  private readonly interval: number;
  private nextSweep = 0;
  /** The `now` of the sweep in progress and how many records it deleted; read by the visit callbacks. */
  private sweepNow = 0;
  private swept = 0;

  /** Creates an empty store; see {@link MemoryStorageOptions}. */
  constructor(options: MemoryStorageOptions = {}) {
    this.clock = options.clock ?? Date.now;
    this.interval = options.sweepInterval ?? 30_000;
    this.codeExpiry = new ExpiryQueue(this.interval);
    this.accessExpiry = new ExpiryQueue(this.interval);
    this.refreshExpiry = new ExpiryQueue(this.interval);
    this.grantExpiry = new ExpiryQueue(this.interval);
    this.markExpiry = new ExpiryQueue(this.interval);
    this.deviceExpiry = new ExpiryQueue(this.interval);
  }

  /** Live records by kind, for tests and monitoring. */
  size(): { clients: number; codes: number; access: number; refresh: number; grants: number; marks: number } {
    return {
      clients: this.clients.size,
      codes: this.codes.size,
      access: this.access.size,
      refresh: this.refresh.size,
      grants: this.grants.size,
      marks: this.marks.size,
    };
  }

  /** See {@link Storage.getClient}. */
  getClient(clientId: string): Promise<ClientRecord | null> {
    const client = this.clients.get(clientId);
    return Promise.resolve(client ? { ...client } : null);
  }

  /** See {@link Storage.saveClient}. */
  saveClient(client: ClientRecord): Promise<void> {
    this.clients.set(client.client_id, structuredClone(client));
    return Promise.resolve();
  }

  /** See {@link Storage.setClientActive}. */
  setClientActive(clientId: string, active: boolean): Promise<ClientRecord | null> {
    const client = this.clients.get(clientId);
    if (!client) return Promise.resolve(null);
    const updated = { ...client, active };
    this.clients.set(clientId, updated);
    return Promise.resolve({ ...updated });
  }

  /** See {@link Storage.listClients}. */
  listClients(): Promise<ClientRecord[]> {
    return Promise.resolve(Array.from(this.clients.values(), (client) => ({ ...client })));
  }

  /** See {@link Storage.deleteClient}. */
  deleteClient(clientId: string): Promise<boolean> {
    this.revokeClient(clientId);
    return Promise.resolve(this.clients.delete(clientId));
  }

  /** See {@link Storage.revokeClientGrants}. */
  revokeClientGrants(clientId: string): Promise<number> {
    return Promise.resolve(this.revokeClient(clientId));
  }

  /** See {@link Storage.saveCode}. */
  saveCode(code: CodeRecord, limit?: number): Promise<void> {
    this.maybeSweep();
    const grant = this.grant(code.grant_id, code.client_id, code.expires_at);
    if (grant.revoked) return Promise.resolve();
    const stored = storedCode(code);
    // A code stored again under its hash replaces the old one in every index: a pending entry left behind made
    // the cap's eviction pick a code that is gone (a TypeError in saveCode).
    const previous = this.codes.get(code.hash);
    if (previous) this.deleteCode(previous);
    this.codes.set(code.hash, stored);
    grant.codes.add(code.hash);
    this.codeExpiry.add(stored);
    if (stored.redeemed_at === undefined) {
      const key = pairKey(code.client_id, code.user_id);
      addTo(this.pendingCodes, key, code.hash, newSet);
      const pending = this.pendingCodes.get(key)!;
      // Stryker disable next-line ConditionalExpression: NaN compares as Infinity does
      const cap = limit === undefined ? Infinity : Math.max(1, limit);
      while (pending.size > cap) this.deleteCode(this.earliest(pending, code.hash));
    }
    return Promise.resolve();
  }

  /** See {@link Storage.findCode}. */
  findCode(hash: string, now: number): Promise<CodeRecord | null> {
    const code = this.codes.get(hash);
    return Promise.resolve(code && code.expires_at > now ? codeRecord(code) : null);
  }

  /** See {@link Storage.redeemCode}. */
  redeemCode(hash: string, tokens: IssuedTokens, now: number): Promise<CodeRecord | null> {
    this.maybeSweep();
    const code = this.codes.get(hash);
    if (!code || code.expires_at <= now || code.redeemed_at !== undefined) return Promise.resolve(null);
    const grant = this.grant(code.grant_id, code.client_id, code.expires_at);
    // Stryker disable next-line ConditionalExpression: unreachable in this store
    if (grant.revoked) return Promise.resolve(null);
    const before = codeRecord(code);
    code.redeemed_at = now;
    removeFrom(this.pendingCodes, pairKey(code.client_id, code.user_id), hash);
    this.store(tokens, now);
    this.list(grant, code.grant_id, before, tokens, now);
    return Promise.resolve(before);
  }

  /** See {@link Storage.saveTokens}. */
  saveTokens(tokens: IssuedTokens, now: number): Promise<void> {
    this.maybeSweep();
    if (this.store(tokens, now) && tokens.refresh) {
      this.list(this.grants.get(tokens.refresh.grant_id)!, tokens.refresh.grant_id, tokens.refresh, tokens, now);
    }
    return Promise.resolve();
  }

  /** See {@link Storage.findAccessToken}. */
  findAccessToken(hash: string, now: number): Promise<AccessTokenRecord | null> {
    const token = this.access.get(hash);
    return Promise.resolve(token && token.expires_at > now ? token : null);
  }

  /** See {@link Storage.findRefreshToken}. */
  findRefreshToken(hash: string, now: number): Promise<RefreshTokenRecord | null> {
    const token = this.refresh.get(hash);
    return Promise.resolve(token && token.expires_at > now ? { ...token } : null);
  }

  /** See {@link Storage.rotateRefreshToken}. */
  rotateRefreshToken(
    hash: string,
    next: IssuedTokens,
    now: number,
    graceMs = 0,
  ): Promise<RefreshTokenRecord | null> {
    this.maybeSweep();
    const token = this.refresh.get(hash);
    if (!token || token.expires_at <= now) return Promise.resolve(null);
    const grant = this.grant(token.grant_id, token.client_id, token.expires_at);
    // Stryker disable next-line ConditionalExpression: unreachable in this store
    if (grant.revoked) return Promise.resolve(null);
    const before: RefreshTokenRecord = { ...token };
    const links = this.links.get(token);
    if (token.rotated_at !== undefined) {
      // A retry inside the grace window, while the successor is still unused (RFC 9700 §4.14.2 allows it): it
      // gets the sealed successor back, and stores an access token only, so that no second chain starts.
      if (!(graceMs > 0 && token.rotated_at > now - graceMs) || links?.sealed === undefined) return Promise.resolve(null);
      const successor = token.replaced_by === undefined ? undefined : this.refresh.get(token.replaced_by);
      if (!successor || successor.rotated_at !== undefined || successor.expires_at <= now) return Promise.resolve(null);
      before.successor = links.sealed;
      this.store({ access: next.access }, now);
    } else {
      token.rotated_at = now;
      if (next.refresh) token.replaced_by = next.refresh.hash;
      this.store(next, now);
      // The predecessor's seal is of no use once this token rotated: drop it.
      const predecessor = links?.replaces === undefined ? undefined : this.refresh.get(links.replaces);
      const sealedBefore = predecessor && this.links.get(predecessor);
      if (sealedBefore) delete sealedBefore.sealed;
      if (next.sealed !== undefined) this.links.set(token, { ...links, sealed: next.sealed });
      const stored = next.refresh && this.refresh.get(next.refresh.hash);
      if (stored) this.links.set(stored, { replaces: hash });
    }
    // Stryker disable next-line ConditionalExpression: such a grant is always listed
    if (grant.record) {
      grant.record.last_used_at = now;
      grant.record.expires_at = Math.max(grant.record.expires_at, latestExpiry(next));
    }
    return Promise.resolve(before);
  }

  /** See {@link Storage.revokeGrant}. */
  revokeGrant(grantId: string): Promise<void> {
    this.revoke(grantId);
    return Promise.resolve();
  }

  /** See {@link Storage.revokeAccessToken}. */
  revokeAccessToken(hash: string): Promise<void> {
    const token = this.access.get(hash);
    if (token) this.deleteAccess(token);
    return Promise.resolve();
  }

  /** See {@link Storage.listGrants}. */
  listGrants(userId: string, now: number): Promise<GrantRecord[]> {
    const listed: GrantRecord[] = [];
    // Stryker disable next-line ArrayDeclaration: an unknown id lists nothing
    for (const grantId of this.userGrants.get(userId) ?? []) {
      // Stryker disable next-line OptionalChaining: every listed id names a grant
      const record = this.grants.get(grantId)?.record;
      if (record && record.expires_at > now) listed.push({ ...record });
    }
    return Promise.resolve(listed);
  }

  /** See {@link Storage.markOnce}. */
  markOnce(key: string, expiresAt: number, now: number): Promise<boolean> {
    this.maybeSweep();
    const mark = this.marks.get(key);
    // Stryker disable next-line ConditionalExpression: only narrows the type
    if (mark !== undefined && mark > now) return Promise.resolve(false);
    // Delete the expired mark first: a TieredMap counts a key set again twice until it settles.
    // Stryker disable next-line ConditionalExpression: deleting a missing key changes nothing
    if (mark !== undefined) this.marks.delete(key);
    this.marks.set(key, expiresAt);
    this.markExpiry.add({ hash: key, expires_at: expiresAt });
    return Promise.resolve(true);
  }

  /** See {@link Storage.isMarked}. */
  isMarked(key: string, now: number): Promise<boolean> {
    const mark = this.marks.get(key);
    // Stryker disable next-line ConditionalExpression: only narrows the type
    return Promise.resolve(mark !== undefined && mark > now);
  }

  /** See {@link Storage.initSetting}. */
  initSetting(name: string, value: string): Promise<string> {
    const stored = this.settings.get(name);
    if (stored !== undefined) return Promise.resolve(stored);
    this.settings.set(name, value);
    return Promise.resolve(value);
  }

  /** See {@link Storage.getSetting}. */
  getSetting(name: string): Promise<string | null> {
    return Promise.resolve(this.settings.get(name) ?? null);
  }

  /** See {@link Storage.swapSetting}. */
  swapSetting(name: string, expected: string | null, next: string): Promise<boolean> {
    if ((this.settings.get(name) ?? null) !== expected) return Promise.resolve(false);
    this.settings.set(name, next);
    return Promise.resolve(true);
  }

  /** See {@link Storage.saveDeviceAuthorization}. */
  saveDeviceAuthorization(record: DeviceAuthorizationRecord, now: number): Promise<boolean> {
    this.maybeSweep();
    if (this.liveDevice(this.userCodes.get(record.user_code_hash), now)) return Promise.resolve(false);
    const previous = this.devices.get(record.hash);
    if (previous) this.userCodes.delete(previous.user_code_hash);
    const stored: DeviceAuthorizationRecord = structuredClone(record);
    stored.status = "pending";
    delete stored.last_polled_at;
    this.devices.set(record.hash, stored);
    this.userCodes.set(record.user_code_hash, record.hash);
    this.deviceExpiry.add({ hash: record.hash, expires_at: record.expires_at });
    return Promise.resolve(true);
  }

  /** See {@link Storage.findDeviceAuthorization}. */
  findDeviceAuthorization(userCodeHash: string, now: number): Promise<DeviceAuthorizationRecord | null> {
    const device = this.liveDevice(this.userCodes.get(userCodeHash), now);
    return Promise.resolve(device ? structuredClone(device) : null);
  }

  /** See {@link Storage.decideDeviceAuthorization}. */
  decideDeviceAuthorization(userCodeHash: string, decision: DeviceDecision, now: number): Promise<DeviceAuthorizationRecord | null> {
    const device = this.liveDevice(this.userCodes.get(userCodeHash), now);
    if (!device || device.status !== "pending" || device.codes_expire_at <= now) return Promise.resolve(null);
    device.status = decision.approved ? "approved" : "denied";
    device.user_id = decision.user_id;
    if (decision.auth_time !== undefined) device.auth_time = decision.auth_time;
    return Promise.resolve(structuredClone(device));
  }

  /** See {@link Storage.pollDeviceAuthorization}. */
  pollDeviceAuthorization(hash: string, now: number): Promise<DevicePoll | null> {
    const device = this.liveDevice(hash, now);
    if (!device) return Promise.resolve(null);
    const slow = device.last_polled_at !== undefined && now < device.last_polled_at + device.interval;
    if (slow) device.interval += 5000;
    device.last_polled_at = now;
    return Promise.resolve({ record: structuredClone(device), slow_down: slow });
  }

  /** See {@link Storage.redeemDeviceAuthorization}. */
  redeemDeviceAuthorization(hash: string, tokens: IssuedTokens, now: number): Promise<DeviceAuthorizationRecord | null> {
    this.maybeSweep();
    const device = this.liveDevice(hash, now);
    if (!device || device.status !== "approved" || device.codes_expire_at <= now) return Promise.resolve(null);
    const grant = this.grant(device.grant_id, device.client_id, latestExpiry(tokens));
    if (grant.revoked) return Promise.resolve(null);
    const before = structuredClone(device);
    device.status = "redeemed";
    this.store(tokens, now);
    this.list(grant, device.grant_id, { ...device, user_id: device.user_id! }, tokens, now);
    return Promise.resolve(before);
  }

  /** The device authorization under a device code hash while it is live. */
  private liveDevice(hash: string | undefined, now: number): DeviceAuthorizationRecord | undefined {
    const device = hash === undefined ? undefined : this.devices.get(hash);
    return device && device.expires_at > now ? device : undefined;
  }

  /** Sweeps in slices, yielding to the event loop between them, so that requests keep flowing meanwhile. */
  async purgeExpired(now: number): Promise<number> {
    let deleted = 0;
    for (;;) {
      const { count, done } = this.sweep(now, SWEEP_SLICE * 8);
      deleted += count;
      if (done) return deleted;
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  }

  /** Stores issued tokens unless their grant was revoked meanwhile; says whether it did. */
  private store(tokens: IssuedTokens, now: number): boolean {
    const { access, refresh } = tokens;
    const grantId = access.grant_id ?? refresh?.grant_id;
    let grant: GrantEntry | undefined;
    if (grantId !== undefined) {
      grant = this.grant(grantId, access.client_id, latestExpiry(tokens));
      // Stryker disable next-line BooleanLiteral: its one reader returns at once for a revoked grant
      if (grant.revoked) return false;
    }
    const a = { ...access };
    this.access.set(a.hash, a);
    this.accessExpiry.add(a);
    if (grant) grant.access.add(a.hash);
    else addTo(this.clientTokens, a.client_id, a.hash, newTieredSet);
    if (refresh) {
      const r = { ...refresh };
      this.refresh.set(r.hash, r);
      this.refreshExpiry.add(r);
      // Stryker disable next-line OptionalChaining: a refresh token always has a grant
      grant?.refresh.add(r.hash);
    }
    const client = this.clients.get(access.client_id);
    if (client && !(client.last_used_at! > now - TOUCH_INTERVAL)) {
      this.clients.set(client.client_id, { ...client, last_used_at: now });
    }
    return true;
  }

  /** Makes a grant visible to `listGrants` and `revokeClientGrants`, once. */
  private list(
    grant: GrantEntry,
    grantId: string,
    source: { client_id: string; user_id?: string; scope: string; resource?: string[] },
    tokens: IssuedTokens,
    now: number,
  ): void {
    if (grant.record || grant.revoked) return;
    const record: GrantRecord = {
      grant_id: grantId,
      client_id: source.client_id,
      scope: source.scope,
      created_at: now,
      last_used_at: now,
      expires_at: latestExpiry(tokens),
    };
    // Stryker disable next-line ConditionalExpression: unreachable through listGrants
    if (source.user_id !== undefined) record.user_id = source.user_id;
    if (source.resource !== undefined) record.resource = source.resource;
    grant.record = record;
    if (source.user_id !== undefined) addTo(this.userGrants, source.user_id, grantId, newSet);
  }

  /** The grant entry, created on first use; its lifetime grows to cover every member. */
  private grant(grantId: string, clientId: string | undefined, expiresAt: number): GrantEntry {
    let grant = this.grants.get(grantId);
    if (!grant) {
      grant = {
        client_id: clientId,
        codes: new Set(),
        access: new Set(),
        refresh: new Set(),
        expires_at: expiresAt,
        revoked: false,
        record: undefined,
      };
      this.grants.set(grantId, grant);
      this.grantExpiry.add({ hash: grantId, expires_at: expiresAt });
      // Stryker disable next-line ConditionalExpression: unreachable: the id is a string
      if (clientId !== undefined) addTo(this.clientGrants, clientId, grantId, newTieredSet);
    } else if (
      // Stryker disable next-line EqualityOperator: equal expiries name the same grant
      expiresAt > grant.expires_at
    ) {
      grant.expires_at = expiresAt;
      this.grantExpiry.add({ hash: grantId, expires_at: expiresAt });
    }
    return grant;
  }

  /** Empties a grant and leaves it as a tombstone until it expires, so a racing write cannot resurrect it. */
  private revoke(grantId: string): boolean {
    const grant = this.grants.get(grantId);
    if (!grant) {
      this.grant(grantId, undefined, this.clock() + this.interval).revoked = true;
      // Stryker disable next-line BooleanLiteral: its one reader passes existing grants
      return false;
    }
    const listed = grant.record !== undefined;
    grant.revoked = true;
    for (const hash of grant.codes) {
      const code = this.codes.get(hash);
      // Stryker disable next-line ConditionalExpression: always set
      if (code) this.deleteCode(code);
    }
    for (const hash of grant.access) this.access.delete(hash);
    for (const hash of grant.refresh) this.refresh.delete(hash);
    // Stryker disable next-line CallExpression: already empty
    grant.codes.clear();
    grant.access.clear();
    grant.refresh.clear();
    this.unlist(grant, grantId);
    return listed;
  }

  /** Revokes every grant and grantless token of a client; returns how many listed grants it revoked. */
  private revokeClient(clientId: string): number {
    let count = 0;
    for (const grantId of [...this.clientGrants.get(clientId) ?? []]) if (this.revoke(grantId)) count++;
    // Stryker disable next-line ArrayDeclaration: an unknown hash deletes nothing
    for (const hash of this.clientTokens.get(clientId) ?? []) this.access.delete(hash);
    this.clientTokens.delete(clientId);
    return count;
  }

  /** Removes a grant from the client and user indexes. */
  private unlist(grant: GrantEntry, grantId: string): void {
    // Stryker disable next-line ConditionalExpression: a tombstone has no client set
    if (grant.client_id !== undefined) removeFrom(this.clientGrants, grant.client_id, grantId);
    const userId = grant.record?.user_id;
    if (userId !== undefined) removeFrom(this.userGrants, userId, grantId);
    grant.record = undefined;
  }

  /** The pending code that expires first, other than the one just saved. */
  private earliest(pending: Set<string>, saved: string): StoredCode {
    let first: StoredCode | undefined;
    for (const hash of pending) {
      if (hash === saved) continue;
      const code = this.codes.get(hash)!;
      if (!first || code.expires_at < first.expires_at) first = code;
    }
    return first!;
  }

  /** Deletes a code and its index entries. */
  private deleteCode(code: StoredCode): void {
    this.codes.delete(code.hash);
    // Stryker disable next-line OptionalChaining: a code's grant outlives it
    this.grants.get(code.grant_id)?.codes.delete(code.hash);
    // Stryker disable next-line ConditionalExpression: a redeemed code is in no pending set
    if (code.redeemed_at === undefined) removeFrom(this.pendingCodes, pairKey(code.client_id, code.user_id), code.hash);
  }

  /** Deletes an access token and its index entries. */
  private deleteAccess(token: AccessTokenRecord): void {
    this.access.delete(token.hash);
    // Stryker disable next-line OptionalChaining: a token's grant outlives it
    if (token.grant_id !== undefined) this.grants.get(token.grant_id)?.access.delete(token.hash);
    else removeFrom(this.clientTokens, token.client_id, token.hash);
  }

  /** Continues the sweep from the write paths: a bounded slice per call while records are due. */
  private maybeSweep(): void {
    const now = this.clock();
    if (now < this.nextSweep) return;
    // Until the backlog is gone, every write takes one more slice; then the next sweep waits an interval.
    if (this.sweep(now, SWEEP_SLICE).done) this.nextSweep = now + this.interval;
  }

  /** Visits up to `budget` expired records across every kind; says how many it deleted and whether it is done. */
  private sweep(now: number, budget: number): { count: number; done: boolean } {
    this.sweepNow = now;
    this.swept = 0;
    budget = this.codeExpiry.sweep(now, budget, this.dropCode);
    budget = this.accessExpiry.sweep(now, budget, this.dropAccess);
    budget = this.refreshExpiry.sweep(now, budget, this.dropRefresh);
    budget = this.grantExpiry.sweep(now, budget, this.dropGrant);
    budget = this.markExpiry.sweep(now, budget, this.dropMark);
    budget = this.deviceExpiry.sweep(now, budget, this.dropDevice);
    return { count: this.swept, done: budget > 0 };
  }

  // The visit callbacks skip records replaced, revoked or extended since they were queued.
  private readonly dropCode = (code: StoredCode): void => {
    if (
      this.codes.get(code.hash) !== code ||
      // Stryker disable next-line ConditionalExpression,EqualityOperator: never true once the slot has ended
      code.expires_at > this.sweepNow
    ) return;
    this.deleteCode(code);
    this.swept++;
  };

  private readonly dropAccess = (token: AccessTokenRecord): void => {
    if (
      this.access.get(token.hash) !== token ||
      // Stryker disable next-line ConditionalExpression,EqualityOperator: never true once the slot has ended
      token.expires_at > this.sweepNow
    ) return;
    this.deleteAccess(token);
    this.swept++;
  };

  private readonly dropRefresh = (token: RefreshTokenRecord): void => {
    if (
      this.refresh.get(token.hash) !== token ||
      // Stryker disable next-line ConditionalExpression,EqualityOperator: never true once the slot has ended
      token.expires_at > this.sweepNow
    ) return;
    this.refresh.delete(token.hash);
    // Stryker disable next-line OptionalChaining: a token's grant outlives it
    this.grants.get(token.grant_id)?.refresh.delete(token.hash);
    this.swept++;
  };

  private readonly dropGrant = ({ hash, expires_at }: Expiring): void => {
    const grant = this.grants.get(hash);
    if (
      !grant || grant.expires_at !== expires_at ||
      // Stryker disable next-line ConditionalExpression,EqualityOperator: never true once the slot has ended
      expires_at > this.sweepNow
    ) return;
    this.grants.delete(hash);
    this.unlist(grant, hash);
    this.swept++;
  };

  private readonly dropDevice = ({ hash, expires_at }: Expiring): void => {
    const device = this.devices.get(hash);
    if (!device || device.expires_at !== expires_at || expires_at > this.sweepNow) return;
    this.devices.delete(hash);
    if (this.userCodes.get(device.user_code_hash) === hash) this.userCodes.delete(device.user_code_hash);
    this.swept++;
  };

  private readonly dropMark = ({ hash, expires_at }: Expiring): void => {
    if (
      this.marks.get(hash) !== expires_at ||
      // Stryker disable next-line ConditionalExpression,EqualityOperator: never true once the slot has ended
      expires_at > this.sweepNow
    ) return;
    this.marks.delete(hash);
    this.swept++;
  };
}

function latestExpiry(tokens: IssuedTokens): number {
  return Math.max(tokens.access.expires_at, tokens.refresh?.expires_at ?? 0);
}
