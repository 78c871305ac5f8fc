// The copies of issued codes and refresh tokens (lib/storage/issued_records.ts): two server instances on one
// shared store, each with its own copies, as two processes on one database. Redeeming a code or rotating a
// refresh token on the instance that issued it reads nothing from the store; whatever another instance did
// meanwhile (redeemed, rotated, revoked), the answer is the one a fresh read gives. Node, Deno and Bun.
import { describe, expect, test } from "vitest";
import { type AuditEvent, createAuthorizationServer, memoryStorage, type Storage, storageContract } from "../../mod.ts";
import { issuedRecords } from "../../lib/storage/issued_records.ts";
import { codeRequest, consent, ISSUER, pkce, postToken, REDIRECT, SECRETS } from "../helpers.ts";

describe("storage contract: issuedRecords over memoryStorage", () => {
  for (const check of storageContract(() => issuedRecords(memoryStorage()))) test(check.name, check.run);
});

const VERBS = ["findCode", "redeemCode", "findRefreshToken", "rotateRefreshToken", "revokeGrant"] as const;
type Verb = (typeof VERBS)[number];

/** Counts the shared store's calls of the verbs that matter here: the round trips to "the database". */
function counted(store: Storage) {
  const calls = Object.fromEntries(VERBS.map((v) => [v, 0])) as Record<Verb, number>;
  const counting = Object.create(store) as Record<string, unknown>;
  for (const verb of VERBS) {
    const inner = (store[verb] as (...a: unknown[]) => unknown).bind(store);
    counting[verb] = (...args: unknown[]) => (calls[verb]++, inner(...args));
  }
  return { store: counting as unknown as Storage, calls, reset: () => VERBS.forEach((v) => (calls[v] = 0)) };
}

const basic = { authorization: `Basic ${btoa(`web:${SECRETS.web}`)}` };

async function twoInstances(options: { refreshGraceSeconds?: number; maxEntries?: number } = {}) {
  let now = Date.now();
  const clock = () => now;
  const shared = counted(memoryStorage({ clock }));
  const events: AuditEvent[] = [];
  const open = () => {
    const storage = issuedRecords(shared.store, { maxEntries: options.maxEntries ?? 100 });
    const server = createAuthorizationServer({
      issuer: ISSUER,
      scopes: { read: "Read your reports" },
      storage,
      clock,
      authenticateUser: () => ({ id: "alice", name: "Alice" }),
      onEvent: (event) => events.push(event),
      ...(options.refreshGraceSeconds ? { refreshGraceSeconds: options.refreshGraceSeconds } : {}),
    });
    return Object.assign(server, { storage });
  };
  const a = open();
  const b = open();
  await a.clients.register({
    client_id: "web", client_secret: SECRETS.web, name: "Web app", type: "confidential", redirect_uris: [REDIRECT], scopes: ["read"],
  });
  await a.clients.register({ client_id: "spa", name: "SPA", type: "public", redirect_uris: [REDIRECT], scopes: ["read"] });
  /** A code of `web` issued at `server`, with a PKCE pair. */
  const code = async (server = a) => {
    const { verifier, challenge } = await pkce();
    const url = await consent(server, codeRequest("web", { code_challenge: challenge, code_challenge_method: "S256" }));
    return { code: url.searchParams.get("code")!, verifier };
  };
  const exchange = (server: typeof a, issued: { code: string; verifier: string }, verifier = issued.verifier) =>
    postToken(server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code: issued.code, code_verifier: verifier });
  const refresh = (server: typeof a, token: string) =>
    postToken(server, { grant_type: "refresh_token", client_id: "web", client_secret: SECRETS.web, refresh_token: token });
  const tokens = async (response: Response) => {
    expect(response.status, await response.clone().text()).toBe(200);
    return (await response.json()) as { access_token: string; refresh_token: string };
  };
  const active = async (server: typeof a, token: string) => {
    const body = new URLSearchParams({ token });
    const response = await server.fetch(new Request(`${ISSUER}/introspect`, { method: "POST", headers: basic, body }));
    return ((await response.json()) as { active: boolean }).active;
  };
  const error = async (response: Response) => {
    const body = (await response.json()) as { error: string; error_description: string };
    return `${response.status} ${body.error}: ${body.error_description}`;
  };
  /** What happened to codes and tokens: not the registrations and consents that set each test up. */
  const types = () => events.map((e) => e.type).filter((t) => !["client.registered", "consent.granted", "code.issued"].includes(t));
  return { a, b, shared, events, types, code, exchange, refresh, tokens, active, error, advance: (ms: number) => (now += ms) };
}

test("a code redeemed and its refresh tokens rotated on the issuing instance: the only round trips are the deciding ones", async () => {
  const t = await twoInstances();
  const issued = await t.code();
  t.shared.reset();
  let current = (await t.tokens(await t.exchange(t.a, issued))).refresh_token;
  expect(t.shared.calls).toMatchObject({ findCode: 0, redeemCode: 1 });
  for (let i = 0; i < 5; i++) current = (await t.tokens(await t.refresh(t.a, current))).refresh_token;
  expect(t.shared.calls).toMatchObject({ findRefreshToken: 0, rotateRefreshToken: 5, revokeGrant: 0 });
  // On the other instance, which has no copy, each costs the read it always did; and then no copy goes stale:
  // the token the other instance issued is its to serve, and the spent one is read from the store.
  t.shared.reset();
  current = (await t.tokens(await t.refresh(t.b, current))).refresh_token;
  expect(t.shared.calls).toMatchObject({ findRefreshToken: 1, rotateRefreshToken: 1 });
  const other = await t.code();
  t.shared.reset();
  await t.tokens(await t.exchange(t.b, other));
  expect(t.shared.calls).toMatchObject({ findCode: 1, redeemCode: 1 });
});

