/**
 * The SQL store: PostgreSQL or SQLite behind an injected executor, so that the library names no driver.
 *
 * Any driver fits in one line (see the README, "Storage"):
 * ```ts
 * sqlStorage({ dialect: "postgres", query: (t, p, n) => pool.query({ text: t, values: p, name: n }).then((r) => r.rows) }) // pg
 * sqlStorage({ dialect: "postgres", query: (t, p) => sql.unsafe(t, p, { prepare: true }) })     // postgres.js
 * sqlStorage({ dialect: "postgres", query: (t, p) => sql.unsafe(t, p) })                        // Bun.sql
 * sqlStorage({ dialect: "sqlite", query: (t, p) => db.query(t).all(...p) })                    // bun:sqlite (cached)
 * sqlStorage({ dialect: "sqlite", query: (t, p) => db.prepare(t).bind(...p).all().then((r) => r.results) }) // D1
 * ```
 * node:sqlite keeps no statement cache of its own: give it one (`sqliteExecutor` in `lib/storage/sqlite.ts`).
 * Every statement reaches the executor with a stable `name` derived from its text, so that PostgreSQL parses
 * and plans it once per connection (pg's named statements) rather than on every call.
 *
 * Atomicity without interactive transactions (they do not survive pgbouncer, HTTP drivers or D1):
 * - The verb that decides a race is one statement. PostgreSQL redeems a code, checks the grant, and stores the
 *   tokens in one `WITH won AS (UPDATE … RETURNING …) INSERT … SELECT … FROM won`. SQLite has no data-modifying
 *   `WITH`, so the same statement is an INSERT into a carrier table whose trigger stores the grant and tokens
 *   only while the code or token is still winnable, then marks it (migration 3); SQLite runs one statement at a
 *   time, so exactly one caller wins, in one commit.
 * - Revoking a grant first turns its row into a tombstone (`revoked_at`), in one statement; every later write
 *   for that grant is conditioned on the tombstone's absence, and every token lookup checks it too, so a
 *   token written by a racing request never works. Deleting the members follows as clean-up.
 *
 * Only hashes of secrets reach the database, as with every store.
 *
 * @module
 */
import { OAuthError } from "../errors.ts";
import { sha256 } from "../sha256.ts";
import { migrate } from "./sql_migrations.ts";
import { LAST_USED_GRANULARITY, LastUsedWrites } from "./last_used.ts";
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

import type { Dialect, SqlExecutor, SqlRow } from "./sql_types.ts";
export type { Dialect, SqlExecutor, SqlRow };

/** Options of {@link sqlStorage}. */
export interface SqlStorageOptions extends SqlExecutor {
  /** Milliseconds since the epoch, for the few verbs that take no `now`. Default `Date.now`. */
  clock?: () => number;
}

/**
 * Creates a store on a SQL database. The schema is created (or upgraded) before the first call; call
 * {@link SqlStorage.migrate} at start-up to fail early instead.
 *
 * @example
 * ```ts
 * import { DatabaseSync } from "node:sqlite";
 * const db = new DatabaseSync("oauth.db");
 * db.exec("PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL");
 * const storage = sqlStorage({ dialect: "sqlite", query: (t, p) => db.prepare(t).all(...p) });
 * ```
 */
export function sqlStorage(options: SqlStorageOptions): SqlStorage {
  return new SqlStorage(options);
}

const CODE_COLUMNS =
  "hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, resource, expires_at, redeemed_at, dpop_jkt, auth_time";
// jkt, act and auth_time: migration 4. A DPoP-bound token that lost its jkt would pass as a bearer token.
const ACCESS_COLUMNS = "hash, client_id, user_id, scope, resource, grant_id, expires_at, jkt, act, auth_time";
const REFRESH_COLUMNS = "hash, grant_id, client_id, user_id, scope, resource, expires_at, rotated_at, replaced_by, jkt, act, auth_time";
const DEVICE_COLUMNS = "hash, user_code, client_id, scope, resource, grant_id, created_at, codes_expire_at, expires_at, " +
  "interval_ms, last_polled_at, slowed, status, user_id, auth_time";
const GRANT_COLUMNS = "grant_id, client_id, user_id, scope, resource, created_at, last_used_at, expires_at";
/** A SQLite exchange's carrier columns after its key, in the order `exchangeSqlite` gives the values (migration 4). */
const CARRIER_COLUMNS = "grace, now, g_expires, a_hash, a_client, a_user, a_scope, a_resource, a_grant, a_expires, a_jkt, " +
  "a_act, a_auth_time, r_hash, r_grant, r_client, r_user, r_scope, r_resource, r_expires, r_jkt, r_act, r_auth_time";
/** A SQLite redemption or rotation (see `exchangeSqlite`): its one statement, the same string on every call. */
interface SqliteExchange {
  readonly text: string;
  /** The carrier takes the sealed successor last (the rotation's, migration 6). */
  readonly sealed: boolean;
}
/**
 * The INSERT into `carrier` that returns the row of `from` it spent (`columns`, as one JSON object), written once:
 * a text built per call costs the request thread its building and, in the statement cache, a comparison in full.
 */
const sqliteExchange = (carrier: string, key: string, from: string, columns: string, sealed = false): SqliteExchange => {
  const names = [key, ...CARRIER_COLUMNS.split(", "), ...(sealed ? ["sealed"] : [])];
  const fields = columns.split(", ").map((column) => `'${column}', ${column}`).join(", ");
  return {
    text: `INSERT INTO ${carrier} (${names.join(", ")}) VALUES (${names.map((_, i) => `?${i + 1}`).join(", ")})
       RETURNING (SELECT json_object(${fields}) FROM ${from} WHERE hash = ${carrier}.${key}) AS won`,
    sealed,
  };
};
const REDEEM = sqliteExchange("oauth_redeem", "code", "oauth_codes", CODE_COLUMNS);
const ROTATE = sqliteExchange("oauth_rotate", "old", "oauth_refresh_tokens", `${REFRESH_COLUMNS}, successor`, true);
const DEVICE_REDEEM = sqliteExchange("oauth_device_redeem", "device", "oauth_device", DEVICE_COLUMNS);
/** A token whose grant is revoked is dead, whatever raced the revocation. */
const grantLive = (alias: string): string =>
  `NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.grant_id = ${alias}.grant_id AND g.revoked_at IS NOT NULL)`;
