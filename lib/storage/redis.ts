/**
 * The Redis store: every verb is one Lua script run through an injected `eval`, so each is atomic and the
 * library names no driver. Each driver fits in one line (see the README, "Storage"):
 * ```ts
 * redisStorage({ eval: (s, k, a) => redis.eval(s, k.length, ...k, ...a) })                 // ioredis
 * redisStorage({ eval: (s, k, a) => client.eval(s, { keys: k, arguments: a }) })            // node-redis
 * redisStorage({ eval: (s, k, a) => redis.send("EVAL", [s, String(k.length), ...k, ...a]) }) // Bun.redis
 * ```
 * With `evalsha` as well, each call sends the script's SHA-1 instead of its text (`EVALSHA`), so Redis neither
 * receives nor hashes the script again; after a `NOSCRIPT` answer (a restarted or flushed Redis) the call is
 * made once more with `EVAL`, which loads it:
 * ```ts
 * evalsha: (h, k, a) => redis.evalsha(h, k.length, ...k, ...a)                       // ioredis
 * evalsha: (h, k, a) => client.evalSha(h, { keys: k, arguments: a })                 // node-redis
 * evalsha: (h, k, a) => redis.send("EVALSHA", [h, String(k.length), ...k, ...a])     // Bun.redis
 * ```
 * Expiring records carry TTLs, so expired data goes away by itself and `purgeExpired` has nothing to do.
 * Redis is durable only with persistence (AOF) turned on. Not for Redis Cluster: scripts touch keys they
 * derive from records (a grant's tokens), which must live on one node.
 *
 * @module
 */
import { OAuthError } from "../errors.ts";
import { type ScriptName, SCRIPTS } from "./redis_scripts.ts";
import { LastUsedWrites } from "./last_used.ts";
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

/** Runs a Lua script (`EVAL script numkeys ...keys ...args`) and resolves to its reply. */
export interface RedisExecutor {
  /** `EVAL script numkeys ...keys ...args`, resolved with the script's reply. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /**
   * `EVALSHA sha1 numkeys ...keys ...args`: the same by the script's SHA-1 (hex). Optional; when given, every
   * call after the first uses it, and a `NOSCRIPT` error makes the store retry that call once with `eval`.
   */
  evalsha?(sha1: string, keys: string[], args: string[]): Promise<unknown>;
}

/** Options of {@link redisStorage}. */
export interface RedisStorageOptions extends RedisExecutor {
  /** Prefix of every key, so that several servers (or other data) can share one database. Default `oauth:`. */
  prefix?: string;
  /** Milliseconds since the epoch: TTLs are measured on it. Default `Date.now`. */
  clock?: () => number;
  /** How long a key outlives its record's expiry, in ms, so that a clock skew never drops a live record. Default 60 000. */
  expiryMargin?: number;
}

/**
 * Creates a store on Redis.
 *
 * @example
 * ```ts
 * import Redis from "ioredis";
 * // Fail a call while disconnected (503), and never resend a script after a reconnect: with ioredis's
 * // defaults a resent code redemption or rotation would lose to its own first run and revoke the grant.
 * const redis = new Redis(process.env.REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
 * const storage = redisStorage({ eval: (s, k, a) => redis.eval(s, k.length, ...k, ...a) as Promise<unknown> });
 * ```
 */
export function redisStorage(options: RedisStorageOptions): RedisStorage {
  return new RedisStorage(options);
}

type Reply = unknown;
const str = (value: Reply): string | undefined => (value === null || value === undefined ? undefined : String(value));
const list = (value: Reply): Reply[] => (Array.isArray(value) ? value : []);

function client(reply: Reply): ClientRecord | null {
  const [json, active, lastUsed] = list(reply).map(str);
  if (json === undefined) return null;
  const record = JSON.parse(json) as ClientRecord;
  record.active = active === "1";
  if (lastUsed !== undefined) record.last_used_at = Number(lastUsed);
  return record;
}

/** Arguments for `store_tokens` in the scripts: the access token, then "1" and the refresh token, or "0". */
function tokenArgs(tokens: IssuedTokens): string[] {
  const { access, refresh } = tokens;
  const args = [access.hash, JSON.stringify(access), String(access.expires_at), access.grant_id ?? "", access.client_id];
  if (!refresh) return [...args, "0"];
  return [
    ...args, "1", refresh.hash, JSON.stringify(refresh), String(refresh.expires_at), refresh.grant_id, refresh.client_id,
    grantJson(refresh.grant_id, refresh.client_id, refresh.user_id, refresh.scope, refresh.resource), refresh.user_id ?? "",
  ];
}

