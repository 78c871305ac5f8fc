/**
 * The storage contract test: checks that any {@link Storage} keeps the promises the server relies on, above
 * all that code redemption and refresh rotation have exactly one winner under concurrency.
 *
 * It needs no test framework: each check is a named async function that throws on failure, so it runs under
 * vitest, `bun test`, `deno test` or a plain script.
 *
 * @example
 * ```ts
 * import { storageContract } from "oauth2-fetch-server/storage-contract";
 * for (const check of storageContract(() => myStore())) test(check.name, check.run);
 * ```
 *
 * @module
 */
import type { ClientRecord, CodeRecord, IssuedTokens, Storage } from "./types.ts";

/** One named check of the contract. */
export interface ContractCheck {
  name: string;
  run(): Promise<void>;
}

/** Options of {@link storageContract}. */
export interface ContractOptions {
  /** How many concurrent callers race for one code or refresh token. Default 50. */
  concurrency?: number;
}

const T0 = 1_700_000_000_000;
let counter = 0;
const id = (prefix: string) => `${prefix}-${++counter}-${Math.random().toString(36).slice(2)}`;

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`Storage contract violated: ${message}`);
}

const client = (overrides: Partial<ClientRecord> = {}): ClientRecord => ({
  client_id: id("client"),
  name: "Contract client",
  type: "confidential",
  secret_hash: "c2VjcmV0LWhhc2g",
  redirect_uris: ["https://app.example/cb"],
  scopes: ["read"],
  grant_types: ["authorization_code", "refresh_token"],
  client_credentials_refresh_token: false,
  active: true,
  created_at: T0,
  ...overrides,
});

const code = (grant: string, expiresAt = T0 + 600_000): CodeRecord => ({
  hash: id("code"),
  grant_id: grant,
  client_id: "c",
  user_id: "u",
  redirect_uri: "https://app.example/cb",
  scope: "read",
  code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
  expires_at: expiresAt,
});

const tokens = (grant: string | undefined, refresh: boolean, expiresAt = T0 + 3_600_000): IssuedTokens => {
  const issued: IssuedTokens = { access: { hash: id("at"), client_id: "c", user_id: "u", scope: "read", expires_at: expiresAt } };
  if (grant !== undefined) issued.access.grant_id = grant;
  if (refresh && grant !== undefined) {
    issued.refresh = { hash: id("rt"), grant_id: grant, client_id: "c", user_id: "u", scope: "read", expires_at: expiresAt * 2 - T0 };
  }
  return issued;
};