/**
 * A point read of `columns`, as one JSON array (see {@link SqlStorage.selectOne}), written once per dialect: the
 * hot reads' texts are then the same string on every call, which the statement caches find at once (this store's
 * by length and identity, an executor's by the hash the string keeps), where a text built per call is read whole.
 * Both together took a SQLite `findAccessToken` from 12.7 to 10.5 µs.
 */
const pointRead = (columns: string, rest: string): PointRead => ({
  columns,
  postgres: `SELECT json_build_array(${columns}) AS j ${rest}`,
  sqlite: `SELECT json_array(${columns}) AS j ${rest}`,
});
interface PointRead {
  readonly columns: string;
  readonly postgres: string;
  readonly sqlite: string;
}
const FIND_CODE = pointRead(CODE_COLUMNS, "FROM oauth_codes WHERE hash = $1 AND expires_at > $2");
const FIND_ACCESS = pointRead(ACCESS_COLUMNS,
  `FROM oauth_access_tokens t WHERE t.hash = $1 AND t.expires_at > $2 AND (t.grant_id IS NULL OR ${grantLive("t")})`);
const FIND_REFRESH = pointRead(REFRESH_COLUMNS,
  `FROM oauth_refresh_tokens t WHERE t.hash = $1 AND t.expires_at > $2 AND ${grantLive("t")}`);
/** What a PostgreSQL redemption and rotation return: `won`'s columns as one JSON array, for the reason `selectOne` gives. */
const wonArray = (columns: string): string => `json_build_array(${columns.split(", ").map((c) => `won.${c}`).join(", ")})`;
const WON_CODE = wonArray(CODE_COLUMNS);
const ROTATED_COLUMNS = `${REFRESH_COLUMNS}, successor, replaces`;
const WON_REFRESH = wonArray(ROTATED_COLUMNS);
/** Rows deleted per statement by purgeExpired, so that a purge never holds the database for long. */
const PURGE_BATCH = 1000;
/** Statement texts remembered with their name (the store writes a few dozen distinct ones). */
const MAX_STATEMENTS = 512;

/** A statement as the executor gets it: the dialect's placeholders, and its name; `source`, as the store wrote it. */
interface Prepared {
  source: string;
  text: string;
  name: string;
}

/** Positional parameters: `$n::type` for PostgreSQL (whose select lists need types), `?n` for SQLite. */
class Params {
  readonly values: unknown[] = [];
  private readonly pg: boolean;
  constructor(dialect: Dialect) {
    this.pg = dialect === "postgres";
  }
  text(value: string | undefined | null): string {
    this.values.push(value ?? null);
    return this.pg ? `$${this.values.length}::text` : `?${this.values.length}`;
  }
  int(value: number | undefined | null): string {
    this.values.push(value ?? null);
    return this.pg ? `$${this.values.length}::bigint` : `?${this.values.length}`;
  }
  json(value: unknown[] | Record<string, unknown> | undefined): string {
    return this.text(jsonOrNull(value));
  }
}

const num = (value: unknown): number => Number(value);

const columnNames = new Map<string, readonly string[]>();
/** The names in a column list such as {@link ACCESS_COLUMNS}, split once per list. */
function namesOf(columns: string): readonly string[] {
  let names = columnNames.get(columns);
  if (names === undefined) columnNames.set(columns, names = columns.split(", "));
  return names;
}
/** A row from the JSON array of {@link SqlStorage.selectOne} (parsed by the driver, or still text). */
function rowOf(columns: string, value: unknown): SqlRow {
  const names = namesOf(columns);
  const values = (typeof value === "string" ? JSON.parse(value) : value) as unknown[];
  const row: Record<string, unknown> = {};
  for (let i = 0; i < names.length; i++) row[names[i]!] = values[i];
  return row as SqlRow;
}
const jsonArray = (value: unknown): string[] => JSON.parse(String(value)) as string[];
const jsonObject = (value: unknown): Record<string, unknown> => JSON.parse(String(value)) as Record<string, unknown>;

/**
 * A record from a row: its required fields, then each optional column that holds a value, mapped. An empty
 * column leaves the member absent (not `undefined`, not `null`), as the contract asks.
 */
function fromRow<T extends object>(record: T, row: SqlRow, optionals: { readonly [K in keyof T]?: (value: unknown) => T[K] }): T {
  for (const name of Object.keys(optionals) as (keyof T & string)[]) {
    const value = row[name];
    if (value !== null && value !== undefined) record[name] = optionals[name]!(value);
  }
  return record;
}

function codeRecord(row: SqlRow): CodeRecord {
  return fromRow<CodeRecord>({
    hash: String(row.hash),
    grant_id: String(row.grant_id),
    client_id: String(row.client_id),
    user_id: String(row.user_id),
    redirect_uri: String(row.redirect_uri),
    scope: String(row.scope),
    expires_at: num(row.expires_at),
  }, row, { code_challenge: String, resource: jsonArray, redeemed_at: num, dpop_jkt: String, auth_time: num });
}

function accessRecord(row: SqlRow): AccessTokenRecord {
  return fromRow<AccessTokenRecord>({
    hash: String(row.hash),
    client_id: String(row.client_id),
    scope: String(row.scope),
    expires_at: num(row.expires_at),
  }, row, { user_id: String, resource: jsonArray, grant_id: String, jkt: String, act: jsonObject, auth_time: num });
}

function refreshRecord(row: SqlRow): RefreshTokenRecord {
  return fromRow<RefreshTokenRecord>({
    hash: String(row.hash),
    grant_id: String(row.grant_id),
    client_id: String(row.client_id),
    scope: String(row.scope),
    expires_at: num(row.expires_at),
  }, row, {
    user_id: String, resource: jsonArray, rotated_at: num, replaced_by: String, jkt: String, act: jsonObject, auth_time: num,
  });
}

