/**
 * The storage contract test: checks that any {@link Storage} keeps the promises the server relies on, above
 * all that code redemption and refresh rotation have exactly one winner under concurrency.
 *
 * It needs no test framework: each check is a named async function that throws on failure, so it runs under
 * vitest, `bun test`, `deno test` or a plain script.
 *
 * @example
 * ```ts
 * import { storageContract } from "oauth2-fetch-server/storage/contract";
 * for (const check of storageContract(() => myStore())) test(check.name, check.run);
 * ```
 *
 * @module
 */
import type { ClientRecord, CodeRecord, DeviceAuthorizationRecord, GrantRecord, IssuedTokens, Storage } from "./types.ts";

// The interface the checks take and its records, so that a third-party store can import them with the contract.
export type {
  AccessTokenRecord,
  ClientOrigin,
  ClientRecord,
  CodeRecord,
  DeviceAuthorizationRecord,
  DeviceDecision,
  DevicePoll,
  GrantRecord,
  GrantType,
  IssuedTokens,
  RefreshTokenRecord,
  Storage,
} from "./types.ts";

/** One named check of the contract. */
export interface ContractCheck {
  /** What the check proves, as a test title. */
  name: string;
  /** Runs the check on a fresh store; rejects with the violated rule. */
  run(): Promise<void>;
}

/** Options of {@link storageContract}. */
export interface ContractOptions {
  /** How many concurrent callers race for one code or refresh token. Default 50. */
  concurrency?: number;
  /**
   * The store deletes expired records by itself (Redis TTLs), so {@link Storage.purgeExpired} may return 0
   * and is not required to have deleted anything. Default false.
   */
  expiresByItself?: boolean;
}

/**
 * The contract's "now": the real time when the module loads, so that a store which hands expiry to its
 * database (Redis PEXPIREAT, SQL jobs) sees records that are live for real, and every check passes times
 * explicitly.
 */
const T0 = Math.floor(Date.now() / 1000) * 1000;
const MINUTE = 60_000;
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

const code = (grant: string, expiresAt = T0 + 600_000, clientId = "c", userId = "u"): CodeRecord => ({
  hash: id("code"),
  grant_id: grant,
  client_id: clientId,
  user_id: userId,
  redirect_uri: "https://app.example/cb",
  scope: "read",
  code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
  expires_at: expiresAt,
});

const tokens = (
  grant: string | undefined,
  refresh: boolean,
  expiresAt = T0 + 3_600_000,
  clientId = "c",
  userId: string | undefined = "u",
): IssuedTokens => {
  const issued: IssuedTokens = { access: { hash: id("at"), client_id: clientId, scope: "read", expires_at: expiresAt } };
  if (userId !== undefined) issued.access.user_id = userId;
  if (grant !== undefined) issued.access.grant_id = grant;
  if (refresh && grant !== undefined) {
    issued.refresh = { hash: id("rt"), grant_id: grant, client_id: clientId, scope: "read", expires_at: expiresAt * 2 - T0 };
    if (userId !== undefined) issued.refresh.user_id = userId;
  }
  return issued;
};

const device = (grant: string, codesExpireAt = T0 + 600_000): DeviceAuthorizationRecord => ({
  hash: id("device"),
  user_code_hash: id("user-code"),
  client_id: "c",
  scope: "read",
  resource: ["https://api.example/"],
  grant_id: grant,
  created_at: T0,
  codes_expire_at: codesExpireAt,
  expires_at: codesExpireAt + 600_000,
  interval: 5000,
  status: "pending",
});

/** Who won a race: the indexes of the callers that got a non-null answer. */
const winnersOf = (results: unknown[]): number[] => results.flatMap((r, i) => (r ? [i] : []));