test("a code replayed on the instance that issued it, after another instance redeemed it: a replay, and its tokens are revoked", async () => {
  const t = await twoInstances();
  const issued = await t.code();
  const first = await t.tokens(await t.exchange(t.b, issued));
  expect(await t.error(await t.exchange(t.a, issued))).toBe("400 invalid_grant: The authorization code was already used");
  expect(await t.active(t.a, first.access_token)).toBe(false);
  expect(await t.active(t.b, first.refresh_token)).toBe(false);
  expect(t.types()).toEqual(["code.redeemed", "code.replayed"]);
});

test("a code spent on the issuing instance is read from the store when it comes back: the copy went with it", async () => {
  const t = await twoInstances();
  const issued = await t.code();
  await t.tokens(await t.exchange(t.a, issued));
  t.shared.reset();
  expect(await t.error(await t.exchange(t.a, issued))).toBe("400 invalid_grant: The authorization code was already used");
  expect(t.shared.calls).toMatchObject({ findCode: 1, redeemCode: 0, revokeGrant: 1 });
});

test("a code whose grant was revoked elsewhere: invalid on the issuing instance, as the store says, and no replay is reported", async () => {
  const t = await twoInstances();
  const issued = await t.code();
  const grant = (await t.shared.store.findCode(await hashOf(issued.code), t.advance(0)))!.grant_id;
  await t.b.storage.revokeGrant(grant);
  // What the copy would say (a wrong verifier) is not the answer either: the store's is.
  const { verifier: wrong } = await pkce();
  expect(await t.error(await t.exchange(t.a, issued, wrong))).toBe("400 invalid_grant: The authorization code is invalid or has expired");
  expect(await t.error(await t.exchange(t.a, issued))).toBe("400 invalid_grant: The authorization code is invalid or has expired");
  expect(t.types()).toEqual([]);
});

test("a wrong verifier on the issuing instance spends nothing: the right one then works", async () => {
  const t = await twoInstances();
  const issued = await t.code();
  const { verifier: wrong } = await pkce();
  expect(await t.error(await t.exchange(t.a, issued, wrong))).toBe("400 invalid_grant: PKCE verification failed");
  await t.tokens(await t.exchange(t.a, issued));
  expect(t.types()).toEqual(["code.redeemed"]);
});

test("a refresh token reused on the instance that issued it, after another instance rotated it: reuse, and the grant is revoked", async () => {
  const t = await twoInstances();
  const first = await t.tokens(await t.exchange(t.a, await t.code()));
  const next = await t.tokens(await t.refresh(t.b, first.refresh_token));
  expect(await t.error(await t.refresh(t.a, first.refresh_token))).toBe("400 invalid_grant: The refresh token was already used");
  expect(await t.active(t.b, next.refresh_token)).toBe(false);
  expect(t.types()).toEqual(["code.redeemed", "token.refreshed", "refresh.reuse_detected"]);
});

test("a refresh token whose grant another instance revoked: invalid on the issuing instance, and no reuse is reported", async () => {
  const t = await twoInstances();
  const first = await t.tokens(await t.exchange(t.a, await t.code()));
  const revoked = await t.b.fetch(new Request(`${ISSUER}/revoke`, { method: "POST", headers: basic, body: new URLSearchParams({ token: first.refresh_token }) }));
  expect(revoked.status).toBe(200);
  // Every read but the one before a decision goes to the store: introspection says so at once, on either instance.
  expect(await t.active(t.a, first.refresh_token)).toBe(false);
  expect(await t.error(await t.refresh(t.a, first.refresh_token))).toBe("400 invalid_grant: The refresh token is invalid, expired or revoked");
  expect(t.types()).not.toContain("refresh.reuse_detected");
});

test("inside a grace window, a retry on the issuing instance after another instance rotated gets that same successor", async () => {
  const t = await twoInstances({ refreshGraceSeconds: 10 });
  const first = await t.tokens(await t.exchange(t.a, await t.code()));
  const next = await t.tokens(await t.refresh(t.b, first.refresh_token));
  const retry = await t.tokens(await t.refresh(t.a, first.refresh_token));
  expect(retry.refresh_token).toBe(next.refresh_token);
  expect(t.types()).not.toContain("refresh.reuse_detected");
});

test("an expired code's copy is not tried: the store is read, and says so", async () => {
  const t = await twoInstances();
  const issued = await t.code();
  t.advance(3_600_000);
  t.shared.reset();
  expect(await t.error(await t.exchange(t.a, issued))).toBe("400 invalid_grant: The authorization code is invalid or has expired");
  expect(t.shared.calls).toMatchObject({ findCode: 1, redeemCode: 0 });
});

test("copies are bounded: past maxEntries the oldest code is read from the store, and still redeems", async () => {
  const t = await twoInstances({ maxEntries: 2 });
  const codes = [await t.code(), await t.code(), await t.code()];
  t.shared.reset();
  await t.tokens(await t.exchange(t.a, codes[0]!));
  expect(t.shared.calls.findCode).toBe(1);
  await t.tokens(await t.exchange(t.a, codes[2]!));
  expect(t.shared.calls.findCode).toBe(1);
});

async function hashOf(value: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value)));
  return btoa(String.fromCharCode(...digest)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
}
