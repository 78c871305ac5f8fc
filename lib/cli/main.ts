/**
 * The `oauth2-fetch-server` command, shared by the Node, Deno and Bun entry points. Its `serve`: parse the flags,
 * load the config, listen, build the app for the address it got, print the listening line, stop on SIGINT/SIGTERM.
 *
 * @module
 */
import { adminServer, createReferenceApp, type ReferenceApp } from "../reference/app.ts";
import { configWarnings } from "../reference/config.ts";
import { hashPassword } from "../reference/passwords.ts";
import { defaultStoreUrl, openStore, type StoreDrivers } from "../reference/store.ts";
import type { AuditEvent } from "../audit.ts";
import { banner, help, loadConfig, parseCommandLine, serveArgs, UsageError, VERSION } from "./args.ts";
import { ADMIN_RUNNERS } from "./clients.ts";
import { KEY_RUNNERS } from "./keys.ts";
import type { FetchApp } from "../adapters/fetch.ts";
import { LOOPBACK_HOSTS } from "../redirect_uri.ts";
import { configuredSecret, keyFilePath, SECRET_ENV, unconfiguredSecret } from "./secret.ts";

/** What an entry point supplies from its runtime. */
export interface CliRuntime {
  args: readonly string[];
  readText(path: string): Promise<string>;
  /** An environment variable, for `{ "env": "NAME" }` values in the config file. */
  env(name: string): string | undefined;
  /** All of standard input (hash-password reads the password there, never from the command line). */
  readStdin(): Promise<string>;
  /** Serves a fetch handler with the runtime's adapter; resolves once listening. */
  serve(
    app: FetchApp,
    options: { port: number; hostname: string; onError: (error: unknown) => void },
  ): Promise<{ url: string; close(): Promise<void> }>;
  onSignal(signal: "SIGINT" | "SIGTERM", listener: () => void): void;
  exit(code: number): void;
  /** The runtime's SQLite and a loader for the optional database drivers, for `--store`. */
  drivers?: StoreDrivers;
  /**
   * Set when the runtime's server cannot close connections that stall (Deno.serve has no timeouts): then
   * `serve` listens beyond loopback only with `--trust-proxy`, i.e. behind a proxy that times slow clients out.
   */
  noConnectionTimeouts?: string;
  /** Appends text to a file, creating it (the audit log). */
  appendText?(path: string, text: string): Promise<void>;
  /** Creates a file with mode 0600 unless it exists (the key file); true when it created it. */
  createPrivateFile?(path: string, text: string): Promise<boolean>;
}

/** The audit log of `audit_log`: JSON lines on stderr, or appended to a file in order. */
function auditLog(target: string | undefined, runtime: CliRuntime): ((event: AuditEvent) => void) | undefined {
  if (target === undefined) return undefined;
  if (target === "stderr") return (event) => console.error(JSON.stringify(event));
  const append = runtime.appendText;
  if (append === undefined) throw new Error(`Cannot write the audit log "${target}" on this runtime`);
  let chain = Promise.resolve();
  let warned = false;
  return (event) => {
    const line = JSON.stringify(event) + "\n";
    chain = chain.then(() => append(target, line)).catch((error: Error) => {
      if (!warned) console.error(`Cannot write the audit log "${target}": ${error.message}`);
      warned = true;
    });
  };
}

export { SECRET_ENV } from "./secret.ts";

/** The secret from {@link SECRET_ENV}, or undefined (unset, or Deno without --allow-env). */
function envSecret(runtime: CliRuntime): string | undefined {
  try {
    return runtime.env(SECRET_ENV);
  } catch {
    // Deno without --allow-env: no secret from the environment.
    return undefined;
  }
}

/**
 * The secret the signing keys are sealed under, found as `serve` finds it but never created: the configured one,
 * else the key file beside the config file; undefined when there is neither.
 */
async function keysSecret(configured: string | undefined, configPath: string | undefined, runtime: CliRuntime): Promise<string | undefined> {
  if (configured !== undefined && configured !== "") return configured;
  if (configPath === undefined) return undefined;
  try {
    return (await runtime.readText(keyFilePath(configPath))).trim();
  } catch {
    return undefined;
  }
}

/**
 * Runs one command line. `serve` (the default) runs until a signal stops it. Exit codes: 0 done (and for
 * `--help`), 1 a failure (bad config, unreachable store), 2 a wrong command line (with the usage).
 */
export async function main(runtime: CliRuntime): Promise<void> {
  try {
    const parsed = parseCommandLine(runtime.args);
    if (parsed.kind === "help") return console.log(parsed.text);
    if (parsed.kind === "version") return console.log(VERSION);
    const run = RUNNERS[parsed.command];
    if (!run) throw new Error(`command "${parsed.command}" has no runner`);
    const code = await run(parsed.flags, parsed.operand, runtime);
    if (code !== undefined) runtime.exit(code);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    runtime.exit(error instanceof UsageError ? 2 : 1);
  }
}

type Flags = Record<string, string | string[] | true>;
/** Runs a command; resolves with its exit code, or undefined while it keeps running (serve). */
type Runner = (flags: Flags, operand: string | undefined, runtime: CliRuntime) => Promise<number | undefined>;