function grantRecord(row: SqlRow): GrantRecord {
  return fromRow<GrantRecord>({
    grant_id: String(row.grant_id),
    client_id: String(row.client_id),
    scope: String(row.scope),
    created_at: num(row.created_at),
    last_used_at: num(row.last_used_at),
    expires_at: num(row.expires_at),
  }, row, { user_id: String, resource: jsonArray });
}

function deviceRecord(row: SqlRow): DeviceAuthorizationRecord {
  return fromRow<DeviceAuthorizationRecord>({
    hash: String(row.hash),
    user_code_hash: String(row.user_code),
    client_id: String(row.client_id),
    scope: String(row.scope),
    grant_id: String(row.grant_id),
    created_at: num(row.created_at),
    codes_expire_at: num(row.codes_expire_at),
    expires_at: num(row.expires_at),
    interval: num(row.interval_ms),
    status: String(row.status) as DeviceAuthorizationRecord["status"],
  }, row, { resource: jsonArray, last_polled_at: num, user_id: String, auth_time: num });
}

function clientRecord(row: SqlRow): ClientRecord {
  const client = JSON.parse(String(row.record)) as ClientRecord;
  client.active = num(row.active) === 1;
  return fromRow(client, row, { last_used_at: num });
}

/** The optional token fields every store keeps (jkt, act, auth_time), as parameters in column order. */
const carried = (p: Params, token: AccessTokenRecord | RefreshTokenRecord | undefined): string[] =>
  [p.text(token?.jkt), p.json(token?.act), p.int(token?.auth_time)];

const json = (value: unknown[] | undefined): string | undefined => (value === undefined ? undefined : JSON.stringify(value));
const jsonOrNull = (value: unknown[] | Record<string, unknown> | undefined): string | null =>
  value === undefined ? null : JSON.stringify(value);

/** A one-row source of grant columns, for {@link SqlStorage.upsertGrant}. */
function grantSource(p: Params, grant: string, client: string, user: string | undefined, scope: string, resource: string | undefined): string {
  return `SELECT ${p.text(grant)} AS grant_id, ${p.text(client)} AS client_id, ${p.text(user)} AS user_id, ` +
    `${p.text(scope)} AS scope, ${p.text(resource)} AS resource`;
}

/** The grant a SQLite issue creates or refreshes (resource as stored: JSON text). */
interface IssueGrant {
  id: string;
  client: string;
  user: string | undefined;
  scope: string;
  resource: string | undefined;
  now: number;
  expires: number;
}

/** The latest expiry among issued tokens: a grant lives as long as its longest-lived token. */
const latestExpiry = (tokens: IssuedTokens): number => Math.max(tokens.access.expires_at, tokens.refresh?.expires_at ?? 0);

/** The {@link Storage} on a SQL database; see the module documentation. */
export class SqlStorage implements Storage {
  private readonly executor: SqlExecutor;
  private readonly dialect: Dialect;
  private readonly clock: () => number;
  private ready: Promise<unknown> | undefined;
  private migrated = false;
  /** When this instance last wrote each client's `last_used_at`, to keep that write off the hot path. */
  private readonly lastUsed = new LastUsedWrites();
  /**
   * Each statement text written so far, by its length, in the dialect's placeholders, with its name. Not a map by
   * text: most texts are built anew by every call, and a lookup by text hashes every character of the new string
   * (a redemption's 2 KB cost some 4.5 µs a call), where a lookup by length compares it to one or two texts at most.
   */
  private readonly statements = new Map<number, Prepared[]>();
  private statementCount = 0;

  /** Prefer {@link sqlStorage}. */
  constructor(options: SqlStorageOptions) {
    if (options.dialect !== "postgres" && options.dialect !== "sqlite") {
      throw new TypeError(`Cannot create SQL storage: "dialect" must be "postgres" or "sqlite", not "${String(options.dialect)}"`);
    }
    this.executor = { dialect: options.dialect, query: options.query };
    this.dialect = options.dialect;
    this.clock = options.clock ?? Date.now;
  }

  /** Creates or upgrades the schema (idempotent; safe when instances start together). Returns its version. */
  async migrate(): Promise<number> {
    try {
      return await migrate(this.executor, this.clock());
    } catch (error) {
      throw unavailable(error);
    }
  }

  /** Runs one statement once the schema exists; a driver error becomes 503 `temporarily_unavailable`. */
  private async run(text: string, params: unknown[]): Promise<readonly SqlRow[]> {
    if (!this.migrated) {
      if (this.ready === undefined) {
        const ready = this.migrate();
        this.ready = ready;
        // A failed migration (database down at start) is retried by the next call.
        ready.catch(() => {
          if (this.ready === ready) this.ready = undefined;
        });
      }
      await this.ready;
      this.migrated = true; // from here on no call waits a turn for a schema that exists
    }
    const statement = this.statement(text);
    try {
      return await this.executor.query(statement.text, params, statement.name);
    } catch (error) {
      throw unavailable(error);
    }
  }

  /**
   * The first row of a {@link PointRead}. Its columns come back as one JSON array: a driver describes and
   * decodes each field of every result (node:sqlite builds an object per row, pg parses each field by type, a
   * SQLite thread clones each row), and for a short read that per-field work is most of the client's cost. On
   * SQLite a point read of a token's ten columns takes 8.4 µs as columns, 5.1 as one array.
   */
  private async selectOne(read: PointRead, params: unknown[]): Promise<SqlRow | undefined> {
    const rows = await this.run(read[this.dialect], params);
    return rows[0] === undefined ? undefined : rowOf(read.columns, rows[0].j);
  }

  /** A statement's text for the executor and its name, remembered for the next call with the same text. */
  private statement(text: string): Prepared {
    const same = this.statements.get(text.length);
    if (same !== undefined) for (const statement of same) if (statement.source === text) return statement;
    const statement: Prepared = {
      source: text,
      // Hand-written statements say `$1`; SQLite's numbered placeholder is `?1`.
      text: this.dialect === "sqlite" ? text.replace(/\$(\d+)/g, "?$1") : text,
      name: `oauth_${sha256(text).slice(0, 16)}`,
    };
    if (this.statementCount < MAX_STATEMENTS) {
      this.statementCount++;
      if (same === undefined) this.statements.set(text.length, [statement]);
      else same.push(statement);
    }
    return statement;
  }

