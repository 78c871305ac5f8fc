// Item 10 of issue 15: the onEvent hook reports what an operator needs to see attacks and follow a grant, and
// never a secret, code or token, nor any hash of one.
import { expect, test } from "vitest";
import { type AuditEvent, passwordLogin } from "../mod.ts";
import { memoryThrottle } from "../lib/throttle.ts";
import { sha256 } from "../lib/sha256.ts";
import { codeRequest, consent, fixture, ISSUER, postToken, REDIRECT, SECRETS, spaCode, TOKEN_URL } from "./helpers.ts";

test("a whole grant's life is reported, with ids and the client's address, and no secret", async () => {
  const events: AuditEvent[] = [];
  const { server } = await fixture({ onEvent: (event) => events.push(event), throttle: memoryThrottle({ maxFailures: 2 }) });
  const { code, verifier } = await spaCode(server);
  const issued = await (await server.fetch(new Request(TOKEN_URL, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier }),
  }), { remoteAddr: { hostname: "198.51.100.7" } })).json();
  const refreshed = await (await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: issued.refresh_token })).json();
  await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: issued.refresh_token });
  await postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier });
  await postToken(server, { grant_type: "client_credentials", scope: "export", client_id: "backend", client_secret: SECRETS.backend });
  const opted = await (await postToken(server, {
    grant_type: "client_credentials", scope: "export", client_id: "backend-refresh", client_secret: SECRETS.backendRefresh,
  })).json();
  await server.fetch(new Request("https://auth.example.com/revoke", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ client_id: "backend-refresh", client_secret: SECRETS.backendRefresh, token: opted.refresh_token }),
  }));
  await consent(server, codeRequest("web"), "deny").catch(() => undefined);
  for (let i = 0; i < 3; i++) await postToken(server, { grant_type: "client_credentials", client_id: "backend", client_secret: `wrong-${i}-0123456789` });
  await server.clients.pause("other");
  await server.clients.resume("other");
  expect(await server.clients.delete("other")).toBe(true);

  const types = events.map((e) => e.type);
  for (const type of [
    "consent.granted", "code.issued", "code.redeemed", "token.refreshed", "refresh.reuse_detected", "token.issued",
    "token.revoked", "consent.denied", "request.throttled", "client.paused", "client.resumed", "client.deleted",
  ]) expect(types).toContain(type);
  const redeemed = events.find((e) => e.type === "code.redeemed")!;
  expect(typeof redeemed.grant_id).toBe("string");
  expect(events.find((e) => e.type === "code.issued")!.grant_id).toBe(redeemed.grant_id);
  expect(redeemed).toMatchObject({ client_id: "spa", user_id: "alice", address: "198.51.100.7" });
  for (const event of events) expect(typeof event.time).toBe("number");

  const text = JSON.stringify(events);
  for (const secret of [code, verifier, opted.refresh_token, opted.access_token, issued.access_token, issued.refresh_token, refreshed.access_token, refreshed.refresh_token, SECRETS.backend]) {
    expect(text).not.toContain(secret);
    expect(text).not.toContain(sha256(secret).slice(0, 8));
  }
});

test("a throwing hook does not break the request", async () => {
  const { server } = await fixture({ onEvent: () => { throw new Error("disk full"); } });
  const response = await postToken(server, { grant_type: "client_credentials", scope: "export", client_id: "backend", client_secret: SECRETS.backend });
  expect(response.status).toBe(200);
});

