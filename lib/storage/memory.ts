/**
 * The in-memory store: the default, and the model every other store is measured against.
 *
 * Each method runs to completion without awaiting, so on a single-threaded runtime every method is atomic;
 * that is what makes {@link Storage.redeemCode} and {@link Storage.rotateRefreshToken} safe here. Expired
 * records are dropped by a sweep over expiry buckets, so memory stays bounded by the number of live records.
 *
 * @module
 */
import type {
  AccessTokenRecord,
  ClientRecord,
  CodeRecord,
  IssuedTokens,
  RefreshTokenRecord,
  Storage,
} from "./types.ts";

/** Options of {@link memoryStorage}. */
export interface MemoryStorageOptions {
  /** Milliseconds since the epoch; the server passes its own clock. Default `Date.now`. */
  clock?: () => number;
  /** Width of an expiry bucket and least time between sweeps, in ms. Default 30 000. */
  sweepInterval?: number;
}

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
  expires_at: number;
  redeemed_at: number | undefined;
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
    expires_at: code.expires_at,
    redeemed_at: code.redeemed_at,
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
  if (code.redeemed_at !== undefined) record.redeemed_at = code.redeemed_at;
  return record;
}

/** Members of one grant, so that a replayed code or a reused refresh token can revoke them all. */
interface GrantEntry {
  codes: Set<string>;
  access: Set<string>;
  refresh: Set<string>;
  expires_at: number;
  revoked: boolean;
}

/** Records grouped by the time slot in which they expire; a sweep visits only slots in the past. */
class ExpiryBuckets<T extends Expiring> {
  private readonly buckets = new Map<number, T[]>();
  private readonly width: number;
  constructor(width: number) {
    this.width = width;
  }

  add(record: T): void {
    const key = Math.floor(record.expires_at / this.width);
    const bucket = this.buckets.get(key);
    if (bucket) bucket.push(record);
    else this.buckets.set(key, [record]);
  }