  /** A fresh parameter list in this store's dialect. */
  private params(): Params {
    return new Params(this.dialect);
  }

  /** The two-argument maximum: GREATEST on PostgreSQL, MAX on SQLite. */
  private get greatest(): string {
    return this.dialect === "postgres" ? "GREATEST" : "MAX";
  }

  // -------------------------------------------------------------------------------------------------------
  // Clients

  /** A client by id, or null. */
  async getClient(clientId: string): Promise<ClientRecord | null> {
    const rows = await this.run("SELECT record, active, last_used_at FROM oauth_clients WHERE client_id = $1", [clientId]);
    return rows[0] ? clientRecord(rows[0]) : null;
  }

  /** Adds or replaces a client (one JSON document, plus the columns the store filters on). */
  async saveClient(client: ClientRecord): Promise<void> {
    const { active, last_used_at, ...rest } = client;
    const p = this.params();
    await this.run(
      `INSERT INTO oauth_clients (client_id, record, active, origin, created_at, last_used_at)
       VALUES (${p.text(client.client_id)}, ${p.text(JSON.stringify(rest))}, ${p.int(active ? 1 : 0)}, ${p.text(client.origin)},
         ${p.int(client.created_at)}, ${p.int(last_used_at)})
       ON CONFLICT (client_id) DO UPDATE SET record = excluded.record, active = excluded.active,
         origin = excluded.origin, created_at = excluded.created_at, last_used_at = excluded.last_used_at`,
      p.values,
    );
    this.lastUsed.forget(client.client_id);
  }

  /** Pauses or resumes a client; the updated record, or null. */
  async setClientActive(clientId: string, active: boolean): Promise<ClientRecord | null> {
    const p = this.params();
    const rows = await this.run(
      `UPDATE oauth_clients SET active = ${p.int(active ? 1 : 0)} WHERE client_id = ${p.text(clientId)}
       RETURNING record, active, last_used_at`,
      p.values,
    );
    return rows[0] ? clientRecord(rows[0]) : null;
  }

  /** Every client. */
  async listClients(): Promise<ClientRecord[]> {
    const rows = await this.run("SELECT record, active, last_used_at FROM oauth_clients", []);
    return rows.map(clientRecord);
  }

  /** Revokes every grant of the client, deletes what was issued to it, then the client itself. */
  async deleteClient(clientId: string): Promise<boolean> {
    await this.revokeClientGrants(clientId);
    const p = this.params();
    const rows = await this.run(`DELETE FROM oauth_clients WHERE client_id = ${p.text(clientId)} RETURNING client_id`, p.values);
    this.lastUsed.forget(clientId);
    return rows.length > 0;
  }

  /** Revokes every grant of a client and deletes its codes and tokens; how many live grants were revoked. */
  async revokeClientGrants(clientId: string): Promise<number> {
    const now = this.clock();
    const p = this.params();
    // The tombstones first: from here on, no token of these grants works and none can be written.
    const revoked = await this.run(
      `UPDATE oauth_grants SET revoked_at = ${p.int(now)} WHERE client_id = ${p.text(clientId)} AND revoked_at IS NULL
       RETURNING created_at, expires_at`,
      p.values,
    );
    for (const table of ["oauth_codes", "oauth_access_tokens", "oauth_refresh_tokens"]) {
      await this.run(`DELETE FROM ${table} WHERE client_id = $1`, [clientId]);
    }
    return revoked.filter((row) => row.created_at !== null && num(row.expires_at) > now).length;
  }

  /** Sets the client's `last_used_at`, at most once a minute per client and instance (types.ts allows lag). */
  private async touchClient(clientId: string, now: number): Promise<void> {
    if (!this.lastUsed.due(clientId, now)) return;
    const p = this.params();
    await this.run(
      `UPDATE oauth_clients SET last_used_at = ${p.int(now)} WHERE client_id = ${p.text(clientId)}
       AND (last_used_at IS NULL OR last_used_at <= ${p.int(now - LAST_USED_GRANULARITY)})`,
      p.values,
    );
  }

  // -------------------------------------------------------------------------------------------------------
  // Codes

  /** Stores a code unless its grant is revoked; with `limit`, drops the oldest unredeemed codes of its consent. */
  async saveCode(code: CodeRecord, limit?: number): Promise<void> {
    const p = this.params();
    const hash = p.text(code.hash);
    const grant = p.text(code.grant_id);
    await this.run(
      `INSERT INTO oauth_codes (${CODE_COLUMNS})
       SELECT ${hash}, ${grant}, ${p.text(code.client_id)}, ${p.text(code.user_id)}, ${p.text(code.redirect_uri)},
         ${p.text(code.scope)}, ${p.text(code.code_challenge)}, ${p.json(code.resource)}, ${p.int(code.expires_at)},
         ${p.int(code.redeemed_at)}, ${p.text(code.dpop_jkt)}, ${p.int(code.auth_time)}
       WHERE NOT EXISTS (SELECT 1 FROM oauth_grants WHERE grant_id = ${grant} AND revoked_at IS NOT NULL)`,
      p.values,
    );
    if (limit === undefined) return;
    // Caps the codes one consent can mint: keep this one and the latest-expiring others, `limit` in all.
    const q = this.params();
    const client = q.text(code.client_id);
    const user = q.text(code.user_id);
    const own = q.text(code.hash);
    await this.run(
      `DELETE FROM oauth_codes WHERE client_id = ${client} AND user_id = ${user} AND redeemed_at IS NULL
       AND hash NOT IN (SELECT hash FROM oauth_codes WHERE client_id = ${client} AND user_id = ${user}
         AND redeemed_at IS NULL ORDER BY CASE WHEN hash = ${own} THEN 0 ELSE 1 END, expires_at DESC
         LIMIT ${q.int(Math.max(0, Math.trunc(limit)))})`,
      q.values,
    );
  }

  /** A live code by hash, redeemed or not. */
  async findCode(hash: string, now: number): Promise<CodeRecord | null> {
    const row = await this.selectOne(FIND_CODE, [hash, now]);
    return row ? codeRecord(row) : null;
  }

