/**
 * The reference server's command line, shared by the Node, Deno and Bun entry points:
 * `--port N` (0 = any free port; default 8080), `--host H` (default 127.0.0.1), `--config FILE`.
 *
 * @module
 */
import { DEMO_CONFIG, DEMO_REDIRECT_URI, parseConfig, type ReferenceConfig } from "../reference/config.ts";

/** Parsed command-line flags. */
export interface ServeArgs {
  port: number;
  host: string;
  config: string | undefined;
}

export const USAGE = "usage: serve [--port N] [--host 127.0.0.1] [--config FILE]";

/** Parses the flags; throws an Error with a one-line message for bad ones. */
export function parseArgs(argv: readonly string[]): ServeArgs {
  const args: ServeArgs = { port: 8080, host: "127.0.0.1", config: undefined };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const [name, inline] = flag.includes("=") ? [flag.slice(0, flag.indexOf("=")), flag.slice(flag.indexOf("=") + 1)] : [flag, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === "") throw new Error(`${name} needs a value\n${USAGE}`);
      return v;
    };
    if (name === "--port") {
      const port = Number(value());
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0-65535\n${USAGE}`);
      args.port = port;
    } else if (name === "--host") args.host = value();
    else if (name === "--config") args.config = value();
    else if (name === "--help" || name === "-h") throw new Error(USAGE);
    else throw new Error(`unknown flag "${flag}"\n${USAGE}`);
  }
  return args;
}

/** Reads and checks the config file, or returns the demo. */
export async function loadConfig(path: string | undefined, readText: (path: string) => Promise<string>): Promise<ReferenceConfig> {
  if (path === undefined) return DEMO_CONFIG;
  let text: string;
  try {
    text = await readText(path);
  } catch (error) {
    throw new Error(`Cannot load config "${path}": ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`Cannot load config "${path}": not valid JSON (${(error as Error).message})`);
  }
  return parseConfig(json, path);
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