/** Opens the store that `--store URL` or `--config FILE` names, runs an administration command on it, closes it. */
const admin = (name: string): Runner => async (flags, operand, runtime) => {
  const configPath = flags["--config"] as string | undefined;
  const named = flags["--store"] as string | undefined;
  if (configPath === undefined && named === undefined) throw new UsageError(`${name} needs --config FILE or --store URL\n${help(name)}`);
  const config = configPath === undefined ? undefined : await loadConfig(configPath, runtime.readText, runtime.env);
  const url = named ?? config?.store ?? defaultStoreUrl(configPath);
  if (url === "memory") throw new Error(`${name}: the memory store lives inside one server process; name a durable store (sqlite:PATH, postgres://…, redis://…)`);
  const store = await openStore(url, runtime.drivers ? { drivers: runtime.drivers } : {});
  try {
    return await ({ ...ADMIN_RUNNERS, ...KEY_RUNNERS })[name]!(flags, operand, {
      storage: store.storage,
      description: store.description,
      registry: (scopes) => adminServer(config, store.storage, scopes).clients,
      keys: async (write) => {
        const secret = await keysSecret(config?.secret ?? envSecret(runtime), configPath, runtime);
        if (secret === undefined && write) {
          throw new Error(`${name}: no secret to seal a new key with: give the servers' own ("secret" in the config file, ${SECRET_ENV}, or --config beside their key file)`);
        }
        // Listing needs no secret: the public halves are stored in clear.
        return adminServer(config, store.storage, ["keys"], secret ?? crypto.randomUUID().repeat(2)).keys;
      },
      print: (text) => console.log(text),
      clock: Date.now,
    });
  } finally {
    await store.close();
  }
};

/** One runner per command of `COMMANDS` (args.ts). */
const RUNNERS: Record<string, Runner> = {
  ...Object.fromEntries([...Object.keys(ADMIN_RUNNERS), ...Object.keys(KEY_RUNNERS)].map((name) => [name, admin(name)])),
  serve,
  "hash-password": async (flags, _, runtime) => {
    // One line: a trailing newline from `echo` or a terminal is not part of the password.
    const password = (await runtime.readStdin()).replace(/\r?\n$/, "");
    if (password.length < 8) throw new Error("hash-password: the password on standard input must be at least 8 characters");
    const hash = await hashPassword(password);
    console.log(flags["--json"] ? JSON.stringify({ password_hash: hash }) : hash);
    return 0;
  },
};

async function serve(flags: Flags, _: string | undefined, runtime: CliRuntime): Promise<undefined> {
  const args = serveArgs(flags);
  const config = await loadConfig(args.config, runtime.readText, runtime.env);
  // Flags win over the config file; the app reads them from the config.
  if (args.store !== undefined) config.store = args.store;
  if (args.trustProxy !== undefined) config.trust_proxy = args.trustProxy;
  // Slowloris (finding 8 of issue 15): where the server cannot time out stalled connections, only a proxy can.
  // A listen address is written without brackets: `::1`, not `[::1]`.
  const loopback = LOOPBACK_HOSTS.includes(args.host) || args.host === "::1" || args.host.startsWith("127.");
  if (runtime.noConnectionTimeouts !== undefined && !loopback && (config.trust_proxy ?? []).length === 0) {
    throw new Error(
      `Cannot listen on ${args.host} with ${runtime.noConnectionTimeouts}: it never closes connections that stall ` +
        `(slowloris). Listen on 127.0.0.1 behind a reverse proxy that times out slow clients, and name the proxy ` +
        `with --trust-proxy (or trust_proxy in the config).`,
    );
  }
  if (args.config !== undefined) for (const warning of configWarnings(config, args.config)) console.error(warning);
  const storeUrl = config.store ?? defaultStoreUrl(args.config);
  // The session-signing secret is never kept in the store. A shared store without one is refused at once.
  const configured = configuredSecret({ flag: args.secret, config: config.secret, env: envSecret(runtime) }, storeUrl, args.config);
  // Opened before listening: a store that cannot be opened ends the command with one line and exit code 1.
  const store = await openStore(storeUrl, {
    ...(runtime.drivers ? { drivers: runtime.drivers } : {}),
    ...(config.token_cache_ms === undefined ? {} : { tokenCacheMs: config.token_cache_ms }),
    onError: (error) => console.error("store connection error:", error instanceof Error ? error.message : String(error)),
  });
  let source: string;
  try {
    ({ secret: config.secret, source } = configured ?? await unconfiguredSecret(storeUrl, args.config, runtime));
  } catch (error) {
    await store.close();
    throw error;
  }
  // The issuer needs the port, which "--port 0" only knows after listening; requests wait for the app.
  let ready!: (app: ReferenceApp) => void;
  const app = new Promise<ReferenceApp>((resolve) => (ready = resolve));
  const running = await runtime.serve({ fetch: async (request, info) => (await app).fetch(request, info) }, {
    port: args.port,
    hostname: args.host,
    onError: (error) => console.error("internal error:", error),
  });
  let built: ReferenceApp;
  try {
    built = await createReferenceApp({
      issuer: args.issuer ?? running.url,
      config,
      storage: store.storage,
      onError: (error, where) => console.error(`error at ${where.endpoint}:`, error),
      log: (line) => console.log(line),
      ...(config.audit_log === undefined ? {} : { onEvent: auditLog(config.audit_log, runtime)! }),
    });
    ready(built);
  } catch (error) {
    await running.close();
    await store.close();
    throw error;
  }
  const storeLine = (store.durable
    ? `\nstore: ${store.description}`
    : "\nstore: memory (nothing survives a restart; --config FILE or --store URL keeps it)") + `\nsecret: ${source}`;
  // One write, so whoever waits for the listening line sees the recipes too.
  console.log(`listening on ${running.url}` + storeLine + banner(running.url, args.config === undefined));
  const stop = (): void => {
    built.close();
    running.close().then(() => store.close()).then(() => runtime.exit(0), () => runtime.exit(1));
  };
  runtime.onSignal("SIGINT", stop);
  runtime.onSignal("SIGTERM", stop);
  return undefined;
}