  /** Redeems a code for exactly one caller and stores that caller's tokens (see the module documentation). */
  async redeemCode(hash: string, tokens: IssuedTokens, now: number): Promise<CodeRecord | null> {
    const row = this.dialect === "postgres"
      ? await this.redeemPostgres(hash, tokens, now)
      : await this.redeemSqlite(hash, tokens, now);
    if (!row) return null;
    const code = codeRecord(row);
    delete code.redeemed_at; // the record as it was before this call
    await this.touchClient(code.client_id, now);
    return code;
  }

  /** One statement: mark the code, upsert the live grant, store the tokens, only for the one winner. */
  private async redeemPostgres(hash: string, tokens: IssuedTokens, now: number): Promise<SqlRow | undefined> {
    const p = this.params();
    const at = p.int(now);
    const rows = await this.run(
      `WITH won AS (
         UPDATE oauth_codes SET redeemed_at = ${at}
         WHERE hash = ${p.text(hash)} AND redeemed_at IS NULL AND expires_at > ${at}
         RETURNING ${CODE_COLUMNS}
       ), g AS (
         ${this.upsertGrant("SELECT grant_id, client_id, user_id, scope, resource FROM won", at, p.int(latestExpiry(tokens)))}
       ), a AS (${this.insertAccess(tokens, p, "g")}
       )${tokens.refresh ? `, r AS (${this.insertRefresh(tokens.refresh, p, "g")})` : ""}
       SELECT ${WON_CODE} AS j FROM won, g`,
      p.values,
    );
    return rows[0] && rowOf(CODE_COLUMNS, rows[0].j);
  }

  /** One statement (the `oauth_redeem` trigger, migrations 3 and 4) marks the code and stores the winner's tokens. */
  private async redeemSqlite(hash: string, tokens: IssuedTokens, now: number): Promise<SqlRow | undefined> {
    return await this.exchangeSqlite(REDEEM, hash, null, tokens, now);
  }

  /**
   * SQLite's redemption or rotation: one INSERT into a carrier table whose trigger (migrations 3 and 4) stores the
   * grant and tokens only for the winner and then marks the code or token. A loser's row is dropped before it is
   * inserted (migration 7), so RETURNING yields a row for the winner alone: the code or token as it was before
   * this call (RETURNING is computed before the AFTER trigger runs), as one JSON object.
   */
  private async exchangeSqlite(
    exchange: SqliteExchange, key: string, grace: number | null, tokens: IssuedTokens, now: number,
  ): Promise<SqlRow | undefined> {
    const { access: a, refresh: r } = tokens;
    // The key, then CARRIER_COLUMNS in order.
    const values: unknown[] = [
      key, grace, now, latestExpiry(tokens),
      a.hash, a.client_id, a.user_id ?? null, a.scope, jsonOrNull(a.resource), a.grant_id ?? null, a.expires_at,
      a.jkt ?? null, jsonOrNull(a.act), a.auth_time ?? null,
      r?.hash ?? null, r?.grant_id ?? null, r?.client_id ?? null, r?.user_id ?? null, r?.scope ?? null,
      jsonOrNull(r?.resource), r?.expires_at ?? null, r?.jkt ?? null, jsonOrNull(r?.act), r?.auth_time ?? null,
    ];
    if (exchange.sealed) values.push(tokens.sealed ?? null);
    const rows = await this.run(exchange.text, values);
    const won = rows[0]?.won;
    return won === null || won === undefined ? undefined : jsonObject(won) as SqlRow;
  }

  /**
   * Creates or refreshes a grant from `source` (grant_id, client_id, user_id, scope, resource), unless it is
   * revoked: the conflict update then matches nothing, so RETURNING yields no row and the caller stores nothing.
   */
  private upsertGrant(source: string, now: string, expiresAt: string): string {
    return `INSERT INTO oauth_grants (${GRANT_COLUMNS})
      SELECT s.grant_id, s.client_id, s.user_id, s.scope, s.resource, ${now}, ${now}, ${expiresAt} FROM (${source}) AS s
      WHERE true
      ON CONFLICT (grant_id) DO UPDATE SET last_used_at = excluded.last_used_at,
        created_at = COALESCE(oauth_grants.created_at, excluded.created_at),
        client_id = COALESCE(oauth_grants.client_id, excluded.client_id),
        user_id = COALESCE(oauth_grants.user_id, excluded.user_id),
        scope = COALESCE(oauth_grants.scope, excluded.scope),
        resource = COALESCE(oauth_grants.resource, excluded.resource),
        expires_at = ${this.greatest}(oauth_grants.expires_at, excluded.expires_at)
      WHERE oauth_grants.revoked_at IS NULL
      RETURNING grant_id`;
  }

  /** `INSERT … SELECT` of an access token, once per row of `from` (a CTE, or nothing). */
  private insertAccess(tokens: IssuedTokens, p: Params, from?: string): string {
    const a = tokens.access;
    return `INSERT INTO oauth_access_tokens (${ACCESS_COLUMNS})
      SELECT ${p.text(a.hash)}, ${p.text(a.client_id)}, ${p.text(a.user_id)}, ${p.text(a.scope)}, ${p.json(a.resource)},
        ${p.text(a.grant_id)}, ${p.int(a.expires_at)}, ${carried(p, a).join(", ")}${from ? ` FROM ${from}` : ""}`;
  }

  /** `INSERT … SELECT` of a refresh token, once per row of `from` (a CTE, or nothing). */
  private insertRefresh(r: RefreshTokenRecord, p: Params, from?: string, replaces?: string): string {
    return `INSERT INTO oauth_refresh_tokens (${REFRESH_COLUMNS}${replaces ? ", replaces" : ""})
      SELECT ${p.text(r.hash)}, ${p.text(r.grant_id)}, ${p.text(r.client_id)}, ${p.text(r.user_id)}, ${p.text(r.scope)},
        ${p.json(r.resource)}, ${p.int(r.expires_at)}, NULL, NULL, ${carried(p, r).join(", ")}${replaces ? `, ${replaces}` : ""}${from ? ` FROM ${from}` : ""}`;
  }

