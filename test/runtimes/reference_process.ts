// The reference server as a child process on Node, Deno or Bun, with a config file, for attacks over real
// HTTP; and a small browser (a cookie jar, no redirects followed) to walk its sign-in and consent pages.
// Vitest on Node only: it spawns the other runtimes.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const bin = (name: string): string => resolve("node_modules/.bin", name);

/** The three entry points, as the README starts them. */
export const RUNTIMES: [string, string, string[]][] = [
  ["node", process.execPath, ["--import", "tsx", "lib/cli/serve.ts"]],
  ["deno", bin("deno"), ["run", "--allow-net", "--allow-read", "--allow-write", "lib/cli/serve_deno.ts"]],
  ["bun", bin("bun"), ["lib/cli/serve_bun.ts"]],
];

export const PASSWORD = "correct horse battery staple";
export const REDIRECT = "http://127.0.0.1:9999/callback";
export const SECRETS = { web: "web-secret-0123456789abcdef", backend: "backend-secret-0123456789abcdef" } as const;

/** Users, scopes and clients every attack test uses; `extra` is merged in at the top level. */
export function config(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    users: [{ username: "alice", password: PASSWORD }, { username: "bob", password: PASSWORD }],
    scopes: [{ name: "read", description: "Read your reports" }, { name: "export", description: "Run exports" }],
    clients: [
      { client_id: "spa", name: "SPA", redirect_uris: [REDIRECT], scopes: ["read"], grant_types: ["authorization_code", "refresh_token"] },
      { client_id: "other-spa", name: "Other SPA", redirect_uris: [REDIRECT], scopes: ["read"], grant_types: ["authorization_code"] },
      {
        client_id: "web", client_secret: SECRETS.web, name: "Web", redirect_uris: [REDIRECT], scopes: ["read"],
        grant_types: ["authorization_code", "refresh_token"],
      },
      { client_id: "backend", client_secret: SECRETS.backend, name: "Backend", redirect_uris: [], scopes: ["export"], grant_types: ["client_credentials"] },
    ],
    ...extra,
  };
}

export interface Running {
  url: string;
  child: ChildProcess;
  /** Everything the server printed so far, stdout and stderr. */
  output(): string;
  stop(): Promise<void>;
}

const children = new Set<ChildProcess>();
/** Kills whatever is left; call from afterAll. */
export function killAll(): void {
  for (const child of children) {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  children.clear();
}

/** Starts the reference server with `configValue` on a free loopback port; resolves once it listens. */
export function startReference(runtime: string, configValue: Record<string, unknown>, flags: string[] = []): Promise<Running> {
  const [, command, args] = RUNTIMES.find(([name]) => name === runtime)!;
  const dir = mkdtempSync(join(tmpdir(), "oauth2-attack-"));
  const file = join(dir, "config.json");
  writeFileSync(file, JSON.stringify(configValue));
  const child = spawn(command, [...args, "--port", "0", "--config", file, ...flags], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1" },
    detached: true,
  });
  children.add(child);
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 20 s from ${runtime}:\n${output}`)), 20_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /^listening on (http:\/\/(?:127\.0\.0\.1|localhost):\d+)$/m.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({
          url: match[1]!,
          child,
          output: () => output,
          stop: async () => {
            try {
              process.kill(-child.pid!, "SIGKILL");
            } catch {
              // Already gone.
            }
            await exited;
            children.delete(child);
          },
        });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${runtime} exited before listening:\n${output}`));
    });
  });
}

/** A browser without redirects: keeps cookies by name. */
export class Browser {
  readonly cookies: Map<string, string> = new Map();
  base: string;
  constructor(base: string) {
    this.base = base;
  }

  async request(path: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    if (init.form) headers["content-type"] = "application/x-www-form-urlencoded";
    const response = await fetch(this.base + path, {
      method: init.method ?? (init.form ? "POST" : "GET"),
      headers,
      redirect: "manual",
      ...(init.form ? { body: new URLSearchParams(init.form).toString() } : {}),
    });
    for (const line of response.headers.getSetCookie()) {
      const pair = line.slice(0, line.indexOf(";"));
      const eq = pair.indexOf("=");
      const value = pair.slice(eq + 1);
      if (value === "") this.cookies.delete(pair.slice(0, eq));
      else this.cookies.set(pair.slice(0, eq), value);
    }
    return response;
  }
}

export const csrfOf = (html: string): string => {
  const match = /name="csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error(`no csrf field in page:\n${html.slice(0, 500)}`);
  return match[1]!;
};

/** base64url(SHA-256(verifier)). */
export async function challengeOf(verifier: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return Buffer.from(digest).toString("base64url");
}

/** The authorization request path of `clientId` (PKCE when a challenge is given). */
export function authorizePath(clientId: string, challenge?: string): string {
  const query = new URLSearchParams({ module: "OAuth2", action: "authorize", response_type: "code", client_id: clientId, redirect_uri: REDIRECT, scope: "read", state: "st" });
  if (challenge !== undefined) {
    query.set("code_challenge", challenge);
    query.set("code_challenge_method", "S256");
  }
  return `/index.php?${query}`;
}

/** Signs `browser` in as `username` through the form at `path`; returns the consent page's HTML. */
export async function signIn(browser: Browser, path: string, username = "alice"): Promise<string> {
  const page = await browser.request(path);
  const csrf = csrfOf(await page.text());
  const login = await browser.request(path, { form: { csrf, username, password: PASSWORD } });
  if (login.status !== 303) throw new Error(`sign-in failed: ${login.status} ${await login.text()}`);
  await login.arrayBuffer();
  const consent = await browser.request(path);
  return consent.text();
}

/** POSTs a consent decision; returns the response (303 with the code on success). */
export function decide(browser: Browser, path: string, csrf: string, decision = "allow"): Promise<Response> {
  return browser.request(path, { form: { csrf, decision } });
}

/** POSTs a form to the token endpoint. */
export async function token(base: string, fields: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${base}/index.php?module=OAuth2&action=token`, { method: "POST", body: new URLSearchParams(fields) });
  return { status: response.status, body: await response.json() as Record<string, unknown> };
}

/** A full authorization of `spa` with PKCE: the code and its verifier. */
export async function spaCode(base: string, browser: Browser = new Browser(base)): Promise<{ code: string; verifier: string }> {
  const verifier = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
  const path = authorizePath("spa", await challengeOf(verifier));
  const html = await signIn(browser, path);
  const response = await decide(browser, path, csrfOf(html));
  const location = response.headers.get("location");
  if (location === null) throw new Error(`no code: ${response.status}`);
  return { code: new URL(location).searchParams.get("code")!, verifier };
}
