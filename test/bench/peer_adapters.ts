/**
 * Minimal, correct storage for the two peers of the durable-store rows, on the same PostgreSQL and Redis (and
 * drivers, pools and named statements) as this project: a model for @node-oauth/oauth2-server and an adapter
 * for oidc-provider, each written from its library's documented interface for the bench. Single-use holds: a
 * code or refresh token is removed by one `DELETE … RETURNING` (PostgreSQL) or one `DEL` (Redis), which only one
 * caller sees succeed. Tokens are kept as the libraries' own examples keep them (by value); client secrets as
 * SHA-256, compared in constant time.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Redis } from "ioredis";
import type { SqlExecutor } from "../../mod.ts";
import { BACKEND_SECRET, REDIRECT } from "./fixture.ts";

const sha = (value: string) => createHash("sha256").update(value).digest("hex");

/** A client as the peers' stores keep it. */
export interface PeerClient {
  id: string;
  /** SHA-256 of the secret, hex; null for a public client. */
  secretHash: string | null;
  redirectUris: string[];
  grants: string[];
  scopes: string[];
}

/** The two bench clients, as every server of the durable rows registers them. */
export const PEER_CLIENTS: PeerClient[] = [
  { id: "bench-backend", secretHash: sha(BACKEND_SECRET), redirectUris: [], grants: ["client_credentials"], scopes: ["read"] },
  { id: "bench-spa", secretHash: null, redirectUris: [REDIRECT], grants: ["authorization_code", "refresh_token"], scopes: ["read"] },
];

/** Whether a presented secret matches (a public client presents none). */
export function secretMatches(client: PeerClient, secret: string | null | undefined): boolean {
  if (secret === null || secret === undefined) return true;
  if (client.secretHash === null) return false;
  return timingSafeEqual(Buffer.from(sha(secret)), Buffer.from(client.secretHash));
}

// ---------------------------------------------------------------------------------------------------------
// @node-oauth/oauth2-server: the storage half of its model

/** A stored access or refresh token, or a code, as the model hands them to the library. */
export interface NoToken {
  value: string;
  expiresAt: number;
  scope: string;
  clientId: string;
  userId: string;
  redirectUri?: string;
  challenge?: string;
}

/** What the model needs of a store: one method per model call that touches data. */
export interface NoStore {
  client(id: string): Promise<PeerClient | undefined>;
  saveToken(access: NoToken, refresh: NoToken | undefined): Promise<void>;
  access(value: string): Promise<NoToken | undefined>;
  refresh(value: string): Promise<NoToken | undefined>;
  /** Deletes a refresh token; true for the one caller that deleted it. */
  revokeRefresh(value: string): Promise<boolean>;
  saveCode(code: NoToken): Promise<void>;
  code(value: string): Promise<NoToken | undefined>;
  /** Deletes a code; true for the one caller that deleted it. */
  revokeCode(value: string): Promise<boolean>;
}

/** In memory, as the library's own examples do it. */
export function noMemory(): NoStore {
  const access = new Map<string, NoToken>();
  const refresh = new Map<string, NoToken>();
  const codes = new Map<string, NoToken>();
  return {
    client: (id) => Promise.resolve(PEER_CLIENTS.find((c) => c.id === id)),
    saveToken: (a, r) => (access.set(a.value, a), r && refresh.set(r.value, r), Promise.resolve()),
    access: (v) => Promise.resolve(access.get(v)),
    refresh: (v) => Promise.resolve(refresh.get(v)),
    revokeRefresh: (v) => Promise.resolve(refresh.delete(v)),
    saveCode: (c) => (codes.set(c.value, c), Promise.resolve()),
    code: (v) => Promise.resolve(codes.get(v)),
    revokeCode: (v) => Promise.resolve(codes.delete(v)),
  };
}