  /**
   * SQLite: stores a grant (created, or refreshed unless revoked) and tokens in one statement, through the
   * `oauth_issue` trigger (migrations 2 and 4); tokens of a revoked grant are dropped.
   */
  private async issueSqlite(tokens: IssuedTokens, grant: IssueGrant): Promise<void> {
    const { access: a, refresh: r } = tokens;
    const p = this.params();
    const values = [
      p.text(grant.id), p.text(grant.client), p.text(grant.user), p.text(grant.scope), p.text(grant.resource),
      p.int(grant.now), p.int(grant.expires),
      p.text(a.hash), p.text(a.client_id), p.text(a.user_id), p.text(a.scope), p.json(a.resource), p.text(a.grant_id),
      p.int(a.expires_at), ...carried(p, a),
      p.text(r?.hash), p.text(r?.grant_id), p.text(r?.client_id), p.text(r?.user_id), p.text(r?.scope), p.json(r?.resource),
      p.int(r?.expires_at), ...carried(p, r),
    ];
    await this.run(
      `INSERT INTO oauth_issue (grant_id, g_client, g_user, g_scope, g_resource, now, g_expires, a_hash, a_client,
         a_user, a_scope, a_resource, a_grant, a_expires, a_jkt, a_act, a_auth_time, r_hash, r_grant, r_client, r_user,
         r_scope, r_resource, r_expires, r_jkt, r_act, r_auth_time) VALUES (${values.join(", ")})`,
      p.values,
    );
  }

  // -------------------------------------------------------------------------------------------------------
  // Tokens

  /** Stores client_credentials tokens (and the grant of their refresh token), unless the grant is revoked. */
  async saveTokens(tokens: IssuedTokens, now: number): Promise<void> {
    const refresh = tokens.refresh;
    if (!refresh) {
      // An access token alone (client_credentials) is one INSERT on both dialects: on SQLite, the carrier row of
      // oauth_issue would add a page to every commit for nothing (no grant to create).
      const p = this.params();
      const grant = tokens.access.grant_id;
      const sql = this.insertAccess(tokens, p);
      await this.run(
        grant === undefined
          ? sql
          : `${sql} WHERE NOT EXISTS (SELECT 1 FROM oauth_grants WHERE grant_id = ${p.text(grant)} AND revoked_at IS NOT NULL)`,
        p.values,
      );
    } else if (this.dialect === "postgres") {
      const p = this.params();
      const source = grantSource(p, refresh.grant_id, refresh.client_id, refresh.user_id, refresh.scope, json(refresh.resource));
      const at = p.int(now);
      await this.run(
        `WITH g AS (${this.upsertGrant(source, at, p.int(latestExpiry(tokens)))}),
         a AS (${this.insertAccess(tokens, p, "g")}),
         r AS (${this.insertRefresh(refresh, p, "g")})
         SELECT 1`,
        p.values,
      );
    } else {
      const grant: IssueGrant = {
        id: refresh.grant_id, client: refresh.client_id, user: refresh.user_id, scope: refresh.scope,
        resource: json(refresh.resource), now, expires: latestExpiry(tokens),
      };
      await this.issueSqlite(tokens, grant);
    }
    await this.touchClient(tokens.access.client_id, now);
  }

  /** A live access token of a live grant, or null. */
  async findAccessToken(hash: string, now: number): Promise<AccessTokenRecord | null> {
    const row = await this.selectOne(FIND_ACCESS, [hash, now]);
    return row ? accessRecord(row) : null;
  }

  /** A live refresh token of a live grant, rotated or not, or null. */
  async findRefreshToken(hash: string, now: number): Promise<RefreshTokenRecord | null> {
    const row = await this.selectOne(FIND_REFRESH, [hash, now]);
    return row ? refreshRecord(row) : null;
  }

  /** Rotates a refresh token for exactly one caller, or for retries inside the grace window. */
  async rotateRefreshToken(hash: string, next: IssuedTokens, now: number, graceMs = 0): Promise<RefreshTokenRecord | null> {
    const successor = next.refresh?.hash;
    const row = this.dialect === "postgres"
      ? await this.rotatePostgres(hash, next, now, graceMs)
      : await this.exchangeSqlite(ROTATE, hash, graceMs > 0 ? now - graceMs : null, next, now);
    if (!row) return null;
    const record = refreshRecord(row);
    // The record as it was before this call. PostgreSQL's RETURNING shows the row after the update, where a first
    // rotation is the one that wrote (now, successor); SQLite's shows it before (not rotated yet). A grace retry
    // leaves the row as it is, on both: it gets the first rotation's seal.
    if (record.rotated_at === now && (record.replaced_by ?? null) === (successor ?? null)) {
      delete record.rotated_at;
      delete record.replaced_by;
    } else if (row.successor !== null && row.successor !== undefined) {
      record.successor = String(row.successor);
    }
    await this.touchClient(record.client_id, now);
    return record;
  }

