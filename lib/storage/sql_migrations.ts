/**
 * The SQL schema as numbered migrations, applied by {@link migrate} in order and recorded in
 * `oauth_migrations`. Each migration is a list of statements that are safe to run twice (`IF NOT EXISTS`),
 * so that two instances starting at once converge instead of failing:
 *
 * - PostgreSQL runs all pending migrations as one `DO` block that first takes a transaction-scoped advisory
 *   lock: one statement, so it needs no session (works through pgbouncer and HTTP drivers), and a second
 *   instance waits for the first and then finds nothing to do.
 * - SQLite serialises writers itself; the statements run one by one and a failed one is retried after
 *   re-reading the applied versions (another instance may have just applied it).
 *
 * Times are BIGINT milliseconds since the epoch; `resource` is a JSON array; a client is one JSON document
 * (so that fields added to `ClientRecord` later need no migration) plus the columns the store filters on.
 *
 * @module
 */
import type { Dialect, SqlExecutor } from "./sql_types.ts";

/** One numbered schema change: DDL per dialect. */
interface Migration {
  version: number;
  postgres: readonly string[];
  sqlite: readonly string[];
}

const table = (name: string, columns: string): string => `CREATE TABLE IF NOT EXISTS ${name} (${columns})`;
const index = (name: string, on: string): string => `CREATE INDEX IF NOT EXISTS ${name} ON ${on}`;

/** Tables shared by both dialects; `seq` orders codes by issue, `BIGINT` is an INTEGER in SQLite. */
const v1 = (dialect: Dialect): string[] => [
  table("oauth_clients", `client_id TEXT PRIMARY KEY, record TEXT NOT NULL, active SMALLINT NOT NULL,
    origin TEXT, created_at BIGINT NOT NULL, last_used_at BIGINT`),
  table("oauth_codes", `hash TEXT PRIMARY KEY, ${dialect === "postgres" ? "seq BIGINT GENERATED ALWAYS AS IDENTITY," : ""}
    grant_id TEXT NOT NULL, client_id TEXT NOT NULL, user_id TEXT NOT NULL, redirect_uri TEXT NOT NULL,
    scope TEXT NOT NULL, code_challenge TEXT, resource TEXT, expires_at BIGINT NOT NULL, redeemed_at BIGINT`),
  index("oauth_codes_grant", "oauth_codes (grant_id)"),
  index("oauth_codes_owner", "oauth_codes (client_id, user_id)"),
  index("oauth_codes_expiry", "oauth_codes (expires_at)"),
  table("oauth_access_tokens", `hash TEXT PRIMARY KEY, client_id TEXT NOT NULL, user_id TEXT, scope TEXT NOT NULL,
    resource TEXT, grant_id TEXT, expires_at BIGINT NOT NULL`),
  // Partial: client_credentials tokens without a grant, the bulk of a busy server's writes, skip this index.
  index("oauth_access_tokens_grant", "oauth_access_tokens (grant_id) WHERE grant_id IS NOT NULL"),
  index("oauth_access_tokens_expiry", "oauth_access_tokens (expires_at)"),
  table("oauth_refresh_tokens", `hash TEXT PRIMARY KEY, grant_id TEXT NOT NULL, client_id TEXT NOT NULL,
    user_id TEXT, scope TEXT NOT NULL, resource TEXT, expires_at BIGINT NOT NULL, rotated_at BIGINT,
    replaced_by TEXT`),
  index("oauth_refresh_tokens_grant", "oauth_refresh_tokens (grant_id)"),
  index("oauth_refresh_tokens_expiry", "oauth_refresh_tokens (expires_at)"),
  // A grant row outlives its tokens; `revoked_at` makes it a tombstone that refuses later writes.
  table("oauth_grants", `grant_id TEXT PRIMARY KEY, client_id TEXT, user_id TEXT, scope TEXT, resource TEXT,
    created_at BIGINT, last_used_at BIGINT, expires_at BIGINT NOT NULL, revoked_at BIGINT`),
  index("oauth_grants_user", "oauth_grants (user_id)"),
  index("oauth_grants_client", "oauth_grants (client_id)"),
  index("oauth_grants_expiry", "oauth_grants (expires_at)"),
  table("oauth_once", "key TEXT PRIMARY KEY, expires_at BIGINT NOT NULL"),
  index("oauth_once_expiry", "oauth_once (expires_at)"),
  table("oauth_settings", "name TEXT PRIMARY KEY, value TEXT NOT NULL"),
];