const NO_SCHEMA = [
  "CREATE TABLE IF NOT EXISTS no_clients (id TEXT PRIMARY KEY, record TEXT NOT NULL)",
  "CREATE TABLE IF NOT EXISTS no_access (value TEXT PRIMARY KEY, expires_at BIGINT NOT NULL, scope TEXT, client_id TEXT, user_id TEXT)",
  "CREATE TABLE IF NOT EXISTS no_refresh (value TEXT PRIMARY KEY, expires_at BIGINT NOT NULL, scope TEXT, client_id TEXT, user_id TEXT)",
  "CREATE TABLE IF NOT EXISTS no_codes (value TEXT PRIMARY KEY, expires_at BIGINT NOT NULL, scope TEXT, client_id TEXT, user_id TEXT, redirect_uri TEXT, challenge TEXT)",
];

const noRow = (row: Record<string, unknown> | undefined): NoToken | undefined =>
  row === undefined ? undefined : {
    value: String(row.value),
    expiresAt: Number(row.expires_at),
    scope: String(row.scope),
    clientId: String(row.client_id),
    userId: String(row.user_id),
    ...(row.redirect_uri ? { redirectUri: String(row.redirect_uri) } : {}),
    ...(row.challenge ? { challenge: String(row.challenge) } : {}),
  };

/** On PostgreSQL: one table per kind, one statement per model call, each a named statement. */
export async function noPostgres(query: SqlExecutor["query"]): Promise<NoStore> {
  for (const statement of NO_SCHEMA) await query(statement, []);
  for (const c of PEER_CLIENTS) {
    await query("INSERT INTO no_clients (id, record) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET record = excluded.record", [c.id, JSON.stringify(c)]);
  }
  const one = async (text: string, name: string, params: unknown[]) => (await query(text, params, name))[0];
  return {
    client: async (id) => {
      const row = await one("SELECT record FROM no_clients WHERE id = $1", "no_client", [id]);
      return row ? JSON.parse(String(row.record)) as PeerClient : undefined;
    },
    saveToken: async (a, r) => {
      // Both tokens in one statement.
      await query(
        `WITH a AS (INSERT INTO no_access (value, expires_at, scope, client_id, user_id) VALUES ($1, $2, $3, $4, $5))
         INSERT INTO no_refresh (value, expires_at, scope, client_id, user_id) SELECT $6, $7, $3, $4, $5 WHERE $6::text IS NOT NULL`,
        [a.value, a.expiresAt, a.scope, a.clientId, a.userId, r?.value ?? null, r?.expiresAt ?? null],
        "no_save_token",
      );
    },
    access: async (v) => noRow(await one("SELECT * FROM no_access WHERE value = $1", "no_access", [v])),
    refresh: async (v) => noRow(await one("SELECT * FROM no_refresh WHERE value = $1", "no_refresh", [v])),
    revokeRefresh: async (v) => (await query("DELETE FROM no_refresh WHERE value = $1 RETURNING value", [v], "no_revoke_refresh")).length > 0,
    saveCode: async (c) => {
      await query(
        "INSERT INTO no_codes (value, expires_at, scope, client_id, user_id, redirect_uri, challenge) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        [c.value, c.expiresAt, c.scope, c.clientId, c.userId, c.redirectUri ?? null, c.challenge ?? null],
        "no_save_code",
      );
    },
    code: async (v) => noRow(await one("SELECT * FROM no_codes WHERE value = $1", "no_code", [v])),
    revokeCode: async (v) => (await query("DELETE FROM no_codes WHERE value = $1 RETURNING value", [v], "no_revoke_code")).length > 0,
  };
}

/** On Redis: one JSON string per record with a TTL; both tokens in one MULTI…EXEC. */
export async function noRedis(redis: Redis, count: () => void): Promise<NoStore> {
  for (const c of PEER_CLIENTS) await redis.set(`no:client:${c.id}`, JSON.stringify(c));
  const get = async (key: string) => {
    count();
    const json = await redis.get(key);
    return json === null ? undefined : JSON.parse(json) as NoToken;
  };
  const ttl = (t: NoToken) => Math.max(1, t.expiresAt - Date.now());
  const del = async (key: string) => (count(), (await redis.del(key)) === 1);
  return {
    client: async (id) => {
      count();
      const json = await redis.get(`no:client:${id}`);
      return json === null ? undefined : JSON.parse(json) as PeerClient;
    },
    saveToken: async (a, r) => {
      count();
      const multi = redis.multi().set(`no:at:${a.value}`, JSON.stringify(a), "PX", ttl(a));
      if (r) multi.set(`no:rt:${r.value}`, JSON.stringify(r), "PX", ttl(r));
      await multi.exec();
    },
    access: (v) => get(`no:at:${v}`),
    refresh: (v) => get(`no:rt:${v}`),
    revokeRefresh: (v) => del(`no:rt:${v}`),
    saveCode: async (c) => void (count(), await redis.set(`no:code:${c.value}`, JSON.stringify(c), "PX", ttl(c))),
    code: (v) => get(`no:code:${v}`),
    revokeCode: (v) => del(`no:code:${v}`),
  };
}