  /**
   * One statement: mark the old token, upsert the live grant, store the tokens, only for the one winner (or a
   * grace retry); the old token's columns as one JSON array, after the update.
   */
  private async rotatePostgres(hash: string, next: IssuedTokens, now: number, graceMs: number): Promise<SqlRow | undefined> {
    const p = this.params();
    const at = p.int(now);
    const old = p.text(hash);
    const replacedBy = p.text(next.refresh?.hash);
    const grace = p.int(graceMs > 0 ? now - graceMs : null);
    // First rotation: mark it, record the successor and keep its seal. Grace retry: leave the row as it is (a
    // no-op SET), and only if the first rotation kept a seal, which the retry gets back instead of a new chain.
    // The retry test asks that no rotated successor exists, rather than that an unrotated one does: a retry
    // racing the first rotation (two processes of one client) may not see the successor row yet, since
    // PostgreSQL rechecks a waiting UPDATE against the new row but its subquery against the old snapshot, and
    // SQLite inserts the successor in a later statement. The two tests differ only there, for a live token of a
    // live grant (the successor expires with its predecessor, and dies only with the grant).
    const update = `UPDATE oauth_refresh_tokens SET
        rotated_at = CASE WHEN rotated_at IS NULL THEN ${at} ELSE rotated_at END,
        replaced_by = CASE WHEN rotated_at IS NULL THEN ${replacedBy} ELSE replaced_by END,
        successor = CASE WHEN rotated_at IS NULL THEN ${p.text(next.sealed)} ELSE successor END
      WHERE hash = ${old} AND expires_at > ${at} AND (rotated_at IS NULL OR (${grace} IS NOT NULL
        AND rotated_at > ${grace} AND replaced_by IS NOT NULL AND successor IS NOT NULL AND NOT EXISTS (SELECT 1
          FROM oauth_refresh_tokens s WHERE s.hash = oauth_refresh_tokens.replaced_by AND s.rotated_at IS NOT NULL)))
      RETURNING ${REFRESH_COLUMNS}, successor, replaces`;
    // `first`: this caller's rotation is the first (a retry's row names another successor). Only the first
    // stores a refresh token, and drops the seal its predecessor kept; a predecessor with no seal (no grace
    // window) is left alone, since an UPDATE that sets what is there still writes a row version.
    const rows = await this.run(
      `WITH won AS (${update}), first AS (SELECT replaces FROM won WHERE replaced_by IS NOT DISTINCT FROM ${replacedBy}), g AS (
         ${this.upsertGrant("SELECT grant_id, client_id, user_id, scope, resource FROM won", at, p.int(latestExpiry(next)))}
       ), a AS (${this.insertAccess(next, p, "g")})${next.refresh ? `, r AS (${this.insertRefresh(next.refresh, p, "g, first", old)})` : ""},
       c AS (UPDATE oauth_refresh_tokens SET successor = NULL WHERE hash = (SELECT replaces FROM first) AND successor IS NOT NULL)
       SELECT ${WON_REFRESH} AS j FROM won, g`,
      p.values,
    );
    return rows[0] && rowOf(ROTATED_COLUMNS, rows[0].j);
  }

  /** Revokes a grant: a tombstone first, then its codes and tokens are deleted. */
  async revokeGrant(grantId: string): Promise<void> {
    const now = this.clock();
    const p = this.params();
    // The tombstone first (one statement): it kills every member at once and refuses later writes. It lives
    // as long as the grant would have, so that a token written by a racing request stays dead until it expires.
    // A grant with no row yet (its code not redeemed) gets a tombstone that outlives its codes, in case the
    // clean-up below does not run.
    const id = p.text(grantId);
    await this.run(
      `INSERT INTO oauth_grants (grant_id, expires_at, revoked_at) VALUES (${id}, ${this.greatest}(${p.int(now + LAST_USED_GRANULARITY)},
         COALESCE((SELECT max(expires_at) FROM oauth_codes WHERE grant_id = ${id}), 0)), ${p.int(now)})
       ON CONFLICT (grant_id) DO UPDATE SET revoked_at = excluded.revoked_at,
         expires_at = ${this.greatest}(oauth_grants.expires_at, excluded.expires_at)`,
      p.values,
    );
    for (const table of ["oauth_codes", "oauth_access_tokens", "oauth_refresh_tokens"]) {
      await this.run(`DELETE FROM ${table} WHERE grant_id = $1`, [grantId]);
    }
  }

  /** Deletes one access token. */
  async revokeAccessToken(hash: string): Promise<void> {
    await this.run("DELETE FROM oauth_access_tokens WHERE hash = $1", [hash]);
  }

  /** The live grants of a user. */
  async listGrants(userId: string, now: number): Promise<GrantRecord[]> {
    const p = this.params();
    const rows = await this.run(
      `SELECT ${GRANT_COLUMNS} FROM oauth_grants WHERE user_id = ${p.text(userId)} AND revoked_at IS NULL
       AND created_at IS NOT NULL AND expires_at > ${p.int(now)}`,
      p.values,
    );
    return rows.map(grantRecord);
  }

  // -------------------------------------------------------------------------------------------------------
  // Marks, settings, expiry

  /** Marks a key until `expiresAt`; true for exactly one caller while the mark lives. */
  async markOnce(key: string, expiresAt: number, now: number): Promise<boolean> {
    const p = this.params();
    // The conflict update wins only over an expired mark; a live one makes RETURNING yield nothing.
    const rows = await this.run(
      `INSERT INTO oauth_once (key, expires_at) VALUES (${p.text(key)}, ${p.int(expiresAt)})
       ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE oauth_once.expires_at <= ${p.int(now)}
       RETURNING key`,
      p.values,
    );
    return rows.length > 0;
  }

  /** Whether a key's mark is live. */
  async isMarked(key: string, now: number): Promise<boolean> {
    const p = this.params();
    const rows = await this.run(`SELECT 1 AS marked FROM oauth_once WHERE key = ${p.text(key)} AND expires_at > ${p.int(now)}`, p.values);
    return rows.length > 0;
  }

  /** Stores a setting if absent; the stored value. */
  async initSetting(name: string, value: string): Promise<string> {
    const p = this.params();
    await this.run(
      `INSERT INTO oauth_settings (name, value) VALUES (${p.text(name)}, ${p.text(value)}) ON CONFLICT (name) DO NOTHING`,
      p.values,
    );
    const rows = await this.run("SELECT value FROM oauth_settings WHERE name = $1", [name]);
    if (!rows[0]) throw unavailable(new Error(`Setting "${name}" vanished after it was stored`));
    return String(rows[0].value);
  }

  /** The stored value of a setting, or null. */
  async getSetting(name: string): Promise<string | null> {
    const rows = await this.run("SELECT value FROM oauth_settings WHERE name = $1", [name]);
    return rows[0] ? String(rows[0].value) : null;
  }

  /**
   * Compare-and-set in one statement. PostgreSQL re-checks a waiting UPDATE's condition against the row the
   * winner wrote, and SQLite runs one writer at a time, so one caller per `expected` sees its row change.
   */
  async swapSetting(name: string, expected: string | null, next: string): Promise<boolean> {
    const rows = expected === null
      ? await this.run("INSERT INTO oauth_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING name", [name, next])
      : await this.run("UPDATE oauth_settings SET value = $3 WHERE name = $1 AND value = $2 RETURNING name", [name, expected, next]);
    return rows.length > 0;
  }