  /** Calls `drop` for every record whose slot has ended by `now`. */
  sweep(now: number, drop: (record: T) => void): void {
    const current = Math.floor(now / this.width);
    for (const [key, bucket] of this.buckets) {
      if (key >= current) continue;
      this.buckets.delete(key);
      for (const record of bucket) drop(record);
    }
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

/** The in-memory {@link Storage}. */
export class MemoryStorage implements Storage {
  private readonly clients = new Map<string, ClientRecord>();
  private readonly codes = new Map<string, StoredCode>();
  private readonly access = new Map<string, AccessTokenRecord>();
  private readonly refresh = new Map<string, RefreshTokenRecord>();
  private readonly grants = new Map<string, GrantEntry>();
  private readonly codeExpiry: ExpiryBuckets<StoredCode>;
  private readonly accessExpiry: ExpiryBuckets<AccessTokenRecord>;
  private readonly refreshExpiry: ExpiryBuckets<RefreshTokenRecord>;
  private readonly grantExpiry: ExpiryBuckets<{ hash: string; expires_at: number }>;
  private readonly clock: () => number;
  private readonly interval: number;
  private nextSweep = 0;

  constructor(options: MemoryStorageOptions = {}) {
    this.clock = options.clock ?? Date.now;
    this.interval = options.sweepInterval ?? 30_000;
    this.codeExpiry = new ExpiryBuckets(this.interval);
    this.accessExpiry = new ExpiryBuckets(this.interval);
    this.refreshExpiry = new ExpiryBuckets(this.interval);
    this.grantExpiry = new ExpiryBuckets(this.interval);
  }

  /** Live records by kind, for tests and monitoring. */
  size(): { clients: number; codes: number; access: number; refresh: number; grants: number } {
    return {
      clients: this.clients.size,
      codes: this.codes.size,
      access: this.access.size,
      refresh: this.refresh.size,
      grants: this.grants.size,
    };
  }

  getClient(clientId: string): Promise<ClientRecord | null> {
    const client = this.clients.get(clientId);
    return Promise.resolve(client ? { ...client } : null);
  }

  saveClient(client: ClientRecord): Promise<void> {
    this.clients.set(client.client_id, structuredClone(client));
    return Promise.resolve();
  }

  setClientActive(clientId: string, active: boolean): Promise<ClientRecord | null> {
    const client = this.clients.get(clientId);
    if (!client) return Promise.resolve(null);
    const updated = { ...client, active };
    this.clients.set(clientId, updated);
    return Promise.resolve({ ...updated });
  }

  saveCode(code: CodeRecord): Promise<void> {
    this.maybeSweep();
    const grant = this.grant(code.grant_id, code.expires_at);
    if (grant.revoked) return Promise.resolve();
    const stored = storedCode(code);
    this.codes.set(code.hash, stored);
    grant.codes.add(code.hash);
    this.codeExpiry.add(stored);
    return Promise.resolve();
  }

  findCode(hash: string, now: number): Promise<CodeRecord | null> {
    const code = this.codes.get(hash);
    return Promise.resolve(code && code.expires_at > now ? codeRecord(code) : null);
  }

  redeemCode(hash: string, tokens: IssuedTokens, now: number): Promise<CodeRecord | null> {
    const code = this.codes.get(hash);
    if (!code || code.expires_at <= now || code.redeemed_at !== undefined) return Promise.resolve(null);
    if (this.grants.get(code.grant_id)?.revoked) return Promise.resolve(null);
    code.redeemed_at = now;
    this.store(tokens);
    return Promise.resolve(codeRecord(code));
  }

  saveTokens(tokens: IssuedTokens): Promise<void> {
    this.maybeSweep();
    this.store(tokens);
    return Promise.resolve();
  }

  findAccessToken(hash: string, now: number): Promise<AccessTokenRecord | null> {
    const token = this.access.get(hash);
    return Promise.resolve(token && token.expires_at > now ? token : null);
  }

  findRefreshToken(hash: string, now: number): Promise<RefreshTokenRecord | null> {
    const token = this.refresh.get(hash);
    return Promise.resolve(token && token.expires_at > now ? { ...token } : null);
  }

  rotateRefreshToken(hash: string, next: IssuedTokens, now: number): Promise<RefreshTokenRecord | null> {
    this.maybeSweep();
    const token = this.refresh.get(hash);
    if (!token || token.expires_at <= now || token.rotated_at !== undefined) return Promise.resolve(null);
    if (this.grants.get(token.grant_id)?.revoked) return Promise.resolve(null);
    token.rotated_at = now;
    this.store(next);
    return Promise.resolve({ ...token });
  }

  revokeGrant(grantId: string): Promise<void> {
    const grant = this.grants.get(grantId);
    if (!grant) {
      // A tombstone, so that a write racing this revocation cannot resurrect the grant.
      const tombstone = this.grant(grantId, this.clock() + this.interval);
      tombstone.revoked = true;
      return Promise.resolve();
    }
    grant.revoked = true;
    for (const hash of grant.codes) this.codes.delete(hash);
    for (const hash of grant.access) this.access.delete(hash);
    for (const hash of grant.refresh) this.refresh.delete(hash);
    grant.codes.clear();
    grant.access.clear();
    grant.refresh.clear();
    return Promise.resolve();
  }

  revokeAccessToken(hash: string): Promise<void> {
    const token = this.access.get(hash);
    if (token) {
      this.access.delete(hash);
      if (token.grant_id !== undefined) this.grants.get(token.grant_id)?.access.delete(hash);
    }
    return Promise.resolve();
  }

  /** Stores issued tokens, unless their grant was revoked meanwhile. */
  private store(tokens: IssuedTokens): void {
    const { access, refresh } = tokens;
    const grantId = access.grant_id ?? refresh?.grant_id;
    let grant: GrantEntry | undefined;
    if (grantId !== undefined) {
      grant = this.grant(grantId, Math.max(access.expires_at, refresh?.expires_at ?? 0));
      if (grant.revoked) return;
    }
    const a = { ...access };
    this.access.set(a.hash, a);
    this.accessExpiry.add(a);
    grant?.access.add(a.hash);
    if (refresh) {
      const r = { ...refresh };
      this.refresh.set(r.hash, r);
      this.refreshExpiry.add(r);
      grant?.refresh.add(r.hash);
    }
  }

  /** The grant entry, created on first use; its lifetime grows to cover every member. */
  private grant(grantId: string, expiresAt: number): GrantEntry {
    let grant = this.grants.get(grantId);
    if (!grant) {
      grant = { codes: new Set(), access: new Set(), refresh: new Set(), expires_at: expiresAt, revoked: false };
      this.grants.set(grantId, grant);
      this.grantExpiry.add({ hash: grantId, expires_at: expiresAt });
    } else if (expiresAt > grant.expires_at) {
      grant.expires_at = expiresAt;
      this.grantExpiry.add({ hash: grantId, expires_at: expiresAt });
    }
    return grant;
  }

  /** Drops expired records; runs at most once per sweep interval, from the write paths. */
  private maybeSweep(): void {
    const now = this.clock();
    if (now < this.nextSweep) return;
    this.nextSweep = now + this.interval;
    const dropFrom = <T extends Expiring>(map: Map<string, T>, kind: "codes" | "access" | "refresh") =>
    (record: T & { grant_id?: string }) => {
      if (map.get(record.hash) !== record || record.expires_at > now) return;
      map.delete(record.hash);
      if (record.grant_id !== undefined) this.grants.get(record.grant_id)?.[kind].delete(record.hash);
    };
    this.codeExpiry.sweep(now, dropFrom(this.codes, "codes"));
    this.accessExpiry.sweep(now, dropFrom(this.access, "access"));
    this.refreshExpiry.sweep(now, dropFrom(this.refresh, "refresh"));
    this.grantExpiry.sweep(now, ({ hash, expires_at }) => {
      const grant = this.grants.get(hash);
      if (grant && grant.expires_at === expires_at && expires_at <= now) this.grants.delete(hash);
    });
  }
}