// ---------------------------------------------------------------------------------------------------------
// oidc-provider: its adapter interface (upsert, find, consume, destroy, revokeByGrantId, findByUid, findByUserCode)

/** The adapter interface of oidc-provider, as its documentation gives it. */
export interface OpAdapter {
  upsert(id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void>;
  find(id: string): Promise<Record<string, unknown> | undefined>;
  findByUid(uid: string): Promise<Record<string, unknown> | undefined>;
  findByUserCode(userCode: string): Promise<Record<string, unknown> | undefined>;
  consume(id: string): Promise<void>;
  destroy(id: string): Promise<void>;
  revokeByGrantId(grantId: string): Promise<void>;
}

/**
 * In memory: Maps with expiry. oidc-provider's own memory adapter is a development aid that keeps at most 1,000
 * records (an LRU), which drops codes of a pool larger than that.
 */
export function opMemory(): (model: string) => OpAdapter {
  const records = new Map<string, { payload: Record<string, unknown>; expires: number; consumed?: number }>();
  const uids = new Map<string, string>();
  const userCodes = new Map<string, string>();
  const grants = new Map<string, string[]>();
  const live = (key: string | undefined) => {
    const record = key === undefined ? undefined : records.get(key);
    if (!record) return undefined;
    if (record.expires <= Date.now()) return void records.delete(key!);
    return record.consumed === undefined ? record.payload : { ...record.payload, consumed: record.consumed };
  };
  return (model) => {
    const key = (id: string) => `${model}:${id}`;
    return {
      upsert: (id, payload, expiresIn) => {
        records.set(key(id), { payload, expires: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
        if (typeof payload.grantId === "string") grants.set(payload.grantId, [...(grants.get(payload.grantId) ?? []), key(id)]);
        if (typeof payload.uid === "string") uids.set(payload.uid, key(id));
        if (typeof payload.userCode === "string") userCodes.set(payload.userCode, key(id));
        return Promise.resolve();
      },
      find: (id) => Promise.resolve(live(key(id))),
      findByUid: (uid) => Promise.resolve(live(uids.get(uid))),
      findByUserCode: (code) => Promise.resolve(live(userCodes.get(code))),
      consume: (id) => {
        const record = records.get(key(id));
        if (record) record.consumed = Math.floor(Date.now() / 1000);
        return Promise.resolve();
      },
      destroy: (id) => Promise.resolve(void records.delete(key(id))),
      revokeByGrantId: (grantId) => {
        for (const k of grants.get(grantId) ?? []) records.delete(k);
        grants.delete(grantId);
        return Promise.resolve();
      },
    };
  };
}

const OP_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS op_models (model TEXT NOT NULL, id TEXT NOT NULL, payload JSONB NOT NULL, grant_id TEXT, uid TEXT,
    user_code TEXT, expires_at TIMESTAMPTZ, consumed_at TIMESTAMPTZ, PRIMARY KEY (model, id))`,
  "CREATE INDEX IF NOT EXISTS op_models_grant ON op_models (grant_id) WHERE grant_id IS NOT NULL",
  "CREATE INDEX IF NOT EXISTS op_models_uid ON op_models (uid) WHERE uid IS NOT NULL",
];

/** On PostgreSQL: one table of every model, one statement per adapter call, each a named statement. */
export async function opPostgres(query: SqlExecutor["query"]): Promise<(model: string) => OpAdapter> {
  for (const statement of OP_SCHEMA) await query(statement, []);
  const payload = (row: Record<string, unknown> | undefined) => {
    if (row === undefined) return undefined;
    const value = (typeof row.payload === "string" ? JSON.parse(row.payload) : row.payload) as Record<string, unknown>;
    return row.consumed ? { ...value, consumed: Number(row.consumed) } : value;
  };
  const select = "SELECT payload, extract(epoch FROM consumed_at)::bigint AS consumed FROM op_models";
  const live = "(expires_at IS NULL OR expires_at > now())";
  return (model) => ({
    upsert: async (id, value, expiresIn) => {
      await query(
        `INSERT INTO op_models (model, id, payload, grant_id, uid, user_code, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7::int IS NULL THEN NULL ELSE now() + make_interval(secs => $7::int) END)
         ON CONFLICT (model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid,
           user_code = excluded.user_code, expires_at = excluded.expires_at`,
        [model, id, JSON.stringify(value), value.grantId ?? null, value.uid ?? null, value.userCode ?? null, expiresIn ?? null],
        "op_upsert",
      );
    },
    find: async (id) => payload((await query(`${select} WHERE model = $1 AND id = $2 AND ${live}`, [model, id], "op_find"))[0]),
    findByUid: async (uid) => payload((await query(`${select} WHERE model = $1 AND uid = $2 AND ${live}`, [model, uid], "op_find_uid"))[0]),
    findByUserCode: async (code) =>
      payload((await query(`${select} WHERE model = $1 AND user_code = $2 AND ${live}`, [model, code], "op_find_user_code"))[0]),
    consume: async (id) => void await query("UPDATE op_models SET consumed_at = now() WHERE model = $1 AND id = $2", [model, id], "op_consume"),
    destroy: async (id) => void await query("DELETE FROM op_models WHERE model = $1 AND id = $2", [model, id], "op_destroy"),
    revokeByGrantId: async (grantId) => void await query("DELETE FROM op_models WHERE grant_id = $1", [grantId], "op_revoke_grant"),
  });
}

/**
 * On Redis: one hash per record (its JSON payload, and `consumed`), a list per grant of its records' keys, and
 * every write of one call in one MULTI…EXEC.
 */
export function opRedis(redis: Redis, count: () => void): (model: string) => OpAdapter {
  const parse = (hash: Record<string, string>) => {
    if (!hash.payload) return undefined;
    const value = JSON.parse(hash.payload) as Record<string, unknown>;
    return hash.consumed ? { ...value, consumed: Number(hash.consumed) } : value;
  };
  const byIndex = async (key: string) => {
    count();
    const id = await redis.get(key);
    if (id === null) return undefined;
    count();
    return parse(await redis.hgetall(id));
  };
  return (model) => {
    const key = (id: string) => `op:${model}:${id}`;
    return {
      upsert: async (id, value, expiresIn) => {
        count();
        const multi = redis.multi().del(key(id)).hset(key(id), "payload", JSON.stringify(value));
        if (expiresIn) multi.expire(key(id), expiresIn);
        if (typeof value.grantId === "string") {
          const grant = `op:grant:${value.grantId}`;
          multi.rpush(grant, key(id));
          // The grant's list lives as long as its longest-lived record: set when absent, else only lengthened.
          if (expiresIn) multi.expire(grant, expiresIn, "NX").expire(grant, expiresIn, "GT");
        }
        for (const [field, index] of [["uid", "uid"], ["userCode", "user_code"]] as const) {
          const indexed = value[field];
          if (typeof indexed !== "string") continue;
          if (expiresIn) multi.set(`op:${index}:${indexed}`, key(id), "EX", expiresIn);
          else multi.set(`op:${index}:${indexed}`, key(id));
        }
        await multi.exec();
      },
      find: async (id) => (count(), parse(await redis.hgetall(key(id)))),
      findByUid: (uid) => byIndex(`op:uid:${uid}`),
      findByUserCode: (code) => byIndex(`op:user_code:${code}`),
      consume: async (id) => void (count(), await redis.hset(key(id), "consumed", Math.floor(Date.now() / 1000))),
      destroy: async (id) => void (count(), await redis.del(key(id))),
      revokeByGrantId: async (grantId) => {
        count();
        const grant = `op:grant:${grantId}`;
        const keys = await redis.lrange(grant, 0, -1);
        count();
        await redis.multi().del(...keys, grant).exec();
      },
    };
  };
}
