/**
 * The command line of `oauth2-fetch-server`: one table of commands and their flags, from which parsing and every
 * `--help` text are made. `serve` is the default command, so `npm start -- --port N --config FILE` works as before.
 *
 * @module
 */
import { DEMO_CONFIG, DEMO_REDIRECT_URI, parseConfig, type ReferenceConfig } from "../reference/config.ts";

/** The package version; test/cli/commands.test.ts checks it against package.json. */
export const VERSION = "0.1.0";

/** A flag: `value` names its argument in the help (none = a switch); `repeat` collects every occurrence. */
export interface Flag {
  value?: string;
  repeat?: boolean;
  help: string;
}

/** A command of the table. `operand` names its one positional argument, when it takes one. */
export interface Command {
  summary: string;
  operand?: string;
  flags: Record<string, Flag>;
}

const STORE_FLAGS: Record<string, Flag> = {
  "--config": { value: "FILE", help: "the server's config file (its store, or a SQLite file beside it)" },
  "--store": { value: "URL", help: "memory, sqlite:PATH, postgres://… or redis://… (overrides the config's)" },
  "--json": { help: "machine-readable output" },
};

/** Every command. Names with a space are subcommands (`clients add`). */
export const COMMANDS: Record<string, Command> = {
  serve: {
    summary: "run the authorization server (the default command)",
    flags: {
      "--port": { value: "N", help: "port to listen on; 0 picks a free one (default 8080)" },
      "--host": { value: "HOST", help: "address to listen on (default 127.0.0.1)" },
      "--config": { value: "FILE", help: "config file; without it the demo starts, in memory" },
      "--store": { value: "URL", help: "memory, sqlite:PATH, postgres://… or redis://… (overrides the config's)" },
      "--issuer": { value: "URL", help: "public base URL, e.g. https://auth.example.com behind a proxy (default the listening URL)" },
      "--secret": { value: "S", help: "signing secret shared by every instance (at least 32 characters)" },
      "--trust-proxy": { value: "CIDR,…", help: "reverse proxies whose X-Forwarded-For is believed" },
    },
  },
  "hash-password": {
    summary: "read a password on standard input and print its hash for the config file's password_hash",
    flags: { "--json": STORE_FLAGS["--json"]! },
  },
  "clients add": {
    summary: "add a client to the store; a confidential client's secret is printed once",
    flags: {
      ...STORE_FLAGS,
      "--client-id": { value: "ID", help: "the client_id (default: generated)" },
      "--name": { value: "NAME", help: "shown on the consent page (required)" },
      "--redirect-uri": { value: "URI", repeat: true, help: "an exact redirect URI" },
      "--scope": { value: "SCOPE", repeat: true, help: "a scope the client may ask for (at least one)" },
      "--grant-type": { value: "TYPE", repeat: true, help: "authorization_code, refresh_token or client_credentials (default: code + refresh with a redirect URI, else client_credentials)" },
      "--public": { help: "a public client: no secret, PKCE required" },
    },
  },
  "clients list": { summary: "list the clients of the store", flags: STORE_FLAGS },
  "clients show": { summary: "show one client", operand: "CLIENT_ID", flags: STORE_FLAGS },
  "clients rotate-secret": { summary: "give a confidential client a new secret, printed once; the old one stops working", operand: "CLIENT_ID", flags: STORE_FLAGS },
  "clients pause": { summary: "pause a client: it cannot authenticate and its tokens stop working", operand: "CLIENT_ID", flags: STORE_FLAGS },
  "clients resume": { summary: "resume a paused client", operand: "CLIENT_ID", flags: STORE_FLAGS },
  "clients delete": { summary: "delete a client and revoke every grant and token issued to it", operand: "CLIENT_ID", flags: STORE_FLAGS },
  "clients revoke-grants": { summary: "revoke every grant and token of a client (it stays registered)", operand: "CLIENT_ID", flags: STORE_FLAGS },
  "keys list": { summary: "list the signing keys of JWT access tokens: next, current, previous, retired", flags: STORE_FLAGS },
  "keys rotate": { summary: "publish a new signing key at /jwks; it signs 15 minutes later, the old one verifies until retired", flags: STORE_FLAGS },
  migrate: { summary: "create or upgrade the store's schema (SQL stores; servers also do it at start)", flags: STORE_FLAGS },
  purge: { summary: "delete expired codes, tokens, grants and marks from the store", flags: STORE_FLAGS },
};