/** What a grant record keeps from its first code or refresh token. */
function grantJson(grant: string, clientId: string, user: string | undefined, scope: string, resource: string[] | undefined): string {
  const record: Partial<GrantRecord> = { grant_id: grant, client_id: clientId, scope };
  if (user !== undefined) record.user_id = user;
  if (resource !== undefined) record.resource = resource;
  return JSON.stringify(record);
}

/** The {@link Storage} on Redis; see the module documentation. */
export class RedisStorage implements Storage {
  private readonly executor: RedisExecutor;
  private readonly prefix: string;
  private readonly clock: () => number;
  private readonly margin: number;

  /** The SHA-1 of each script, once computed (WebCrypto's digest is asynchronous); until then `eval` is used. */
  private shas: Partial<Record<ScriptName, string>> = {};
  /**
   * When this instance last had a script write each client's `last_used_at`: within a minute of that, the
   * script is told not to read the client at all (one command fewer per token issued), as the SQL store does.
   */
  private readonly lastUsed = new LastUsedWrites();

  /** Prefer {@link redisStorage}. */
  constructor(options: RedisStorageOptions) {
    this.executor = options.evalsha ? { eval: options.eval, evalsha: options.evalsha } : { eval: options.eval };
    this.prefix = options.prefix ?? "oauth:";
    this.clock = options.clock ?? Date.now;
    this.margin = Math.max(0, Math.trunc(options.expiryMargin ?? 60_000));
    if (options.evalsha) void scriptShas().then((shas) => (this.shas = shas), () => {});
  }

  /**
   * Runs a verb's script; a driver error becomes 503 `temporarily_unavailable`. `touch`: the client whose
   * `last_used_at` the script may write (the verbs that store tokens).
   */
  private async run(name: ScriptName, now: number | undefined, args: string[], touch?: string): Promise<Reply> {
    const flag = touch === undefined || now === undefined ? "" : `:${this.lastUsed.due(touch, now) ? "1" : "0"}`;
    const argv = [this.prefix, now === undefined ? "" : String(now), `${Math.trunc(this.clock())}:${this.margin}${flag}`, ...args];
    const sha = this.shas[name];
    try {
      if (sha !== undefined) {
        try {
          return await this.executor.evalsha!(sha, [], argv);
        } catch (error) {
          // NOSCRIPT: the script did not run (Redis restarted or was flushed); EVAL runs it and loads it again.
          if (!/NOSCRIPT/.test(error instanceof Error ? error.message : String(error))) throw error;
        }
      }
      return await this.executor.eval(SCRIPTS[name], [], argv);
    } catch (error) {
      throw new OAuthError("temporarily_unavailable", {
        description: "The service is temporarily unavailable",
        headers: { "retry-after": "1" },
        cause: error,
      });
    }
  }

  /** A client by id, or null. */
  async getClient(clientId: string): Promise<ClientRecord | null> {
    return client(await this.run("getClient", undefined, [clientId]));
  }

  /** Adds or replaces a client (one JSON document, plus the columns the store filters on). */
  async saveClient(record: ClientRecord): Promise<void> {
    const { active, last_used_at, ...rest } = record;
    await this.run("saveClient", undefined, [record.client_id, JSON.stringify(rest), active ? "1" : "0", last_used_at === undefined ? "" : String(last_used_at)]);
    this.lastUsed.forget(record.client_id);
  }

  /** Pauses or resumes a client; the updated record, or null. */
  async setClientActive(clientId: string, active: boolean): Promise<ClientRecord | null> {
    return client(await this.run("setClientActive", undefined, [clientId, active ? "1" : "0"]));
  }

  /** Every client. */
  async listClients(): Promise<ClientRecord[]> {
    return list(await this.run("listClients", undefined, [])).flatMap((reply) => client(reply) ?? []);
  }

  /** Revokes every grant of the client, deletes what was issued to it, then the client itself. */
  async deleteClient(clientId: string): Promise<boolean> {
    const [, existed] = list(await this.run("revokeClientGrants", undefined, [clientId, "1"]));
    this.lastUsed.forget(clientId);
    return Number(existed) > 0;
  }