  // -------------------------------------------------------------------------------------------------------
  // Device authorizations (RFC 8628): each transition is one statement.

  /** Stores a pending device authorization unless a live one holds its user code. */
  async saveDeviceAuthorization(record: DeviceAuthorizationRecord, now: number): Promise<boolean> {
    // An expired holder of the user code (not purged yet) gives way; a live one makes the INSERT do nothing.
    await this.run("DELETE FROM oauth_device WHERE user_code = $1 AND expires_at <= $2", [record.user_code_hash, now]);
    const p = this.params();
    const values = [
      p.text(record.hash), p.text(record.user_code_hash), p.text(record.client_id), p.text(record.scope),
      p.json(record.resource), p.text(record.grant_id), p.int(record.created_at), p.int(record.codes_expire_at),
      p.int(record.expires_at), p.int(record.interval),
    ];
    const rows = await this.run(
      `INSERT INTO oauth_device (hash, user_code, client_id, scope, resource, grant_id, created_at, codes_expire_at,
         expires_at, interval_ms, status) VALUES (${values.join(", ")}, 'pending')
       ON CONFLICT DO NOTHING RETURNING hash`,
      p.values,
    );
    return rows.length > 0;
  }

  /** A live device authorization by its user code hash, or null. */
  async findDeviceAuthorization(userCodeHash: string, now: number): Promise<DeviceAuthorizationRecord | null> {
    const p = this.params();
    const rows = await this.run(
      `SELECT ${DEVICE_COLUMNS} FROM oauth_device WHERE user_code = ${p.text(userCodeHash)} AND expires_at > ${p.int(now)}`,
      p.values,
    );
    return rows[0] ? deviceRecord(rows[0]) : null;
  }

  /** pending → approved | denied, once, in one UPDATE. */
  async decideDeviceAuthorization(userCodeHash: string, decision: DeviceDecision, now: number): Promise<DeviceAuthorizationRecord | null> {
    const p = this.params();
    const at = p.int(now);
    const rows = await this.run(
      `UPDATE oauth_device SET status = ${p.text(decision.approved ? "approved" : "denied")},
         user_id = ${p.text(decision.user_id)}, auth_time = ${p.int(decision.auth_time)}
       WHERE user_code = ${p.text(userCodeHash)} AND status = 'pending' AND codes_expire_at > ${at} AND expires_at > ${at}
       RETURNING ${DEVICE_COLUMNS}`,
      p.values,
    );
    return rows[0] ? deviceRecord(rows[0]) : null;
  }

  /**
   * One UPDATE moves `last_polled_at` and decides `slow_down` from the row it replaces (every SET expression
   * reads the old row; PostgreSQL re-evaluates them on the newest row when two polls collide).
   */
  async pollDeviceAuthorization(hash: string, now: number): Promise<DevicePoll | null> {
    const p = this.params();
    const at = p.int(now);
    const early = `last_polled_at IS NOT NULL AND ${at} < last_polled_at + interval_ms`;
    const rows = await this.run(
      `UPDATE oauth_device SET interval_ms = CASE WHEN ${early} THEN interval_ms + 5000 ELSE interval_ms END,
         slowed = CASE WHEN ${early} THEN 1 ELSE 0 END, last_polled_at = ${at}
       WHERE hash = ${p.text(hash)} AND expires_at > ${at}
       RETURNING ${DEVICE_COLUMNS}`,
      p.values,
    );
    return rows[0] ? { record: deviceRecord(rows[0]), slow_down: num(rows[0].slowed) === 1 } : null;
  }

  /** approved → redeemed once, with the winner's grant and tokens, in one statement. */
  async redeemDeviceAuthorization(hash: string, tokens: IssuedTokens, now: number): Promise<DeviceAuthorizationRecord | null> {
    let row: SqlRow | undefined;
    if (this.dialect === "postgres") {
      const p = this.params();
      const at = p.int(now);
      const rows = await this.run(
        `WITH won AS (
           UPDATE oauth_device SET status = 'redeemed'
           WHERE hash = ${p.text(hash)} AND status = 'approved' AND codes_expire_at > ${at} AND expires_at > ${at}
           RETURNING ${DEVICE_COLUMNS}
         ), g AS (
           ${this.upsertGrant("SELECT grant_id, client_id, user_id, scope, resource FROM won", at, p.int(latestExpiry(tokens)))}
         ), a AS (${this.insertAccess(tokens, p, "g")}
         )${tokens.refresh ? `, r AS (${this.insertRefresh(tokens.refresh, p, "g")})` : ""}
         SELECT won.* FROM won, g`,
        p.values,
      );
      row = rows[0];
    } else {
      row = await this.exchangeSqlite(DEVICE_REDEEM, hash, null, tokens, now);
    }
    if (!row) return null;
    const device = deviceRecord(row);
    device.status = "approved"; // the record as it was before this call
    await this.touchClient(device.client_id, now);
    return device;
  }

  /** Deletes expired records in bounded batches; how many. */
  async purgeExpired(now: number): Promise<number> {
    let total = 0;
    const targets: [string, string][] = [
      ["oauth_codes", "hash"], ["oauth_access_tokens", "hash"], ["oauth_refresh_tokens", "hash"],
      ["oauth_once", "key"], ["oauth_device", "hash"], ["oauth_grants", "grant_id"],
    ];
    for (const [table, key] of targets) {
      for (;;) {
        // Bounded batches, so that a long backlog never holds a lock for long.
        const rows = await this.run(
          `DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE expires_at <= $1 LIMIT ${PURGE_BATCH})
           RETURNING 1 AS gone`,
          [now],
        );
        total += rows.length;
        if (rows.length < PURGE_BATCH) break;
      }
    }
    return total;
  }
}

/** A driver error as the server reports it: 503 `temporarily_unavailable`, with the cause for `onError`. */
function unavailable(cause: unknown): OAuthError {
  if (cause instanceof OAuthError) return cause;
  return new OAuthError("temporarily_unavailable", {
    description: "The service is temporarily unavailable",
    headers: { "retry-after": "1" },
    cause,
  });
}
