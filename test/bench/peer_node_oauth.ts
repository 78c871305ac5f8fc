/**
 * @node-oauth/oauth2-server (a devDependency) on one store, for the durable-store rows (`durable.ts`):
 *
 *   node peer_node_oauth.js --store memory|postgres://…|redis://… [--pool 10]
 *
 * The library's token endpoint and `authenticate` on node:http, with the model of `peer_adapters.ts`. Options
 * are its defaults, except that the public client needs no secret for the code and refresh grants (it proves
 * itself with PKCE). Codes are saved through the model as its authorize handler would save them.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import OAuth2Server from "@node-oauth/oauth2-server";
import { arg, kindOf, openPostgres, openRedis, trips } from "./drivers.ts";
import { body, listen, serveDurable } from "./durable_server.ts";
import { CHALLENGE, REDIRECT } from "./fixture.ts";
import { noMemory, noPostgres, noRedis, type NoStore, type NoToken, secretMatches } from "./peer_adapters.ts";

const { Request, Response } = OAuth2Server;
const url = arg("store");
const kind = kindOf(url);
const store: NoStore = kind === "memory"
  ? noMemory()
  : kind === "postgres"
  ? await noPostgres(openPostgres(url, Number(arg("pool", "10"))).query)
  : kind === "redis"
  ? await noRedis(openRedis(url).redis, () => void trips.count++)
  : (() => {
    throw new Error("node-oauth runs on memory, postgres://… or redis://…");
  })();

type Client = OAuth2Server.Client & { scopes: string[] };
const asClient = (c: { id: string; redirectUris: string[]; grants: string[]; scopes: string[] }): Client =>
  ({ id: c.id, redirectUris: c.redirectUris, grants: c.grants, scopes: c.scopes });
const user = (id: string) => ({ id });

/** The model, as the library's documentation describes each method. */
const model: OAuth2Server.AuthorizationCodeModel & OAuth2Server.ClientCredentialsModel & OAuth2Server.RefreshTokenModel = {
  async getClient(clientId, clientSecret) {
    const client = await store.client(clientId);
    return client && secretMatches(client, clientSecret) ? asClient(client) : false;
  },
  async saveToken(token, client, u) {
    const access: NoToken = { value: token.accessToken, expiresAt: token.accessTokenExpiresAt!.getTime(), scope: (token.scope ?? []).join(" "), clientId: client.id, userId: String(u.id) };
    const refresh: NoToken | undefined = token.refreshToken
      ? { ...access, value: token.refreshToken, expiresAt: token.refreshTokenExpiresAt!.getTime() }
      : undefined;
    await store.saveToken(access, refresh);
    return { ...token, client, user: u };
  },
  async getAccessToken(value) {
    const t = await store.access(value);
    return t ? { accessToken: t.value, accessTokenExpiresAt: new Date(t.expiresAt), scope: t.scope.split(" "), client: { id: t.clientId, grants: [] }, user: user(t.userId) } : false;
  },
  async getRefreshToken(value) {
    const t = await store.refresh(value);
    return t ? { refreshToken: t.value, refreshTokenExpiresAt: new Date(t.expiresAt), scope: t.scope.split(" "), client: { id: t.clientId, grants: [] }, user: user(t.userId) } : false;
  },
  revokeToken: (token) => store.revokeRefresh(token.refreshToken),
  async saveAuthorizationCode(code, client, u) {
    await store.saveCode({
      value: code.authorizationCode, expiresAt: code.expiresAt.getTime(), scope: (code.scope ?? []).join(" "), clientId: client.id,
      userId: String(u.id), redirectUri: code.redirectUri, ...(code.codeChallenge ? { challenge: code.codeChallenge } : {}),
    });
    return { ...code, client, user: u };
  },
  async getAuthorizationCode(value) {
    const c = await store.code(value);
    if (!c) return false;
    return {
      authorizationCode: c.value, expiresAt: new Date(c.expiresAt), redirectUri: c.redirectUri!, scope: c.scope.split(" "),
      client: { id: c.clientId, grants: [] }, user: user(c.userId),
      ...(c.challenge ? { codeChallenge: c.challenge, codeChallengeMethod: "S256" } : {}),
    };
  },
  revokeAuthorizationCode: (code) => store.revokeCode(code.authorizationCode),
  getUserFromClient: (client) => Promise.resolve(user(`client:${client.id}`)),
  validateScope(_user, client, scope) {
    const asked = scope ?? [];
    const allowed = (client as Client).scopes ?? [];
    return Promise.resolve(asked.length > 0 && asked.every((s) => allowed.includes(s)) ? asked : false);
  },
  verifyScope: (token, scope) => Promise.resolve(scope.every((s) => (token.scope ?? []).includes(s))),
};

const oauth = new OAuth2Server({ model, requireClientAuthentication: { authorization_code: false, refresh_token: false } });

/** Writes the library's response; an error it threw becomes its status and error body. */
function send(res: ServerResponse, r: OAuth2Server.Response, error?: unknown): void {
  const e = error as { code?: number; name?: string; message?: string } | undefined;
  const status = e ? e.code ?? 500 : r.status ?? 200;
  const payload = e ? { error: e.name ?? "server_error", error_description: e.message ?? "" } : r.body;
  res.writeHead(status, { ...(r.headers as Record<string, string>), "content-type": "application/json" }).end(JSON.stringify(payload ?? {}));
}

const headersOf = (req: IncomingMessage) => req.headers as Record<string, string>;

await serveDurable({
  token: () =>
    listen((req, res) => {
      body(req).then(async (text) => {
        const request = new Request({ method: "POST", query: {}, headers: headersOf(req), body: Object.fromEntries(new URLSearchParams(text)) });
        const response = new Response();
        const error = await oauth.token(request, response).then(() => undefined, (e: unknown) => e);
        send(res, response, error);
      }, () => res.writeHead(400).end());
    }),
  resource: () =>
    listen((req, res) => {
      const request = new Request({ method: "GET", query: {}, headers: headersOf(req), body: {} });
      const response = new Response();
      oauth.authenticate(request, response, { scope: ["read"] }).then(
        (token) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ client_id: token.client.id })),
        (error: { code?: number }) => res.writeHead(error.code ?? 500).end(),
      );
    }),
  issueCodes: async (n) => {
    const client = asClient((await store.client("bench-spa"))!);
    const codes: string[] = [];
    for (let i = 0; i < n; i++) {
      const code = randomBytes(20).toString("hex");
      await model.saveAuthorizationCode({
        authorizationCode: code, expiresAt: new Date(Date.now() + 600_000), redirectUri: REDIRECT, scope: ["read"],
        codeChallenge: CHALLENGE, codeChallengeMethod: "S256",
      }, client, user(`bench-user-${i}`));
      codes.push(code);
    }
    return codes;
  },
});