/** What the command line asks for. */
export type Parsed =
  | { kind: "help"; text: string }
  | { kind: "version" }
  | { kind: "run"; command: string; operand: string | undefined; flags: Record<string, string | string[] | true> };

/** A wrong command line: printed with the usage, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Parses argv (without the program name). Throws {@link UsageError} for anything unknown or missing. */
export function parseCommandLine(argv: readonly string[]): Parsed {
  if (argv[0] === "--version" || argv[0] === "-v") return { kind: "version" };
  if (argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") return { kind: "help", text: usage() };
  let rest = argv;
  let name = "serve";
  const first = argv[0];
  if (first !== undefined && !first.startsWith("-")) {
    const group = Object.keys(COMMANDS).filter((c) => c.startsWith(`${first} `));
    if (group.length > 0) {
      const sub = argv[1];
      if (sub === undefined || sub === "--help" || sub === "-h") return { kind: "help", text: usage(first) };
      name = `${first} ${sub}`;
      if (!COMMANDS[name]) throw new UsageError(`unknown command "${name}"\n${usage(first)}`);
      rest = argv.slice(2);
    } else if (COMMANDS[first]) {
      name = first;
      rest = argv.slice(1);
    } else {
      throw new UsageError(`unknown command "${first}"\n${usage()}`);
    }
  }
  const command = COMMANDS[name]!;
  const flags: Record<string, string | string[] | true> = {};
  let operand: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === "--help" || arg === "-h") return { kind: "help", text: help(name) };
    if (arg === "--version") return { kind: "version" };
    if (!arg.startsWith("-")) {
      if (command.operand === undefined || operand !== undefined) throw new UsageError(`unexpected argument "${arg}"\n${help(name)}`);
      operand = arg;
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const spec = command.flags[flag];
    if (!spec) throw new UsageError(`unknown flag "${flag}"\n${help(name)}`);
    if (spec.value === undefined) {
      if (eq > 0) throw new UsageError(`${flag} takes no value\n${help(name)}`);
      flags[flag] = true;
      continue;
    }
    const value = eq > 0 ? arg.slice(eq + 1) : rest[++i];
    if (value === undefined || value === "") throw new UsageError(`${flag} needs a value\n${help(name)}`);
    if (spec.repeat) flags[flag] = [...((flags[flag] as string[] | undefined) ?? []), value];
    else flags[flag] = value;
  }
  if (command.operand !== undefined && operand === undefined) throw new UsageError(`${name} needs ${command.operand}\n${help(name)}`);
  return { kind: "run", command: name, operand, flags };
}

/** The overview, or the list of one group's subcommands. */
export function usage(group?: string): string {
  const names = Object.keys(COMMANDS).filter((c) => group === undefined || c.startsWith(`${group} `));
  const width = Math.max(...names.map((n) => n.length + (COMMANDS[n]!.operand?.length ?? -1) + 1));
  const lines = names.map((n) => {
    const head = COMMANDS[n]!.operand ? `${n} ${COMMANDS[n]!.operand}` : n;
    return `  ${head.padEnd(width)}  ${COMMANDS[n]!.summary}`;
  });
  return [
    `usage: oauth2-fetch-server ${group === undefined ? "[COMMAND]" : `${group} SUBCOMMAND`} [FLAGS]   (v${VERSION})`,
    "",
    ...lines,
    "",
    `Run "oauth2-fetch-server COMMAND --help" for a command's flags; --version prints the version.`,
  ].join("\n");
}