  /** Revokes every grant of a client and deletes its codes and tokens; how many live grants were revoked. */
  async revokeClientGrants(clientId: string): Promise<number> {
    const [count] = list(await this.run("revokeClientGrants", undefined, [clientId, "0"]));
    return Number(count);
  }

  /** Stores a code unless its grant is revoked; with `limit`, drops the oldest unredeemed codes of its consent. */
  async saveCode(code: CodeRecord, limit?: number): Promise<void> {
    await this.run("saveCode", undefined, [
      code.hash, JSON.stringify({ ...code, redeemed_at: undefined }), String(code.expires_at), code.grant_id, code.client_id,
      code.user_id, grantJson(code.grant_id, code.client_id, code.user_id, code.scope, code.resource),
      limit === undefined ? "" : String(Math.max(0, Math.trunc(limit))),
    ]);
  }

  /** A live code by hash, redeemed or not. */
  async findCode(hash: string, now: number): Promise<CodeRecord | null> {
    const [json, redeemed] = list(await this.run("findCode", now, [hash])).map(str);
    if (json === undefined) return null;
    const code = JSON.parse(json) as CodeRecord;
    if (redeemed !== undefined) code.redeemed_at = Number(redeemed);
    return code;
  }

  /** Redeems a code for exactly one caller and stores that caller's tokens (see the module documentation). */
  async redeemCode(hash: string, tokens: IssuedTokens, now: number): Promise<CodeRecord | null> {
    const json = str(await this.run("redeemCode", now, [hash, ...tokenArgs(tokens)], tokens.access.client_id));
    return json === undefined ? null : (JSON.parse(json) as CodeRecord);
  }

  /** Stores client_credentials tokens (and the grant of their refresh token), unless the grant is revoked. */
  async saveTokens(tokens: IssuedTokens, now: number): Promise<void> {
    await this.run("saveTokens", now, tokenArgs(tokens), tokens.access.client_id);
  }

  /** A live access token of a live grant, or null. */
  async findAccessToken(hash: string, now: number): Promise<AccessTokenRecord | null> {
    const json = str(await this.run("findAccessToken", now, [hash]));
    return json === undefined ? null : (JSON.parse(json) as AccessTokenRecord);
  }

  /** A live refresh token of a live grant, rotated or not, or null. */
  async findRefreshToken(hash: string, now: number): Promise<RefreshTokenRecord | null> {
    return refresh(await this.run("findRefreshToken", now, [hash]));
  }

  /** Rotates a refresh token for exactly one caller, or for retries inside the grace window. */
  async rotateRefreshToken(hash: string, next: IssuedTokens, now: number, graceMs = 0): Promise<RefreshTokenRecord | null> {
    return refresh(await this.run("rotateRefreshToken", now, [hash, String(graceMs), next.sealed ?? "", ...tokenArgs(next)], next.access.client_id));
  }

  /** Revokes a grant: a tombstone first, then its codes and tokens are deleted. */
  async revokeGrant(grantId: string): Promise<void> {
    await this.run("revokeGrant", undefined, [grantId]);
  }

  /** Deletes one access token. */
  async revokeAccessToken(hash: string): Promise<void> {
    await this.run("revokeAccessToken", undefined, [hash]);
  }

  /** The live grants of a user. */
  async listGrants(userId: string, now: number): Promise<GrantRecord[]> {
    return list(await this.run("listGrants", now, [userId])).map((reply) => {
      const [json, created, lastUsed, expires] = list(reply).map(str);
      return { ...(JSON.parse(json!) as GrantRecord), created_at: Number(created), last_used_at: Number(lastUsed), expires_at: Number(expires) };
    });
  }

  /** Marks a key until `expiresAt`; true for exactly one caller while the mark lives. */
  async markOnce(key: string, expiresAt: number, now: number): Promise<boolean> {
    return Number(await this.run("markOnce", now, [key, String(expiresAt)])) === 1;
  }

  /** Whether a key's mark is live. */
  async isMarked(key: string, now: number): Promise<boolean> {
    return Number(await this.run("isMarked", now, [key])) === 1;
  }

  /** Stores a setting if absent; the stored value. */
  async initSetting(name: string, value: string): Promise<string> {
    return String(await this.run("initSetting", undefined, [name, value]));
  }

