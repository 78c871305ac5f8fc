/**
 * The parts of an MCP host built on the official SDK that the tests need: an in-memory OAuthClientProvider, a
 * loopback listener for the authorization response, and a user who signs in and presses Allow.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { expect } from "vitest";

/** A loopback listener on a random port that receives the authorization response, as a native MCP host does. */
export async function callbackListener(): Promise<{ url: string; code: () => Promise<string>; close: () => Promise<void> }> {
  let resolve!: (code: string) => void;
  const received = new Promise<string>((r) => (resolve = r));
  const listener: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    resolve(url.searchParams.get("code") ?? `error:${url.searchParams.get("error")}`);
    res.end("You can close this window.");
  });
  await new Promise<void>((r) => listener.listen(0, "127.0.0.1", r));
  const { port } = listener.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    code: () => received,
    close: () => new Promise<void>((r) => listener.close(() => r())),
  };
}

/** The SDK's provider interface, kept in memory; with no metadata document URL, the SDK registers the client. */
export class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = "";
  authorizationUrl: URL | undefined;
  readonly redirect: string;
  constructor(redirect: string) {
    this.redirect = redirect;
  }
  get redirectUrl(): string {
    return this.redirect;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Test MCP Host",
      redirect_uris: [this.redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.info = info;
  }
  tokens(): OAuthTokens | undefined {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    return this.verifier;
  }
}

/** A provider whose client_id is its metadata document's URL (the SDK uses it when the server supports CIMD). */
class DocumentProvider extends MemoryProvider {
  readonly documentUrl: string;
  constructor(redirect: string, documentUrl: string) {
    super(redirect);
    this.documentUrl = documentUrl;
  }
  get clientMetadataUrl(): string {
    return this.documentUrl;
  }
}

/** A provider for a host that uses a metadata document at `documentUrl`, or registers when there is none. */
export const provider = (redirect: string, documentUrl?: string): MemoryProvider =>
  documentUrl === undefined ? new MemoryProvider(redirect) : new DocumentProvider(redirect, documentUrl);

/**
 * The user's browser: opens the authorization URL, signs in when a login form shows (keeping cookies), presses
 * Allow, and follows the redirect to the listener.
 */
export async function userApproves(authorizationUrl: URL, login?: { username: string; password: string }): Promise<void> {
  const cookies = new Map<string, string>();
  const browse = async (url: string | URL, form?: Record<string, string>) => {
    const response = await fetch(url, {
      redirect: "manual",
      headers: {
        cookie: [...cookies].map(([n, v]) => `${n}=${v}`).join("; "),
        ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      },
      ...(form ? { method: "POST", body: new URLSearchParams(form).toString() } : {}),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair!.indexOf("=");
      cookies.set(pair!.slice(0, at).trim(), pair!.slice(at + 1));
    }
    return response;
  };
  let page = await browse(authorizationUrl);
  let html = await page.text();
  if (/name="password"/.test(html)) {
    if (!login) throw new Error("a login form, but no user to sign in");
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
    const signedIn = await browse(authorizationUrl, { csrf, username: login.username, password: login.password });
    page = await browse(new URL(signedIn.headers.get("location") ?? authorizationUrl.href, authorizationUrl));
    html = await page.text();
  }
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  if (page.status !== 200 || csrf === undefined) throw new Error(`no consent page: ${page.status} ${html.slice(0, 300)}`);
  const answer = await browse(authorizationUrl, { decision: "allow", csrf });
  const location = answer.headers.get("location");
  if (location === null) throw new Error(`no redirect after consent: ${answer.status}`);
  await fetch(location);
}

/** Connects the SDK client to an MCP server, authorizing on the way, and calls `whoami`. */
export async function connectAndCall(
  mcpUrl: string,
  provider: MemoryProvider,
  callback: { code: () => Promise<string> },
  login?: { username: string; password: string },
): Promise<{ authorizationUrl: URL; whoami: { user: string; scope: string; aud: string[]; client_id: string } }> {
  const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  const client = new Client({ name: "test-host", version: "1.0.0" });
  await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.authorizationUrl).toBeDefined();
  await userApproves(provider.authorizationUrl!, login);
  const code = await callback.code();
  expect(code).not.toMatch(/^error:/);
  await first.finishAuth(code);
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  const connected = new Client({ name: "test-host", version: "1.0.0" });
  await connected.connect(transport);
  const result = await connected.callTool({ name: "whoami", arguments: {} });
  await connected.close();
  const text = (result.content as { type: string; text: string }[])[0]!.text;
  return { authorizationUrl: provider.authorizationUrl!, whoami: JSON.parse(text) as { user: string; scope: string; aud: string[]; client_id: string } };
}


/** A host whose client was registered by the operator beforehand: the SDK uses its client_id as it is. */
export function preRegistered(redirect: string, clientId: string): MemoryProvider {
  const host = new MemoryProvider(redirect);
  host.info = { client_id: clientId };
  return host;
}

/** The scopes of a space-delimited list plus `more`, without repeats: what a host asks for on step-up (SEP-2350). */
export function union(granted: string | undefined, ...more: (string | undefined)[]): string {
  return [...new Set([granted, ...more].flatMap((s) => (s === undefined ? [] : s.split(" "))))].join(" ");
}