/** Optional token columns the SQLite carriers pass on: none in migrations 2 and 3, and those of migration 4. */
interface TokenFields {
  /** Carrier columns for the access (`a`) or refresh (`r`) token, each with a leading comma. */
  carrier(token: "a" | "r"): string;
  /** The token table's columns, with a leading comma. */
  columns: string;
  /** The trigger's values from the carrier row, with a leading comma. */
  values(token: "a" | "r"): string;
}

const NO_FIELDS: TokenFields = { carrier: () => "", columns: "", values: () => "" };

/** `jkt` (RFC 9449 §6), `act` (RFC 8693 §4.1, JSON), `auth_time` (seconds): kept from migration 4 on. */
const TOKEN_FIELDS: TokenFields = {
  carrier: (t) => `, ${t}_jkt TEXT, ${t}_act TEXT, ${t}_auth_time BIGINT`,
  columns: ", jkt, act, auth_time",
  values: (t) => `, NEW.${t}_jkt, NEW.${t}_act, NEW.${t}_auth_time`,
};

/**
 * SQLite only: a carrier table whose trigger stores a grant and its tokens in one statement, so that a SQLite
 * redemption or rotation commits twice (the winning UPDATE, then this) instead of once per row. PostgreSQL
 * does the same in its one `WITH` statement. The row deletes itself.
 */
const v2sqlite = (fields: TokenFields = NO_FIELDS): string[] => [
  table("oauth_issue", `grant_id TEXT, g_client TEXT, g_user TEXT, g_scope TEXT, g_resource TEXT, now BIGINT,
    g_expires BIGINT, a_hash TEXT, a_client TEXT, a_user TEXT, a_scope TEXT, a_resource TEXT, a_grant TEXT,
    a_expires BIGINT${fields.carrier("a")}, r_hash TEXT, r_grant TEXT, r_client TEXT, r_user TEXT, r_scope TEXT, r_resource TEXT,
    r_expires BIGINT${fields.carrier("r")}`),
  `CREATE TRIGGER IF NOT EXISTS oauth_issue_tokens AFTER INSERT ON oauth_issue BEGIN
    INSERT INTO oauth_grants (grant_id, client_id, user_id, scope, resource, created_at, last_used_at, expires_at)
      SELECT NEW.grant_id, NEW.g_client, NEW.g_user, NEW.g_scope, NEW.g_resource, NEW.now, NEW.now, NEW.g_expires
      WHERE NEW.g_client IS NOT NULL
      ON CONFLICT (grant_id) DO UPDATE SET last_used_at = excluded.last_used_at,
        created_at = COALESCE(oauth_grants.created_at, excluded.created_at),
        client_id = COALESCE(oauth_grants.client_id, excluded.client_id),
        user_id = COALESCE(oauth_grants.user_id, excluded.user_id),
        scope = COALESCE(oauth_grants.scope, excluded.scope),
        resource = COALESCE(oauth_grants.resource, excluded.resource),
        expires_at = MAX(oauth_grants.expires_at, excluded.expires_at)
      WHERE oauth_grants.revoked_at IS NULL;
    INSERT INTO oauth_access_tokens (hash, client_id, user_id, scope, resource, grant_id, expires_at${fields.columns})
      SELECT NEW.a_hash, NEW.a_client, NEW.a_user, NEW.a_scope, NEW.a_resource, NEW.a_grant, NEW.a_expires${fields.values("a")}
      WHERE NEW.a_grant IS NULL
        OR NOT EXISTS (SELECT 1 FROM oauth_grants WHERE grant_id = NEW.a_grant AND revoked_at IS NOT NULL);
    INSERT INTO oauth_refresh_tokens (hash, grant_id, client_id, user_id, scope, resource, expires_at${fields.columns})
      SELECT NEW.r_hash, NEW.r_grant, NEW.r_client, NEW.r_user, NEW.r_scope, NEW.r_resource, NEW.r_expires${fields.values("r")}
      WHERE NEW.r_hash IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM oauth_grants WHERE grant_id = NEW.r_grant AND revoked_at IS NOT NULL);
    DELETE FROM oauth_issue WHERE rowid = NEW.rowid;
  END`,
];