/** One command's usage and flags. */
export function help(name: string): string {
  const command = COMMANDS[name]!;
  const heads = Object.entries(command.flags).map(([flag, f]) => (f.value ? `${flag} ${f.value}` : flag));
  const width = Math.max(...heads.map((h) => h.length));
  return [
    `usage: oauth2-fetch-server ${name}${command.operand ? ` ${command.operand}` : ""} [FLAGS]`,
    `${command.summary}.`,
    "",
    ...Object.values(command.flags).map((f, i) => `  ${heads[i]!.padEnd(width)}  ${f.help}${f.repeat ? " (repeatable)" : ""}`),
  ].join("\n");
}

/** The `serve` flags, checked. */
export interface ServeArgs {
  port: number;
  host: string;
  config: string | undefined;
  store?: string;
  issuer?: string;
  secret?: string;
  trustProxy?: string[];
}

/** Checks the values of `serve`'s flags; throws {@link UsageError}. */
export function serveArgs(flags: Record<string, string | string[] | true>): ServeArgs {
  const text = (flag: string) => flags[flag] as string | undefined;
  const port = Number(text("--port") ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0-65535\n${help("serve")}`);
  const args: ServeArgs = { port, host: text("--host") ?? "127.0.0.1", config: text("--config") };
  const issuer = text("--issuer");
  if (issuer !== undefined) {
    if (!URL.canParse(issuer) || !/^https?:$/.test(new URL(issuer).protocol)) throw new UsageError(`--issuer must be an http(s) URL: "${issuer}"\n${help("serve")}`);
    // The issuer identifier has no trailing slash (RFC 8414 §2, and the spec's `{base}/index.php` addresses).
    args.issuer = issuer.replace(/\/+$/, "");
  }
  const store = text("--store");
  if (store !== undefined) args.store = store;
  const secret = text("--secret");
  if (secret !== undefined) args.secret = secret;
  const proxies = text("--trust-proxy");
  if (proxies !== undefined) args.trustProxy = proxies.split(",").map((p) => p.trim()).filter((p) => p !== "");
  return args;
}

/** Reads and checks the config file, or returns the demo; a missing file is `config file not found: PATH`. */
export async function loadConfig(
  path: string | undefined,
  readText: (path: string) => Promise<string>,
  env: (name: string) => string | undefined = () => undefined,
): Promise<ReferenceConfig> {
  if (path === undefined) return structuredClone(DEMO_CONFIG);
  let text: string;
  try {
    text = await readText(path);
  } catch (error) {
    const { code, name } = error as { code?: unknown; name?: unknown };
    if (code === "ENOENT" || name === "NotFound") throw new Error(`config file not found: ${path}`);
    throw new Error(`Cannot load config "${path}": ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`Cannot load config "${path}": not valid JSON (${(error as Error).message})`);
  }
  return parseConfig(json, path, env);
}

/** The lines printed after start: how to try each flow with curl (only for the demo, whose secrets are known). */
export function banner(url: string, demo: boolean): string {
  if (!demo) return "";
  const token = `${url}/index.php?module=OAuth2&action=token`;
  const authorize = `${url}/index.php?module=OAuth2&action=authorize`;
  return `
Demo mode: user demo / demo-password; clients demo-spa (public, PKCE), demo-web, demo-backend.
Try it (see README.md "Try the three flows"):

  # Client Credentials
  curl -s -X POST '${token}' -d grant_type=client_credentials \\
    -d client_id=demo-backend -d client_secret=demo-backend-secret-change-me -d scope=exports

  # Authorization Code + PKCE: open in a browser, sign in, Allow, copy ?code= from the address bar
  ${authorize}&response_type=code&client_id=demo-spa&redirect_uri=${encodeURIComponent(DEMO_REDIRECT_URI)}&scope=reports.read&state=xyz&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256
  curl -s -X POST '${token}' -d grant_type=authorization_code -d client_id=demo-spa \\
    -d redirect_uri=${DEMO_REDIRECT_URI} -d code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk -d code=CODE

  # Refresh, then call the sample API
  curl -s -X POST '${token}' -d grant_type=refresh_token -d client_id=demo-spa -d refresh_token=REFRESH_TOKEN
  curl -s ${url}/api/reports -H 'Authorization: Bearer ACCESS_TOKEN'
`;
}
