/**
 * What every server of the durable-store rows shares (this project's, the peers', the limit server): the three
 * loopback ports the orchestrator (`durable.ts`) talks to, and the ready line. The token port answers
 * `POST /token` with the fixture's clients and bodies; the resource port answers `GET /` with a Bearer token
 * (200, or 401); the control port, never under load, answers `GET /codes?n=N` (codes through the server's
 * own issuing path, PKCE with the fixture's challenge), `/refresh?n=N` (refresh tokens of fresh grants, each
 * from a code exchanged on the token port), `/access?n=N` (client_credentials access tokens) and `/trips`
 * (database round trips so far, counted by `drivers.ts`).
 *
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import { trips } from "./drivers.ts";
import { CLIENT_CREDENTIALS_BODY, codeExchangeBody, FORM_HEADERS } from "./fixture.ts";

/** The token path every durable-row server answers. */
export const DURABLE_TOKEN_PATH = "/token";

/** A server of the durable rows: how it listens and issues codes. */
export interface DurableApp {
  /** Starts the token port; resolves its port number. */
  token(): Promise<number>;
  /** Starts the resource port; resolves its port number. */
  resource(): Promise<number>;
  /** Issues `n` authorization codes of `bench-spa` as the server's authorization endpoint would. */
  issueCodes(n: number): Promise<string[]>;
}

/** Listens on a free loopback port with a node:http handler; resolves the port. */
export async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<number> {
  const server = createServer({ keepAliveTimeout: 5000 }, handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/** Reads a request body as text. */
export async function body(req: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of req) text += chunk;
  return text;
}

/** Starts the app's ports and the control port, then prints the ready line `{port, resource, control}`. */
export async function serveDurable(app: DurableApp): Promise<void> {
  const port = await app.token();
  const resource = await app.resource();
  const post = async (form: string): Promise<Record<string, string>> => {
    const response = await fetch(`http://127.0.0.1:${port}${DURABLE_TOKEN_PATH}`, { method: "POST", headers: FORM_HEADERS, body: form });
    if (!response.ok) throw new Error(`token request failed: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, string>;
  };
  // A few at a time: the control port fills pools between measured runs, and must not take all night.
  const each = async <T>(items: T[], f: (item: T) => Promise<string>): Promise<string[]> => {
    const out: string[] = [];
    for (let i = 0; i < items.length; i += 16) out.push(...await Promise.all(items.slice(i, i + 16).map(f)));
    return out;
  };
  const control = await listen((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const n = Number(url.searchParams.get("n") ?? 0);
    const answer = async (): Promise<unknown> => {
      if (!Number.isSafeInteger(n) || n < 0 || n > 200_000) throw new Error("n must be a count");
      if (url.pathname === "/codes") return app.issueCodes(n);
      if (url.pathname === "/refresh") {
        return each(await app.issueCodes(n), async (code) => (await post(codeExchangeBody(code))).refresh_token!);
      }
      if (url.pathname === "/access") {
        return each(Array.from({ length: n }, (_, i) => i), async () => (await post(CLIENT_CREDENTIALS_BODY)).access_token!);
      }
      if (url.pathname === "/trips") return { trips: trips.count };
      throw new Error(`unknown control path ${url.pathname}`);
    };
    answer().then(
      (value) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(value)),
      (error: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(String(error)),
    );
  });
  console.log(JSON.stringify({ port, resource, control }));
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => process.exit(0));
  // Bounded in time: a server the orchestrator left behind stops by itself.
  setTimeout(() => process.exit(0), 3_600_000).unref();
}