/**
 * SQLite only: a code redemption or refresh rotation in ONE statement (one commit instead of two), as
 * PostgreSQL's `WITH` statement does it. Inserting a row into `oauth_redeem` / `oauth_rotate` runs a trigger
 * that stores the grant and tokens only if the code or token `won` (is still redeemable or rotatable), and
 * marks it last; SQLite runs one statement at a time, so exactly one caller sees it winnable. The caller reads
 * back whether its access token was stored. The row deletes itself.
 */
/** A trigger's upsert of the winner's grant (`won` selects its grant columns), unless the grant is revoked. */
const winnerGrant = (won: string): string => `    INSERT INTO oauth_grants (grant_id, client_id, user_id, scope, resource, created_at, last_used_at, expires_at)
      SELECT w.grant_id, w.client_id, w.user_id, w.scope, w.resource, NEW.now, NEW.now, NEW.g_expires FROM (${won}) AS w
      WHERE true
      ON CONFLICT (grant_id) DO UPDATE SET last_used_at = excluded.last_used_at,
        created_at = COALESCE(oauth_grants.created_at, excluded.created_at),
        client_id = COALESCE(oauth_grants.client_id, excluded.client_id),
        user_id = COALESCE(oauth_grants.user_id, excluded.user_id),
        scope = COALESCE(oauth_grants.scope, excluded.scope),
        resource = COALESCE(oauth_grants.resource, excluded.resource),
        expires_at = MAX(oauth_grants.expires_at, excluded.expires_at)
      WHERE oauth_grants.revoked_at IS NULL;`;

/** The carrier table and the winner's inserts of migration 3's triggers, with the token columns of `fields`. */
const exchange = (fields: TokenFields): { carrier(name: string, key: string): string; issue(won: string): string } => {
  const carrier = (name: string, key: string): string =>
    table(name, `${key} TEXT, grace BIGINT, now BIGINT, g_expires BIGINT, a_hash TEXT, a_client TEXT, a_user TEXT,
      a_scope TEXT, a_resource TEXT, a_grant TEXT, a_expires BIGINT${fields.carrier("a")}, r_hash TEXT, r_grant TEXT, r_client TEXT,
      r_user TEXT, r_scope TEXT, r_resource TEXT, r_expires BIGINT${fields.carrier("r")}`);
  const tombstone = (grant: string): string => `NOT EXISTS (SELECT 1 FROM oauth_grants WHERE grant_id = ${grant} AND revoked_at IS NOT NULL)`;
  /** The grant upsert and token inserts of one winner, `won` selecting the winning row (grant columns). */
  const issue = (won: string): string => `
${winnerGrant(won)}
    INSERT INTO oauth_access_tokens (hash, client_id, user_id, scope, resource, grant_id, expires_at${fields.columns})
      SELECT NEW.a_hash, NEW.a_client, NEW.a_user, NEW.a_scope, NEW.a_resource, NEW.a_grant, NEW.a_expires${fields.values("a")}
      WHERE EXISTS (${won}) AND ${tombstone("NEW.a_grant")};
    INSERT INTO oauth_refresh_tokens (hash, grant_id, client_id, user_id, scope, resource, expires_at${fields.columns})
      SELECT NEW.r_hash, NEW.r_grant, NEW.r_client, NEW.r_user, NEW.r_scope, NEW.r_resource, NEW.r_expires${fields.values("r")}
      WHERE NEW.r_hash IS NOT NULL AND EXISTS (${won}) AND ${tombstone("NEW.r_grant")};`;
  return { carrier, issue };
};

// The conditions read only the code or old token row (and, for a grace retry, its first successor), which
// the inserts above leave alone: every step of the trigger sees the same winner.
const REDEEMABLE = "hash = NEW.code AND redeemed_at IS NULL AND expires_at > NEW.now";

