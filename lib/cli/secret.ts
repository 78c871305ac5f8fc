/**
 * Where `serve` gets the secret that signs login sessions and CSRF tokens. Never from the store: a copy of the
 * store file (a backup, a readable SQLite file) must not be enough to forge a session. In order: `--secret`,
 * the config file's `secret`, `OAUTH2_FETCH_SERVER_SECRET`; else a key file beside the config file, created
 * once with mode 0600; else, for the memory store, one generated for this process.
 *
 * @module
 */

/** The environment variable that may carry the signing secret instead of `--secret` or the config's `secret`. */
export const SECRET_ENV = "OAUTH2_FETCH_SERVER_SECRET";

/** What resolving the secret needs from the runtime. */
export interface SecretRuntime {
  /** Reads a text file; rejects with `code: "ENOENT"` or `name: "NotFound"` when there is none. */
  readText(path: string): Promise<string>;
  /**
   * Creates a file readable and writable by its owner only (mode 0600) holding `text`, unless it exists:
   * resolves true when it created it, false when it was there already (another instance won the race).
   */
  createPrivateFile?(path: string, text: string): Promise<boolean>;
}

/** The secret and a line saying where it came from (printed at start; never the secret itself). */
export interface ResolvedSecret {
  secret: string;
  source: string;
}

const MIN_LENGTH = 32;
/** Stores that several instances share: each must sign with the same secret, so it must be configured. */
const SHARED_STORES = /^(?:postgres|postgresql|redis|rediss):/i;

/** The key file's path: `app.json` → `app.secret` beside it; without a config file, in the working directory. */
export function keyFilePath(configPath: string | undefined): string {
  if (configPath === undefined) return "oauth2-fetch-server.secret";
  return `${/\.json$/i.test(configPath) ? configPath.slice(0, -5) : configPath}.secret`;
}

const missing = (error: unknown): boolean => {
  const { code, name } = error as { code?: unknown; name?: unknown };
  return code === "ENOENT" || name === "NotFound";
};

/**
 * The secret the operator configured, or null when there is none; throws an `Error` with one line for the
 * operator when it is too short, or missing for a store that several instances share. Needs nothing opened.
 */
export function configuredSecret(
  given: { flag?: string | undefined; config?: string | undefined; env?: string | undefined },
  store: string,
  configPath: string | undefined,
): ResolvedSecret | null {
  const configured: [string | undefined, string][] = [
    [given.flag, "--secret"],
    [given.config, `"secret" in ${configPath ?? "the config file"}`],
    [given.env === "" ? undefined : given.env, SECRET_ENV],
  ];
  for (const [secret, source] of configured) {
    if (secret === undefined) continue;
    if (secret.length < MIN_LENGTH) throw new Error(`The signing secret must be at least ${MIN_LENGTH} characters (from ${source})`);
    return { secret, source };
  }
  if (SHARED_STORES.test(store)) {
    throw new Error(
      `Cannot start on a shared store without a signing secret: every instance on it must sign sessions with the ` +
        `same one. Set "secret" in the config file, --secret, or ${SECRET_ENV} (at least ${MIN_LENGTH} random characters).`,
    );
  }
  return null;
}

/**
 * The secret when none is configured: for the memory store, one for this process; else the key file beside the
 * config file (in the working directory without one), created with mode 0600 by whichever instance starts
 * first and read by every later one.
 */
export async function unconfiguredSecret(store: string, configPath: string | undefined, runtime: SecretRuntime): Promise<ResolvedSecret> {
  if (store === "memory") return { secret: randomSecret(), source: "generated for this process (the memory store keeps nothing)" };
  const path = keyFilePath(configPath);
  let created = false;
  if (!(await exists(path, runtime))) {
    if (runtime.createPrivateFile === undefined) throw new Error(`Cannot create the key file "${path}" on this runtime: set --secret or ${SECRET_ENV}`);
    created = await runtime.createPrivateFile(path, `${randomSecret()}\n`);
  }
  const secret = (await runtime.readText(path)).trim();
  if (secret.length < MIN_LENGTH) throw new Error(`The key file "${path}" must hold a secret of at least ${MIN_LENGTH} characters`);
  return { secret, source: `key file ${path}${created ? " (created, mode 0600)" : ""}` };
}

async function exists(path: string, runtime: SecretRuntime): Promise<boolean> {
  try {
    await runtime.readText(path);
    return true;
  } catch (error) {
    if (missing(error)) return false;
    throw new Error(`Cannot read the key file "${path}": ${(error as Error).message}`);
  }
}

function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