  /** The stored value of a setting, or null. */
  async getSetting(name: string): Promise<string | null> {
    return str(await this.run("getSetting", undefined, [name])) ?? null;
  }

  /** Compare-and-set, in one script. */
  async swapSetting(name: string, expected: string | null, next: string): Promise<boolean> {
    return Number(await this.run("swapSetting", undefined, [name, expected === null ? "0" : "1", expected ?? "", next])) === 1;
  }

  /** Stores a pending device authorization unless a live one holds its user code. */
  async saveDeviceAuthorization(record: DeviceAuthorizationRecord, now: number): Promise<boolean> {
    const { hash, user_code_hash, client_id, scope, resource, grant_id, created_at, codes_expire_at, expires_at, interval } = record;
    const fixed = { hash, user_code_hash, client_id, scope, grant_id, created_at, codes_expire_at, expires_at, ...(resource ? { resource } : {}) };
    return Number(await this.run("saveDevice", now, [
      record.hash, record.user_code_hash, JSON.stringify(fixed), String(record.expires_at), String(record.codes_expire_at),
      String(interval), record.grant_id, record.client_id,
      grantJson(record.grant_id, record.client_id, undefined, record.scope, record.resource),
    ])) === 1;
  }

  /** A live device authorization by its user code hash, or null. */
  async findDeviceAuthorization(userCodeHash: string, now: number): Promise<DeviceAuthorizationRecord | null> {
    return device(await this.run("findDevice", now, [userCodeHash]));
  }

  /** pending → approved | denied, once, in one script. */
  async decideDeviceAuthorization(userCodeHash: string, decision: DeviceDecision, now: number): Promise<DeviceAuthorizationRecord | null> {
    return device(await this.run("decideDevice", now, [
      userCodeHash, decision.approved ? "1" : "0", decision.user_id, decision.auth_time === undefined ? "" : String(decision.auth_time),
    ]));
  }

  /** Moves the last poll time and decides `slow_down`, in one script. */
  async pollDeviceAuthorization(hash: string, now: number): Promise<DevicePoll | null> {
    const [slow, reply] = list(await this.run("pollDevice", now, [hash]));
    const record = device(reply);
    return record ? { record, slow_down: Number(slow) === 1 } : null;
  }

  /** approved → redeemed once, with the winner's grant and tokens, in one script. */
  async redeemDeviceAuthorization(hash: string, tokens: IssuedTokens, now: number): Promise<DeviceAuthorizationRecord | null> {
    return device(await this.run("redeemDevice", now, [hash, ...tokenArgs(tokens)], tokens.access.client_id));
  }

  /** Nothing to do: every expiring key carries a TTL, and Redis drops it by itself. */
  purgeExpired(_now: number): Promise<number> {
    return Promise.resolve(0);
  }
}

/** The hex SHA-1 of every script, Redis's name for it in `EVALSHA` (an identifier, no security use); once per process. */
let shaTable: Promise<Partial<Record<ScriptName, string>>> | undefined;
function scriptShas(): Promise<Partial<Record<ScriptName, string>>> {
  return shaTable ??= (async () => {
    const encoder = new TextEncoder();
    const table: Partial<Record<ScriptName, string>> = {};
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-1", encoder.encode(SCRIPTS[name])));
      table[name] = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    }
    return table;
  })();
}

function refresh(reply: Reply): RefreshTokenRecord | null {
  const [json, rotated, replacedBy, successor] = list(reply).map(str);
  if (json === undefined) return null;
  const token = JSON.parse(json) as RefreshTokenRecord;
  if (rotated !== undefined) token.rotated_at = Number(rotated);
  if (replacedBy !== undefined) token.replaced_by = replacedBy;
  if (successor !== undefined) token.successor = successor;
  return token;
}

function device(reply: Reply): DeviceAuthorizationRecord | null {
  const [json, status, interval, polled, user, authTime] = list(reply).map(str);
  if (json === undefined) return null;
  const record = JSON.parse(json) as DeviceAuthorizationRecord;
  record.status = status as DeviceAuthorizationRecord["status"];
  record.interval = Number(interval);
  if (polled !== undefined) record.last_polled_at = Number(polled);
  if (user !== undefined) record.user_id = user;
  if (authTime !== undefined) record.auth_time = Number(authTime);
  return record;
}