const v3sqlite = (fields: TokenFields = NO_FIELDS): string[] => {
  const { carrier, issue } = exchange(fields);
  const redeemable = REDEEMABLE;
  const rotatable = (t: string): string =>
    `${t}.hash = NEW.old AND ${t}.expires_at > NEW.now AND (${t}.rotated_at IS NULL OR (NEW.grace IS NOT NULL
      AND ${t}.rotated_at > NEW.grace AND ${t}.replaced_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM
      oauth_refresh_tokens s WHERE s.hash = ${t}.replaced_by AND s.rotated_at IS NOT NULL)))`;
  return [
    carrier("oauth_redeem", "code"),
    `CREATE TRIGGER IF NOT EXISTS oauth_redeem_code AFTER INSERT ON oauth_redeem BEGIN${
      issue(`SELECT grant_id, client_id, user_id, scope, resource FROM oauth_codes WHERE ${redeemable}`)
    }
    UPDATE oauth_codes SET redeemed_at = NEW.now WHERE ${redeemable};
    DELETE FROM oauth_redeem WHERE rowid = NEW.rowid;
  END`,
    carrier("oauth_rotate", "old"),
    `CREATE TRIGGER IF NOT EXISTS oauth_rotate_refresh AFTER INSERT ON oauth_rotate BEGIN${
      issue(`SELECT t.grant_id, t.client_id, t.user_id, t.scope, t.resource FROM oauth_refresh_tokens t WHERE ${rotatable("t")}`)
    }
    UPDATE oauth_refresh_tokens SET
      rotated_at = CASE WHEN rotated_at IS NULL THEN NEW.now ELSE rotated_at END,
      replaced_by = CASE WHEN rotated_at IS NULL THEN NEW.r_hash ELSE replaced_by END
    WHERE ${rotatable("oauth_refresh_tokens")};
    DELETE FROM oauth_rotate WHERE rowid = NEW.rowid;
  END`,
  ];
};

/**
 * The optional record fields: a code's `dpop_jkt` and `auth_time`, a token's `jkt`, `act` and `auth_time`
 * (nullable columns). A DPoP-bound token that lost its `jkt` would pass as a bearer token. SQLite has no
 * `ADD COLUMN IF NOT EXISTS` ({@link migrate} skips a column that exists), and its carriers are rebuilt with
 * the new columns: dropping a table drops its trigger, and a carrier holds no rows between statements.
 */
const v4 = (dialect: Dialect): string[] => {
  const columns: [string, string, string][] = [
    ["oauth_codes", "dpop_jkt", "TEXT"], ["oauth_codes", "auth_time", "BIGINT"],
    ...["oauth_access_tokens", "oauth_refresh_tokens"].flatMap((t): [string, string, string][] =>
      [[t, "jkt", "TEXT"], [t, "act", "TEXT"], [t, "auth_time", "BIGINT"]]),
  ];
  if (dialect === "postgres") return columns.map(([t, c, type]) => `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS ${c} ${type}`);
  return [
    ...columns.map(([t, c, type]) => `ALTER TABLE ${t} ADD COLUMN ${c} ${type}`),
    ...["oauth_issue", "oauth_redeem", "oauth_rotate"].map((t) => `DROP TABLE IF EXISTS ${t}`),
    ...v2sqlite(TOKEN_FIELDS),
    ...v3sqlite(TOKEN_FIELDS),
  ];
};

/**
 * Device authorizations (RFC 8628), both dialects: both codes only as hashes. `slowed` is what the last poll
 * decided, written by the same UPDATE that moved `last_polled_at`. SQLite's redemption is a carrier row whose
 * trigger stores the grant and tokens only while the record is approved, then marks it redeemed, as with codes.
 */
const DEVICE_REDEEMABLE = "hash = NEW.device AND status = 'approved' AND codes_expire_at > NEW.now AND expires_at > NEW.now";
const v5 = (dialect: Dialect): string[] => {
  const { carrier, issue } = exchange(TOKEN_FIELDS);
  return [
    table("oauth_device", `hash TEXT PRIMARY KEY, user_code TEXT NOT NULL UNIQUE, client_id TEXT NOT NULL,
      scope TEXT NOT NULL, resource TEXT, grant_id TEXT NOT NULL, created_at BIGINT NOT NULL,
      codes_expire_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, interval_ms BIGINT NOT NULL, last_polled_at BIGINT,
      slowed SMALLINT NOT NULL DEFAULT 0, status TEXT NOT NULL, user_id TEXT, auth_time BIGINT`),
    index("oauth_device_expiry", "oauth_device (expires_at)"),
    ...(dialect === "postgres" ? [] : [
      carrier("oauth_device_redeem", "device"),
      `CREATE TRIGGER IF NOT EXISTS oauth_device_redeem_tokens AFTER INSERT ON oauth_device_redeem BEGIN${
        issue(`SELECT grant_id, client_id, user_id, scope, resource FROM oauth_device WHERE ${DEVICE_REDEEMABLE}`)
      }
      UPDATE oauth_device SET status = 'redeemed' WHERE ${DEVICE_REDEEMABLE};
      DELETE FROM oauth_device_redeem WHERE rowid = NEW.rowid;
    END`,
    ]),
  ];
};