test("passwordLogin reports sign-ins that succeed, fail and are throttled", async () => {
  const events: AuditEvent[] = [];
  const { server } = await fixture({
    onEvent: (event) => events.push(event),
    authenticateUser: passwordLogin({
      secret: "0123456789abcdef0123456789abcdef",
      verify: (username, password) => (password === "right" ? { id: username } : null),
      throttle: memoryThrottle({ maxFailures: 2 }),
    }),
  });
  const url = `https://auth.example.com/index.php?module=OAuth2&action=authorize&${new URLSearchParams(codeRequest("web"))}`;
  const page = await server.fetch(new Request(url), { remoteAddr: { hostname: "203.0.113.9" } });
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const cookie = page.headers.getSetCookie()[0]!.split(";")[0]!;
  const login = (password: string) => server.fetch(new Request(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie },
    body: new URLSearchParams({ csrf, username: "alice", password }),
  }), { remoteAddr: { hostname: "203.0.113.9" } });
  expect((await login("right")).status).toBe(303);
  expect((await login("wrong-1")).status).toBe(401);
  expect((await login("wrong-2")).status).toBe(401);
  expect((await login("wrong-3")).status).toBe(429);
  const types = events.map((e) => e.type);
  expect(types).toContain("client.registered");
  expect(events.filter((e) => e.type !== "client.registered").map((e) => [e.type, e.user_id, e.client_id, e.address])).toEqual([
    ["signin.succeeded", "alice", "web", "203.0.113.9"],
    ["signin.failed", undefined, "web", "203.0.113.9"],
    ["signin.failed", undefined, "web", "203.0.113.9"],
    ["request.throttled", undefined, "web", "203.0.113.9"],
  ]);
  expect(JSON.stringify(events)).not.toContain("wrong-");
});

test("refresh, reuse and revocation events carry exactly the ids they know: a user's grant, or a client's own", async () => {
  const events: AuditEvent[] = [];
  const { server } = await fixture({ onEvent: (event) => events.push(event) });
  const pick = (type: string) => events.filter((e) => e.type === type).map(({ time: _, ...rest }) => rest);
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });
  // A user's grant (spa) and a client's own (backend-refresh: no user).
  const { code, verifier } = await spaCode(server);
  const user = await (await postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier })).json();
  const own = await (await postToken(server, { grant_type: "client_credentials", scope: "export" }, basic("backend-refresh", SECRETS.backendRefresh))).json();
  const grant = events.find((e) => e.type === "code.redeemed")!.grant_id!;
  const ownGrant = events.find((e) => e.type === "token.issued" && e.client_id === "backend-refresh")!.grant_id!;
  expect(typeof ownGrant).toBe("string");

  await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: user.refresh_token });
  const ownNext = await (await postToken(server, { grant_type: "refresh_token", refresh_token: own.refresh_token }, basic("backend-refresh", SECRETS.backendRefresh))).json();
  expect(pick("token.refreshed")).toEqual([
    { type: "token.refreshed", client_id: "spa", user_id: "alice", grant_id: grant },
    { type: "token.refreshed", client_id: "backend-refresh", grant_id: ownGrant },
  ]);
  await postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: user.refresh_token });
  await postToken(server, { grant_type: "refresh_token", refresh_token: own.refresh_token }, basic("backend-refresh", SECRETS.backendRefresh));
  expect(pick("refresh.reuse_detected")).toEqual([
    { type: "refresh.reuse_detected", client_id: "spa", user_id: "alice", grant_id: grant },
    { type: "refresh.reuse_detected", client_id: "backend-refresh", grant_id: ownGrant },
  ]);

  const again = await (await postToken(server, { grant_type: "client_credentials", scope: "export" }, basic("backend", SECRETS.backend))).json();
  const revoke = (token: string, id: string, secret: string) => server.fetch(new Request(`${ISSUER}/revoke`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...basic(id, secret) },
    body: new URLSearchParams({ token }),
  }));
  const second = await spaCode(server);
  const web = await (await postToken(server, { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code: second.code, code_verifier: second.verifier })).json();
  await revoke(again.access_token, "backend", SECRETS.backend);
  await server.fetch(new Request(`${ISSUER}/revoke`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ client_id: "spa", token: web.access_token }),
  }));
  expect(pick("token.revoked")).toEqual([
    { type: "token.revoked", client_id: "backend", reason: "access_token" },
    { type: "token.revoked", client_id: "spa", user_id: "alice", grant_id: events.filter((e) => e.type === "code.redeemed")[1]!.grant_id, reason: "access_token" },
  ]);
  expect(ownNext.access_token).toBeTruthy();
});