/** The contract's checks for stores made by `makeStore` (a fresh store per check). */
export function storageContract(makeStore: () => Storage | Promise<Storage>, options: ContractOptions = {}): ContractCheck[] {
  const n = options.concurrency ?? 50;
  const purgeCounts = options.expiresByItself !== true;
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
      await store.saveTokens(first, T0);
      const next = Array.from({ length: n }, () => tokens(grant, true));
      const results = await Promise.all(next.map((t) => store.rotateRefreshToken(first.refresh!.hash, t, T0)));
      const winners = results.flatMap((r, i) => (r ? [i] : []));
      assert(winners.length === 1, `exactly one rotation wins (got ${winners.length})`);
      assert((await store.findRefreshToken(first.refresh!.hash, T0))?.rotated_at === T0, "the old token is marked rotated");
      assert(await store.findRefreshToken(next[winners[0]!]!.refresh!.hash, T0), "the new refresh token is stored");
      assert((await store.rotateRefreshToken(first.refresh!.hash, tokens(grant, true), T0)) === null, "no second rotation");
    }),
    check("device: saved pending, found by user code until it expires; a live user code is never given twice", async (store) => {
      const d = device(id("grant"));
      assert(await store.saveDeviceAuthorization(d, T0), "a new device authorization is stored");
      const found = await store.findDeviceAuthorization(d.user_code_hash, T0);
      assert(found?.status === "pending" && found.hash === d.hash && found.client_id === "c", "found pending by its user code");
      assert(found.resource?.[0] === "https://api.example/" && found.interval === 5000, "its resource and interval kept");
      assert(found.last_polled_at === undefined && found.user_id === undefined, "no poll and no user yet (absent, not null)");
      assert(!(await store.saveDeviceAuthorization({ ...d, hash: id("device") }, T0)), "the same live user code is refused");
      assert((await store.findDeviceAuthorization(d.user_code_hash, d.expires_at)) === null, "not found once expired");
      assert((await store.findDeviceAuthorization("unknown", T0)) === null, "an unknown user code is null");
      const again = { ...d, hash: id("device"), expires_at: d.expires_at + MINUTE };
      assert(await store.saveDeviceAuthorization(again, d.expires_at), "an expired holder gives its user code up");
      assert((await store.findDeviceAuthorization(d.user_code_hash, d.expires_at))?.hash === again.hash, "to the new record");
    }),
    check(`device: ${n} concurrent decisions have exactly one winner, and only while the codes live`, async (store) => {
      const d = device(id("grant"));
      await store.saveDeviceAuthorization(d, T0);
      const results = await Promise.all(Array.from({ length: n }, (_, i) =>
        store.decideDeviceAuthorization(d.user_code_hash, { approved: i % 2 === 0, user_id: `u${i}`, auth_time: 1 }, T0)));
      const winners = winnersOf(results);
      assert(winners.length === 1, `exactly one decision wins (got ${winners.length})`);
      const w = winners[0]!;
      const stored = await store.findDeviceAuthorization(d.user_code_hash, T0);
      assert(stored?.status === (w % 2 === 0 ? "approved" : "denied") && stored.user_id === `u${w}`, "the winner's decision is kept");
      assert(stored.auth_time === 1, "with its auth_time");
      const late = device(id("grant"), T0 + 1000);
      await store.saveDeviceAuthorization(late, T0);
      assert((await store.decideDeviceAuthorization(late.user_code_hash, { approved: true, user_id: "u" }, T0 + 1000)) === null,
        "no decision once the codes expired");
    }),
    check("device: a poll sooner than the interval is slow_down and adds 5 s; concurrent polls slow all but one", async (store) => {
      const d = device(id("grant"));
      await store.saveDeviceAuthorization(d, T0);
      const first = await store.pollDeviceAuthorization(d.hash, T0);
      assert(first && !first.slow_down && first.record.last_polled_at === T0, "the first poll is in time");
      const early = await store.pollDeviceAuthorization(d.hash, T0 + 4999);
      assert(early?.slow_down === true && early.record.interval === 10_000, "4999 ms later: slow_down, interval 10 s");
      const still = await store.pollDeviceAuthorization(d.hash, T0 + 4999 + 9999);
      assert(still?.slow_down === true && still.record.interval === 15_000, "measured from the last poll, with the new interval");
      const late = await store.pollDeviceAuthorization(d.hash, T0 + 4999 + 9999 + 15_000);
      assert(late?.slow_down === false && late.record.interval === 15_000, "a poll after the interval is in time");
      const racing = await Promise.all(Array.from({ length: n }, () => store.pollDeviceAuthorization(d.hash, T0 + 100_000)));
      const inTime = racing.filter((r) => r && !r.slow_down).length;
      assert(inTime === 1, `of ${n} polls at once, exactly one is in time (got ${inTime})`);
      assert((await store.pollDeviceAuthorization("unknown", T0)) === null, "an unknown device code is null");
      assert((await store.pollDeviceAuthorization(d.hash, d.expires_at)) === null, "an expired record is null");
    }),
    check(`device: ${n} concurrent redemptions of an approved device authorization have exactly one winner`, async (store) => {
      const grant = id("grant");
      const d = device(grant);
      await store.saveDeviceAuthorization(d, T0);
      assert((await store.redeemDeviceAuthorization(d.hash, tokens(grant, true), T0)) === null, "a pending one is not redeemed");
      await store.decideDeviceAuthorization(d.user_code_hash, { approved: true, user_id: "u" }, T0);
      const issued = Array.from({ length: n }, () => tokens(grant, true));
      const results = await Promise.all(issued.map((t) => store.redeemDeviceAuthorization(d.hash, t, T0)));
      const winners = winnersOf(results);
      assert(winners.length === 1, `exactly one redemption wins (got ${winners.length})`);
      assert(results[winners[0]!]?.user_id === "u" && results[winners[0]!]?.status === "approved", "the winner gets the record as it was");
      const won = issued[winners[0]!]!;
      assert(await store.findAccessToken(won.access.hash, T0), "the winner's access token is stored");
      assert(await store.findRefreshToken(won.refresh!.hash, T0), "the winner's refresh token is stored");
      for (const [i, t] of issued.entries()) {
        if (i !== winners[0]) assert((await store.findAccessToken(t.access.hash, T0)) === null, "a loser's token is not stored");
      }
      assert((await store.findDeviceAuthorization(d.user_code_hash, T0))?.status === "redeemed", "the record is marked redeemed");
      const listed = (await store.listGrants("u", T0)).find((g) => g.grant_id === grant);
      assert(listed?.client_id === "c" && listed.user_id === "u" && listed.scope === "read", "the grant is listed for the user");
      const denied = device(id("grant"));
      await store.saveDeviceAuthorization(denied, T0);
      await store.decideDeviceAuthorization(denied.user_code_hash, { approved: false, user_id: "u" }, T0);
      assert((await store.redeemDeviceAuthorization(denied.hash, tokens(denied.grant_id, false), T0)) === null, "a denied one is not");
      const late = device(id("grant"), T0 + 1000);
      await store.saveDeviceAuthorization(late, T0);
      await store.decideDeviceAuthorization(late.user_code_hash, { approved: true, user_id: "u" }, T0);
      assert((await store.redeemDeviceAuthorization(late.hash, tokens(late.grant_id, false), T0 + 1000)) === null,
        "an approved one whose codes expired is not");
      const revoked = device(id("grant"));
      await store.saveDeviceAuthorization(revoked, T0);
      await store.decideDeviceAuthorization(revoked.user_code_hash, { approved: true, user_id: "u" }, T0);
      await store.revokeGrant(revoked.grant_id);
      const lost = tokens(revoked.grant_id, false);
      assert((await store.redeemDeviceAuthorization(revoked.hash, lost, T0)) === null, "one whose grant was revoked is not");
      assert((await store.findAccessToken(lost.access.hash, T0)) === null, "and stores nothing");
    }),
    check("tokens: found until they expire", async (store) => {
      const t = tokens(undefined, false);
      await store.saveTokens(t, T0);
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
      await store.saveTokens(late, T0);
      assert((await store.findAccessToken(late.access.hash, T0)) === null, "a write after revocation is dropped");
      const lateCode = code(grant);
      await store.saveCode(lateCode);
      assert((await store.findCode(lateCode.hash, T0)) === null, "a code saved after revocation is dropped");
      assert((await store.listGrants("u", T0)).every((g) => g.grant_id !== grant), "a revoked grant is not listed");
      await store.revokeGrant(id("never-issued"));
      const early = id("grant");
      await store.revokeGrant(early);
      const afterEarly = tokens(early, true);
      await store.saveTokens(afterEarly, T0);
      assert((await store.findAccessToken(afterEarly.access.hash, T0)) === null, "a grant revoked before any write stays revoked");
    }),
    check("revocation: one access token, leaving the rest of its grant", async (store) => {
      const grant = id("grant");
      const a = tokens(grant, true);
      const b = tokens(grant, false);
      await store.saveTokens(a, T0);
      await store.saveTokens(b, T0);
      await store.revokeAccessToken(a.access.hash);
      assert((await store.findAccessToken(a.access.hash, T0)) === null, "the revoked token is gone");
      assert(await store.findAccessToken(b.access.hash, T0), "its sibling lives");
      assert(await store.findRefreshToken(a.refresh!.hash, T0), "the refresh token lives");
    }),
    check("clients: new fields round-trip, and every client is listed", async (store) => {
      const c = client({
        default_scope: "read",
        introspection: "all",
        origin: "registration",
        metadata: { client_uri: "https://app.example", contacts: ["ops@app.example"], application_type: "web" },
      });
      const plain = client();
      await store.saveClient(c);
      await store.saveClient(plain);
      const got = await store.getClient(c.client_id);
      assert(got?.default_scope === "read" && got.introspection === "all" && got.origin === "registration", "fields kept");
      assert(JSON.stringify(got.metadata) === JSON.stringify(c.metadata), "metadata kept as given");
      const bare = await store.getClient(plain.client_id);
      assert(bare && !("metadata" in bare) && !("default_scope" in bare), "absent optional fields stay absent");
      const listed = (await store.listClients()).map((x) => x.client_id);
      assert(listed.includes(c.client_id) && listed.includes(plain.client_id), "listClients lists both");
    }),
    check("clients: storing tokens sets last_used_at, at least once a minute", async (store) => {
      const c = client({ grant_types: ["client_credentials"] });
      await store.saveClient(c);
      await store.saveTokens(tokens(undefined, false, T0 + 3_600_000, c.client_id, undefined), T0);
      assert((await store.getClient(c.client_id))?.last_used_at === T0, "set on the first tokens");
      await store.saveTokens(tokens(undefined, false, T0 + 3_600_000, c.client_id, undefined), T0 + MINUTE + 1);
      assert((await store.getClient(c.client_id))?.last_used_at === T0 + MINUTE + 1, "set again a minute later");
      await store.saveTokens(tokens(undefined, false, T0 + 3_600_000, "no-such-client", undefined), T0);
      assert((await store.getClient("no-such-client")) === null, "tokens of an unknown client create no client");
    }),
    check("clients: deleteClient revokes every grant, code and token of the client, and no other", async (store) => {
      const c = client();
      const other = client();
      await store.saveClient(c);
      await store.saveClient(other);
      const grant = id("grant");
      const redeemed = code(grant, T0 + 600_000, c.client_id);
      await store.saveCode(redeemed);
      const issued = tokens(grant, true, T0 + 3_600_000, c.client_id);
      assert(await store.redeemCode(redeemed.hash, issued, T0), "redeem");
      const pending = code(id("grant"), T0 + 600_000, c.client_id);
      await store.saveCode(pending);
      const own = tokens(undefined, false, T0 + 3_600_000, c.client_id, undefined);
      await store.saveTokens(own, T0);
      const ccGrant = id("grant");
      const ccRefresh = tokens(ccGrant, true, T0 + 3_600_000, c.client_id, undefined);
      await store.saveTokens(ccRefresh, T0);
      const theirs = tokens(id("grant"), true, T0 + 3_600_000, other.client_id);
      await store.saveTokens(theirs, T0);
      assert((await store.deleteClient(c.client_id)) === true, "deleting an existing client gives true");
      assert((await store.getClient(c.client_id)) === null, "the client is gone");
      assert((await store.findAccessToken(issued.access.hash, T0)) === null, "its user's access token is revoked");
      assert((await store.findRefreshToken(issued.refresh!.hash, T0)) === null, "its refresh token is revoked");
      assert((await store.findCode(pending.hash, T0)) === null, "its unredeemed code is gone");
      assert((await store.findAccessToken(own.access.hash, T0)) === null, "its grantless client_credentials token is gone");
      assert((await store.findRefreshToken(ccRefresh.refresh!.hash, T0)) === null, "its client_credentials grant is gone");
      assert((await store.listGrants("u", T0)).every((g) => g.client_id !== c.client_id), "no grant of it is listed");
      assert(await store.findAccessToken(theirs.access.hash, T0), "another client's token lives");
      assert(await store.getClient(other.client_id), "another client lives");
      assert((await store.deleteClient(c.client_id)) === false, "deleting it again gives false");
    }),
    check("clients: revokeClientGrants revokes the grants and tokens but keeps the client", async (store) => {
      const c = client();
      await store.saveClient(c);
      const issued = [1, 2, 3].map(() => tokens(id("grant"), true, T0 + 3_600_000, c.client_id));
      for (const t of issued) {
        const k = code(t.access.grant_id!, T0 + 600_000, c.client_id);
        await store.saveCode(k);
        assert(await store.redeemCode(k.hash, t, T0), "redeem");
      }
      const own = tokens(undefined, false, T0 + 3_600_000, c.client_id, undefined);
      await store.saveTokens(own, T0);
      assert((await store.revokeClientGrants(c.client_id)) === 3, "three grants revoked");
      for (const t of issued) assert((await store.findRefreshToken(t.refresh!.hash, T0)) === null, "refresh revoked");
      assert((await store.findAccessToken(own.access.hash, T0)) === null, "client_credentials token revoked");
      assert((await store.getClient(c.client_id))?.active === true, "the client stays");
      assert((await store.revokeClientGrants(c.client_id)) === 0, "nothing left to revoke");
    }),
    check("resource: the RFC 8707 audiences round-trip on codes, tokens and grants", async (store) => {
      const grant = id("grant");
      const resource = ["https://api.example/", "https://mcp.example/mcp"];
      const c = { ...code(grant), resource };
      await store.saveCode(c);
      assert(JSON.stringify((await store.findCode(c.hash, T0))?.resource) === JSON.stringify(resource), "code");
      const t = tokens(grant, true);
      t.access.resource = resource;
      t.refresh!.resource = resource;
      assert(await store.redeemCode(c.hash, t, T0), "redeem");
      assert(JSON.stringify((await store.findAccessToken(t.access.hash, T0))?.resource) === JSON.stringify(resource), "access");
      assert(JSON.stringify((await store.findRefreshToken(t.refresh!.hash, T0))?.resource) === JSON.stringify(resource), "refresh");
      const listed = (await store.listGrants("u", T0)).find((g) => g.grant_id === grant);
      assert(JSON.stringify(listed?.resource) === JSON.stringify(resource), "grant");
      const plain = code(id("grant"));
      await store.saveCode(plain);
      assert(!("resource" in (await store.findCode(plain.hash, T0))!), "no resource stays absent");
    }),
    check("optional fields: jkt, act and auth_time round-trip on tokens (issue, redemption, rotation), dpop_jkt and auth_time on codes; absent stays absent", async (store) => {
      // A store that drops `jkt` turns a DPoP-bound token (RFC 9449 §6) into a bearer token.
      const bound = (t: IssuedTokens, tag: string): IssuedTokens => {
        const fields = { jkt: `jkt-${tag}-0123456789abcdefghijklmnopqrstuv`, act: { sub: `agent-${tag}`, act: { sub: "origin" } }, auth_time: 1_700_000_000 };
        Object.assign(t.access, fields);
        if (t.refresh) Object.assign(t.refresh, { ...fields, act: { sub: `agent-${tag}` }, auth_time: 1_700_000_001 });
        return t;
      };
      const same = (got: object | null | undefined, want: object, what: string): void => {
        for (const field of ["jkt", "act", "auth_time"]) {
          const [a, b] = [JSON.stringify((got as Record<string, unknown> | null)?.[field]), JSON.stringify((want as Record<string, unknown>)[field])];
          assert(a === b, `${what} keeps ${field} (got ${a}, want ${b})`);
        }
      };
      const none = (got: object | null, what: string, fields: string[]): void => {
        assert(got, `${what} is found`);
        for (const field of fields) assert(!(field in got), `${what} without ${field} has no ${field} member`);
      };
      const grant = id("grant");
      const c: CodeRecord = { ...code(grant), dpop_jkt: "code-jkt-0123456789abcdefghijklmnopqrstuvwx", auth_time: 1_700_000_002 };
      await store.saveCode(c);
      const found = await store.findCode(c.hash, T0);
      assert(found?.dpop_jkt === c.dpop_jkt && found?.auth_time === c.auth_time, "findCode keeps dpop_jkt and auth_time");
      const redeemed = bound(tokens(grant, true), "redeem");
      const won = await store.redeemCode(c.hash, redeemed, T0);
      assert(won?.dpop_jkt === c.dpop_jkt && won?.auth_time === c.auth_time, "redeemCode returns dpop_jkt and auth_time");
      same(await store.findAccessToken(redeemed.access.hash, T0), redeemed.access, "a redeemed access token");
      same(await store.findRefreshToken(redeemed.refresh!.hash, T0), redeemed.refresh!, "a redeemed refresh token");
      const rotated = bound(tokens(grant, true), "rotate");
      same(await store.rotateRefreshToken(redeemed.refresh!.hash, rotated, T0 + 1000), redeemed.refresh!, "the rotated token returned");
      same(await store.findAccessToken(rotated.access.hash, T0), rotated.access, "a rotation's access token");
      same(await store.findRefreshToken(rotated.refresh!.hash, T0), rotated.refresh!, "a rotation's refresh token");
      const alone = bound(tokens(undefined, false), "alone");
      await store.saveTokens(alone, T0);
      same(await store.findAccessToken(alone.access.hash, T0), alone.access, "a saved access token without a grant");
      const saved = bound(tokens(id("grant"), true), "saved");
      await store.saveTokens(saved, T0);
      same(await store.findAccessToken(saved.access.hash, T0), saved.access, "a saved access token");
      same(await store.findRefreshToken(saved.refresh!.hash, T0), saved.refresh!, "a saved refresh token");
      const plainGrant = id("grant");
      const plainCode = code(plainGrant);
      await store.saveCode(plainCode);
      none(await store.findCode(plainCode.hash, T0), "a code", ["dpop_jkt", "auth_time"]);
      const plain = tokens(plainGrant, true);
      none(await store.redeemCode(plainCode.hash, plain, T0), "a redeemed code", ["dpop_jkt", "auth_time"]);
      none(await store.findAccessToken(plain.access.hash, T0), "an access token", ["jkt", "act", "auth_time"]);
      const next = tokens(plainGrant, true);
      none(await store.rotateRefreshToken(plain.refresh!.hash, next, T0 + 1000), "a rotated refresh token", ["jkt", "act", "auth_time"]);
      none(await store.findRefreshToken(next.refresh!.hash, T0), "a refresh token", ["jkt", "act", "auth_time"]);
    }),
    check("grants: a redemption creates a listed grant; rotation touches it; expiry and revocation unlist it", async (store) => {
      const user = id("user");
      const grant = id("grant");
      const c = code(grant, T0 + 600_000, "c", user);
      await store.saveCode(c);
      assert((await store.listGrants(user, T0)).length === 0, "an unredeemed code is no grant yet");
      const first = tokens(grant, true, T0 + 3_600_000, "c", user);
      assert(await store.redeemCode(c.hash, first, T0), "redeem");
      const listed = await store.listGrants(user, T0);
      const expected: GrantRecord = {
        grant_id: grant, client_id: "c", user_id: user, scope: "read",
        created_at: T0, last_used_at: T0, expires_at: first.refresh!.expires_at,
      };
      assert(listed.length === 1, `one grant listed (got ${listed.length})`);
      for (const [key, value] of Object.entries(expected)) {
        assert(listed[0]![key as keyof GrantRecord] === value, `grant field ${key} is ${String(value)}`);
      }
      assert((await store.listGrants(id("user"), T0)).length === 0, "another user has none");
      const second = tokens(grant, true, T0 + 7_200_000, "c", user);
      assert(await store.rotateRefreshToken(first.refresh!.hash, second, T0 + 1000), "rotate");
      const touched = (await store.listGrants(user, T0 + 1000))[0];
      assert(touched?.last_used_at === T0 + 1000 && touched.created_at === T0, "rotation sets last_used_at");
      assert(touched.expires_at >= second.refresh!.expires_at, "the grant lives as long as its newest token");
      assert((await store.listGrants(user, touched.expires_at)).length === 0, "an expired grant is not listed");
      await store.revokeGrant(grant);
      assert((await store.listGrants(user, T0)).length === 0, "a revoked grant is not listed");
    }),
    check("grants: a client_credentials refresh token creates a grant of the client alone", async (store) => {
      const c = client({ grant_types: ["client_credentials", "refresh_token"], client_credentials_refresh_token: true });
      await store.saveClient(c);
      const t = tokens(id("grant"), true, T0 + 3_600_000, c.client_id, undefined);
      await store.saveTokens(t, T0);
      assert((await store.revokeClientGrants(c.client_id)) === 1, "the grant exists and is the client's");
      assert((await store.findRefreshToken(t.refresh!.hash, T0)) === null, "and it is revoked with its tokens");
    }),
    check("refresh: a retry inside the grace window gets the sealed successor and starts no second chain", async (store) => {
      const grant = id("grant");
      const first = tokens(grant, true);
      await store.saveTokens(first, T0);
      const successor = { ...tokens(grant, true), sealed: "sealed-successor" };
      const won = await store.rotateRefreshToken(first.refresh!.hash, successor, T0, 10_000);
      assert(won && won.rotated_at === undefined && won.successor === undefined, "first rotation: the record as it was");
      assert((await store.findRefreshToken(first.refresh!.hash, T0))?.successor === undefined, "the seal is not handed out by a lookup");
      assert((await store.rotateRefreshToken(first.refresh!.hash, tokens(grant, true), T0 + 1000)) === null, "no grace, no retry");
      const retry = { ...tokens(grant, true), sealed: "sealed-retry" };
      const again = await store.rotateRefreshToken(first.refresh!.hash, retry, T0 + 5000, 10_000);
      assert(again, "a retry inside the window");
      assert(again.rotated_at === T0 && again.replaced_by === successor.refresh!.hash, "the retry sees the first rotation");
      assert(again.successor === "sealed-successor", "the retry gets the first rotation's sealed successor");
      assert(await store.findAccessToken(retry.access.hash, T0 + 5000), "the retry's access token is stored");
      assert((await store.findRefreshToken(retry.refresh!.hash, T0 + 5000)) === null, "the retry's refresh token is not: no second chain");
      assert(await store.findAccessToken(successor.access.hash, T0 + 5000), "nothing was revoked");
      const old = await store.findRefreshToken(first.refresh!.hash, T0);
      assert(old?.rotated_at === T0 && old.replaced_by === successor.refresh!.hash, "the retry changes nothing on the old token");
      assert((await store.rotateRefreshToken(first.refresh!.hash, tokens(grant, true), T0 + 10_000, 10_000)) === null, "the window is open-ended: rotated_at > now - graceMs");
      assert(await store.rotateRefreshToken(successor.refresh!.hash, { ...tokens(grant, true), sealed: "s3" }, T0 + 6000, 10_000), "the successor rotates");
      assert((await store.rotateRefreshToken(first.refresh!.hash, tokens(grant, true), T0 + 7000, 10_000)) === null, "no retry once the successor was rotated");
    }),
    check("refresh: no grace retry of a rotation that kept no sealed successor", async (store) => {
      const grant = id("grant");
      const first = tokens(grant, true);
      await store.saveTokens(first, T0);
      assert(await store.rotateRefreshToken(first.refresh!.hash, tokens(grant, true), T0, 10_000), "rotation without a seal");
      const retry = tokens(grant, true);
      assert((await store.rotateRefreshToken(first.refresh!.hash, retry, T0 + 1000, 10_000)) === null, "refused");
      assert((await store.findAccessToken(retry.access.hash, T0 + 1000)) === null, "nothing stored");
    }),
    check(`refresh: ${n} concurrent presentations of one token inside a grace window leave one live successor`, async (store) => {
      const grant = id("grant");
      const first = tokens(grant, true);
      await store.saveTokens(first, T0);
      const next = Array.from({ length: n }, (_, i) => ({ ...tokens(grant, true), sealed: `sealed-${i}` }));
      const results = await Promise.all(next.map((t) => store.rotateRefreshToken(first.refresh!.hash, t, T0, 10_000)));
      assert(results.every((r) => r !== null), "every caller succeeds");
      const firsts = winnersOf(results.map((r) => r!.rotated_at === undefined));
      assert(firsts.length === 1, `exactly one first rotation (got ${firsts.length})`);
      const winner = next[firsts[0]!]!;
      assert(results.every((r, i) => i === firsts[0] || r!.successor === winner.sealed), "every retry gets the winner's seal");
      const live = await Promise.all(next.map((t) => store.findRefreshToken(t.refresh!.hash, T0)));
      assert(winnersOf(live).join() === String(firsts[0]), "only the winner's refresh token is stored");
    }),
    check("refresh: no grace retry after the grant was revoked", async (store) => {
      const grant = id("grant");
      const first = tokens(grant, true);
      await store.saveTokens(first, T0);
      assert(await store.rotateRefreshToken(first.refresh!.hash, tokens(grant, true), T0, 10_000), "rotation");
      await store.revokeGrant(grant);
      const late = tokens(grant, true);
      assert((await store.rotateRefreshToken(first.refresh!.hash, late, T0 + 1000, 10_000)) === null, "refused");
      assert((await store.findAccessToken(late.access.hash, T0 + 1000)) === null, "nothing stored");
    }),
    check("codes: saveCode with a limit keeps only the newest unredeemed codes of one client and user", async (store) => {
      const user = id("user");
      const saved = [1, 2, 3, 4, 5].map((i) => code(id("grant"), T0 + 600_000 + i, "c", user));
      for (const c of saved) await store.saveCode(c, 3);
      const found = await Promise.all(saved.map((c) => store.findCode(c.hash, T0)));
      assert(found.map((f) => f !== null).join() === "false,false,true,true,true", `the two oldest are dropped (got ${found.map((f) => f !== null).join()})`);
      assert(await store.redeemCode(saved[2]!.hash, tokens(saved[2]!.grant_id, false), T0), "redeem one");
      const later = code(id("grant"), T0 + 600_010, "c", user);
      await store.saveCode(later, 3);
      assert(await store.findCode(saved[3]!.hash, T0), "a redeemed code does not count against the limit");
      assert((await store.findCode(saved[2]!.hash, T0))?.redeemed_at === T0, "nor is it dropped");
      const elsewhere = code(id("grant"), T0 + 600_000, "c", id("user"));
      await store.saveCode(elsewhere, 1);
      assert(await store.findCode(saved[4]!.hash, T0), "another user's codes do not count");
      await store.saveCode(code(id("grant"), T0 + 600_020, "c", user));
      assert(await store.findCode(saved[3]!.hash, T0), "without a limit nothing is dropped");
    }),
    check(`marks: ${n} concurrent markOnce of one key have exactly one winner, until the mark expires`, async (store) => {
      const key = id("once");
      const results = await Promise.all(Array.from({ length: n }, () => store.markOnce(key, T0 + 60_000, T0)));
      assert(winnersOf(results).length === 1, `exactly one markOnce wins (got ${winnersOf(results).length})`);
      assert((await store.isMarked(key, T0 + 59_999)) === true, "marked while live");
      assert((await store.isMarked(key, T0 + 60_000)) === false, "not marked once expired");
      assert((await store.isMarked(id("once"), T0)) === false, "an unknown key is not marked");
      assert((await store.markOnce(key, T0 + 120_000, T0 + 60_000)) === true, "an expired mark can be set again");
      assert((await store.markOnce(key, T0 + 180_000, T0 + 61_000)) === false, "and is then live again");
    }),
    // The server spends assertion jtis (private_key_jwt, ID-JAG) and DPoP proof jtis with markOnce: a key of a fixed
    // prefix and a hash, marked until the assertion's exp.
    check(`marks as a jti store: ${n} concurrent spends of one jti have one winner; a jti is spent until exp, per prefix`, async (store) => {
      const exp = T0 + 330_000;
      const hash = id("h").replace(/[^A-Za-z0-9]/g, "_").padEnd(43, "-");
      const key = (use: string) => `jti:${use}:${hash}`;
      const results = await Promise.all(Array.from({ length: n }, () => store.markOnce(key("client_assertion"), exp, T0)));
      assert(winnersOf(results).length === 1, `exactly one spend of a jti wins (got ${winnersOf(results).length})`);
      assert((await store.markOnce(key("id_jag"), exp, T0)) === true, "the same hash under another prefix is another jti");
      assert((await store.markOnce(key("client_assertion"), exp, exp - 1)) === false, "a jti stays spent until its exp");
      assert((await store.isMarked(key("client_assertion"), exp)) === false, "and no longer at its exp");
      assert((await store.markOnce(key("client_assertion"), exp + 330_000, exp)) === true, "once expired, the mark may be set again");
    }),
    check(`settings: ${n} concurrent initSetting calls all get the first value`, async (store) => {
      const name = id("setting");
      const values = Array.from({ length: n }, (_, i) => `value-${i}`);
      const results = await Promise.all(values.map((v) => store.initSetting(name, v)));
      assert(new Set(results).size === 1 && values.includes(results[0]!), "every caller sees one stored value");
      assert((await store.initSetting(name, "later")) === results[0], "a later call keeps it");
    }),
    check("settings: getSetting reads what initSetting and swapSetting stored, and null for none", async (store) => {
      const name = id("setting");
      assert((await store.getSetting(name)) === null, "an unknown setting is null");
      assert((await store.initSetting(name, "first")) === "first", "initSetting stores");
      assert((await store.getSetting(name)) === "first", "getSetting reads it");
      assert((await store.swapSetting(name, "first", "second")) === true, "a swap from the stored value succeeds");
      assert((await store.getSetting(name)) === "second", "getSetting reads the swapped value");
      assert((await store.initSetting(name, "other")) === "second", "initSetting keeps a swapped value");
    }),
    check(`settings: ${n} concurrent swapSetting calls from one value have exactly one winner`, async (store) => {
      const name = id("setting");
      await store.initSetting(name, "v0");
      const nexts = Array.from({ length: n }, (_, i) => `v1-${i}`);
      const results = await Promise.all(nexts.map((next) => store.swapSetting(name, "v0", next)));
      const winners = winnersOf(results);
      assert(winners.length === 1, `exactly one swap wins (got ${winners.length})`);
      assert((await store.getSetting(name)) === nexts[winners[0]!], "the winner's value is stored");
      assert((await store.swapSetting(name, "v0", "late")) === false, "a swap from a stale value fails");
      assert((await store.getSetting(name)) === nexts[winners[0]!], "and changes nothing");
      assert((await store.swapSetting(name, null, "late")) === false, "a swap from null fails once a value is stored");
    }),
    check(`settings: ${n} concurrent swapSetting calls from null create the setting once`, async (store) => {
      const name = id("setting");
      const nexts = Array.from({ length: n }, (_, i) => `created-${i}`);
      const results = await Promise.all(nexts.map((next) => store.swapSetting(name, null, next)));
      const winners = winnersOf(results);
      assert(winners.length === 1, `exactly one creation wins (got ${winners.length})`);
      assert((await store.getSetting(name)) === nexts[winners[0]!], "the winner's value is stored");
      assert((await store.swapSetting(id("setting"), "anything", "x")) === false, "a swap of an absent setting from a value fails");
    }),
    check("purge: purgeExpired deletes every expired record and no live one", async (store) => {
      const soon = T0 + 1000;
      const expired: { codes: CodeRecord[]; issued: IssuedTokens[] } = { codes: [], issued: [] };
      for (let i = 0; i < 200; i++) {
        const grant = id("grant");
        const c = code(grant, soon);
        await store.saveCode(c);
        expired.codes.push(c);
        const t = tokens(grant, true, soon);
        t.refresh!.expires_at = soon;
        await store.saveTokens(t, T0);
        expired.issued.push(t);
        await store.markOnce(id("once"), soon, T0);
      }
      const liveGrant = id("grant");
      const liveCode = code(liveGrant);
      await store.saveCode(liveCode);
      const live = tokens(liveGrant, true);
      await store.saveTokens(live, T0);
      const liveMark = id("once");
      await store.markOnce(liveMark, T0 + 3_600_000, T0);
      const oldDevice = { ...device(id("grant"), soon), expires_at: soon };
      await store.saveDeviceAuthorization(oldDevice, T0);
      const liveDevice = device(id("grant"));
      await store.saveDeviceAuthorization(liveDevice, T0);
      const later = soon + 2 * MINUTE;
      const deleted = await store.purgeExpired(later);
      assert(!purgeCounts || deleted >= 801, `at least the 801 expired records are counted (got ${deleted})`);
      if (purgeCounts) {
        assert((await store.purgeExpired(later)) === 0, "a second purge finds nothing");
        for (const c of expired.codes) assert((await store.findCode(c.hash, T0)) === null, "an expired code is deleted");
        for (const t of expired.issued) {
          assert((await store.findAccessToken(t.access.hash, T0)) === null, "an expired access token is deleted");
          assert((await store.findRefreshToken(t.refresh!.hash, T0)) === null, "an expired refresh token is deleted");
        }
      }
      assert(await store.findCode(liveCode.hash, T0), "a live code stays");
      assert(await store.findAccessToken(live.access.hash, T0), "a live access token stays");
      assert(await store.findRefreshToken(live.refresh!.hash, T0), "a live refresh token stays");
      assert(await store.isMarked(liveMark, T0), "a live mark stays");
      assert(await store.findDeviceAuthorization(liveDevice.user_code_hash, T0), "a live device authorization stays");
      if (purgeCounts) {
        assert((await store.findDeviceAuthorization(oldDevice.user_code_hash, T0)) === null, "an expired device authorization is deleted");
      }
    }),
  ];
}