/**
 * Migration 6's rotatable token, as migration 3's plus: a retry needs the first rotation's seal. The conditions
 * read only the old token row and its first successor, which the statements before the last one leave alone.
 */
const ROTATABLE = (t: string): string =>
  `${t}.hash = NEW.old AND ${t}.expires_at > NEW.now AND (${t}.rotated_at IS NULL OR (NEW.grace IS NOT NULL
      AND ${t}.rotated_at > NEW.grace AND ${t}.replaced_by IS NOT NULL AND ${t}.successor IS NOT NULL AND NOT EXISTS
      (SELECT 1 FROM oauth_refresh_tokens s WHERE s.hash = ${t}.replaced_by AND s.rotated_at IS NOT NULL)))`;

/**
 * The refresh grace window without a fork (migration 6): a rotation keeps the successor sealed under the rotated
 * token (`successor`), a grace retry gets that seal back and stores no refresh token of its own, and a token
 * records the one it replaced (`replaces`), so that its own rotation drops its predecessor's seal. On SQLite the
 * rotation's carrier takes the seal and its trigger is replaced (with migration 4's fields).
 */
const v6 = (dialect: Dialect): string[] => {
  const column = (name: string): string =>
    `ALTER TABLE oauth_refresh_tokens ADD COLUMN ${dialect === "postgres" ? "IF NOT EXISTS " : ""}${name} TEXT`;
  if (dialect === "postgres") return [column("successor"), column("replaces")];
  const tombstone = (grant: string): string => `NOT EXISTS (SELECT 1 FROM oauth_grants WHERE grant_id = ${grant} AND revoked_at IS NOT NULL)`;
  const rotatable = ROTATABLE;
  const won = `SELECT t.grant_id, t.client_id, t.user_id, t.scope, t.resource FROM oauth_refresh_tokens t WHERE ${rotatable("t")}`;
  const first = "EXISTS (SELECT 1 FROM oauth_refresh_tokens WHERE hash = NEW.old AND rotated_at IS NULL)";
  return [
    column("successor"),
    column("replaces"),
    "ALTER TABLE oauth_rotate ADD COLUMN sealed TEXT",
    "DROP TRIGGER IF EXISTS oauth_rotate_refresh",
    `CREATE TRIGGER IF NOT EXISTS oauth_rotate_refresh AFTER INSERT ON oauth_rotate BEGIN
${winnerGrant(won)}
    INSERT INTO oauth_access_tokens (hash, client_id, user_id, scope, resource, grant_id, expires_at${TOKEN_FIELDS.columns})
      SELECT NEW.a_hash, NEW.a_client, NEW.a_user, NEW.a_scope, NEW.a_resource, NEW.a_grant, NEW.a_expires${TOKEN_FIELDS.values("a")}
      WHERE EXISTS (${won}) AND ${tombstone("NEW.a_grant")};
    INSERT INTO oauth_refresh_tokens (hash, grant_id, client_id, user_id, scope, resource, expires_at${TOKEN_FIELDS.columns}, replaces)
      SELECT NEW.r_hash, NEW.r_grant, NEW.r_client, NEW.r_user, NEW.r_scope, NEW.r_resource, NEW.r_expires${TOKEN_FIELDS.values("r")}, NEW.old
      WHERE NEW.r_hash IS NOT NULL AND EXISTS (${won}) AND ${first} AND ${tombstone("NEW.r_grant")};
    UPDATE oauth_refresh_tokens SET successor = NULL
    WHERE hash = (SELECT replaces FROM oauth_refresh_tokens WHERE hash = NEW.old AND rotated_at IS NULL) AND EXISTS (${won});
    UPDATE oauth_refresh_tokens SET
      rotated_at = CASE WHEN rotated_at IS NULL THEN NEW.now ELSE rotated_at END,
      replaced_by = CASE WHEN rotated_at IS NULL THEN NEW.r_hash ELSE replaced_by END,
      successor = CASE WHEN rotated_at IS NULL THEN NEW.sealed ELSE successor END
    WHERE ${rotatable("oauth_refresh_tokens")};
    DELETE FROM oauth_rotate WHERE rowid = NEW.rowid;
  END`,
  ];
};

/**
 * SQLite only: a loser's carrier row is dropped before it is inserted (migration 7), so that the exchange is one
 * `INSERT … RETURNING` that yields a row for the winner alone, instead of an INSERT and a read of who won. Each
 * BEFORE trigger applies exactly its AFTER trigger's winning condition (migrations 3, 5 and 6) and its tombstone
 * check of the access token's grant: a redemption whose grant is revoked stores nothing and returns nothing.
 * Code that still reads back after its INSERT (a rolling upgrade) finds no token of a loser's, as before.
 */