/** The contract's checks for stores made by `makeStore` (a fresh store per check). */
export function storageContract(makeStore: () => Storage | Promise<Storage>, options: ContractOptions = {}): ContractCheck[] {
  const n = options.concurrency ?? 50;
  const check = (name: string, run: (store: Storage) => Promise<void>): ContractCheck => ({
    name,
    run: async () => run(await makeStore()),
  });
  return [
    check("clients: save, get, replace, pause and resume", async (store) => {
      const c = client();
      await store.saveClient(c);
      const got = await store.getClient(c.client_id);
      assert(got && got.client_id === c.client_id && got.secret_hash === c.secret_hash, "getClient returns what was saved");
      assert((await store.getClient("no-such-client")) === null, "an unknown client is null");
      await store.saveClient({ ...c, name: "Renamed" });
      assert((await store.getClient(c.client_id))?.name === "Renamed", "saveClient replaces");
      assert((await store.setClientActive(c.client_id, false))?.active === false, "pause returns the paused record");
      assert((await store.getClient(c.client_id))?.active === false, "a paused client stays paused");
      assert((await store.setClientActive(c.client_id, true))?.active === true, "resume");
      assert((await store.setClientActive("no-such-client", false)) === null, "pausing an unknown client gives null");
    }),
    check("codes: found until they expire", async (store) => {
      const c = code(id("grant"));
      await store.saveCode(c);
      assert((await store.findCode(c.hash, T0))?.scope === "read", "a saved code is found");
      assert((await store.findCode(c.hash, c.expires_at)) === null, "an expired code is not found");
      assert((await store.findCode("unknown", T0)) === null, "an unknown code is null");
    }),
    check(`codes: ${n} concurrent redemptions of one code have exactly one winner`, async (store) => {
      const grant = id("grant");
      const c = code(grant);
      await store.saveCode(c);
      const issued = Array.from({ length: n }, () => tokens(grant, true));
      const results = await Promise.all(issued.map((t) => store.redeemCode(c.hash, t, T0)));
      const winners = results.flatMap((r, i) => (r ? [i] : []));
      assert(winners.length === 1, `exactly one redemption wins (got ${winners.length})`);
      const won = issued[winners[0]!]!;
      assert(await store.findAccessToken(won.access.hash, T0), "the winner's access token is stored");
      assert(await store.findRefreshToken(won.refresh!.hash, T0), "the winner's refresh token is stored");
      for (const [i, t] of issued.entries()) {
        if (i !== winners[0]) assert((await store.findAccessToken(t.access.hash, T0)) === null, "a loser's token is not stored");
      }
      assert((await store.findCode(c.hash, T0))?.redeemed_at === T0, "the code is marked redeemed and kept");
    }),
    check("codes: an expired code cannot be redeemed", async (store) => {
      const c = code(id("grant"), T0 + 1000);
      await store.saveCode(c);
      assert((await store.redeemCode(c.hash, tokens(c.grant_id, false), T0 + 1000)) === null, "expired code refused");
    }),
    check(`refresh: ${n} concurrent rotations of one token have exactly one winner`, async (store) => {
      const grant = id("grant");
      const first = tokens(grant, true);
      await store.saveTokens(first);
      const next = Array.from({ length: n }, () => tokens(grant, true));
      const results = await Promise.all(next.map((t) => store.rotateRefreshToken(first.refresh!.hash, t, T0)));
      const winners = results.flatMap((r, i) => (r ? [i] : []));
      assert(winners.length === 1, `exactly one rotation wins (got ${winners.length})`);
      assert((await store.findRefreshToken(first.refresh!.hash, T0))?.rotated_at === T0, "the old token is marked rotated");
      assert(await store.findRefreshToken(next[winners[0]!]!.refresh!.hash, T0), "the new refresh token is stored");
      assert((await store.rotateRefreshToken(first.refresh!.hash, tokens(grant, true), T0)) === null, "no second rotation");
    }),
    check("tokens: found until they expire", async (store) => {
      const t = tokens(undefined, false);
      await store.saveTokens(t);
      assert((await store.findAccessToken(t.access.hash, T0))?.client_id === "c", "a saved access token is found");
      assert((await store.findAccessToken(t.access.hash, t.access.expires_at)) === null, "an expired one is not");
    }),
    check("revocation: revoking a grant removes its code, access and refresh tokens, and later writes", async (store) => {
      const grant = id("grant");
      const c = code(grant);
      await store.saveCode(c);
      const first = tokens(grant, true);
      assert(await store.redeemCode(c.hash, first, T0), "redeem");
      const second = tokens(grant, true);
      assert(await store.rotateRefreshToken(first.refresh!.hash, second, T0), "rotate");
      await store.revokeGrant(grant);
      assert((await store.findAccessToken(first.access.hash, T0)) === null, "first access token revoked");
      assert((await store.findAccessToken(second.access.hash, T0)) === null, "second access token revoked");
      assert((await store.findRefreshToken(second.refresh!.hash, T0)) === null, "refresh token revoked");
      assert((await store.rotateRefreshToken(second.refresh!.hash, tokens(grant, true), T0)) === null, "no rotation after");
      const late = tokens(grant, true);
      await store.saveTokens(late);
      assert((await store.findAccessToken(late.access.hash, T0)) === null, "a write after revocation is dropped");
    }),
    check("revocation: one access token, leaving the rest of its grant", async (store) => {
      const grant = id("grant");
      const a = tokens(grant, true);
      const b = tokens(grant, false);
      await store.saveTokens(a);
      await store.saveTokens(b);
      await store.revokeAccessToken(a.access.hash);
      assert((await store.findAccessToken(a.access.hash, T0)) === null, "the revoked token is gone");
      assert(await store.findAccessToken(b.access.hash, T0), "its sibling lives");
      assert(await store.findRefreshToken(a.refresh!.hash, T0), "the refresh token lives");
    }),
  ];
}