const v7sqlite = (): string[] => {
  const revoked = "EXISTS (SELECT 1 FROM oauth_grants WHERE grant_id = NEW.a_grant AND revoked_at IS NOT NULL)";
  const before = (name: string, carrier: string, won: string): string =>
    `CREATE TRIGGER IF NOT EXISTS ${name} BEFORE INSERT ON ${carrier} BEGIN
    SELECT RAISE(IGNORE) WHERE NOT EXISTS (${won}) OR ${revoked};
  END`;
  return [
    before("oauth_redeem_won", "oauth_redeem", `SELECT 1 FROM oauth_codes WHERE ${REDEEMABLE}`),
    before("oauth_rotate_won", "oauth_rotate", `SELECT 1 FROM oauth_refresh_tokens t WHERE ${ROTATABLE("t")}`),
    before("oauth_device_redeem_won", "oauth_device_redeem", `SELECT 1 FROM oauth_device WHERE ${DEVICE_REDEEMABLE}`),
  ];
};

/** Every migration, in order. Append; never edit one that has shipped. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, postgres: v1("postgres"), sqlite: v1("sqlite") },
  { version: 2, postgres: [], sqlite: v2sqlite() },
  { version: 3, postgres: [], sqlite: v3sqlite() },
  { version: 4, postgres: v4("postgres"), sqlite: v4("sqlite") },
  { version: 5, postgres: v5("postgres"), sqlite: v5("sqlite") },
  { version: 6, postgres: v6("postgres"), sqlite: v6("sqlite") },
  { version: 7, postgres: [], sqlite: v7sqlite() },
];

/** The latest schema version this code knows. */
export const SCHEMA_VERSION: number = MIGRATIONS[MIGRATIONS.length - 1]!.version;

const VERSIONS = table("oauth_migrations", "version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL");

/** An arbitrary constant: the advisory lock that serialises migrations on PostgreSQL. */
const LOCK_KEY = 0x0a_07_20_26;

/** Applies every pending migration; returns the schema version. Idempotent, and safe to run concurrently. */
export async function migrate(executor: SqlExecutor, now: number): Promise<number> {
  if (executor.dialect === "postgres") {
    await executor.query(postgresBlock(now), []);
    return SCHEMA_VERSION;
  }
  let lastError: unknown;
  for (let attempt = 0; attempt < 8; attempt++) {
    try {
      await executor.query(VERSIONS, []);
      const rows = await executor.query("SELECT version FROM oauth_migrations", []);
      const applied = new Set(rows.map((row) => Number(row.version)));
      for (const migration of MIGRATIONS) {
        if (applied.has(migration.version)) continue;
        for (const statement of migration.sqlite) await runSqlite(executor, statement);
        await executor.query("INSERT OR IGNORE INTO oauth_migrations (version, applied_at) VALUES (?1, ?2)", [migration.version, now]);
      }
      return SCHEMA_VERSION;
    } catch (error) {
      // Another instance holds the write lock or raced us to a statement: read the versions again.
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 80));
    }
  }
  throw lastError;
}

/** A SQLite statement; adding a column that exists (another instance added it) is done already. */
async function runSqlite(executor: SqlExecutor, statement: string): Promise<void> {
  try {
    await executor.query(statement, []);
  } catch (error) {
    if (!(statement.startsWith("ALTER TABLE") && /duplicate column/i.test(String(error)))) throw error;
  }
}

/** One `DO` block: lock, then each migration that is not recorded yet. Dollar-quoted with a unique tag. */
function postgresBlock(now: number): string {
  const steps = MIGRATIONS.map((m) =>
    `IF NOT EXISTS (SELECT 1 FROM oauth_migrations WHERE version = ${m.version}) THEN\n` +
    m.postgres.map((s) => `    ${s};`).join("\n") +
    `\n    INSERT INTO oauth_migrations (version, applied_at) VALUES (${m.version}, ${Math.trunc(now)});\n  END IF;`
  ).join("\n  ");
  return `DO $oauth_migrate$ BEGIN\n  PERFORM pg_advisory_xact_lock(${LOCK_KEY});\n  ${VERSIONS};\n  ${steps}\nEND $oauth_migrate$`;
}
