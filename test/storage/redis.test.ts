// The storage contract on a real Redis server (started by test/support/databases.ts), through ioredis and
// through node-redis, each with the README's one-line adapter. Node only; skipped with a reason when
// redis-server is missing (never under CI).
import process from "node:process";
import { Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { redisStorage, storageContract } from "../../mod.ts";
import { type Database, type Skipped, started, startRedis } from "../support/databases.ts";
import { checkAgainstModel } from "../support/model.ts";
import { sealsFollowTheChain } from "../support/seals.ts";
import { steadyLoad } from "../support/steady.ts";

const server: Database | Skipped = await startRedis();
const url = started(server) ? server.url : "";
afterAll(async () => {
  if (started(server)) await server.stop();
}, 30_000);

describe.skipIf(!started(server))("storage contract: redisStorage through ioredis", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  });
  afterAll(() => redis.quit());
  const executor = () => ({
    eval: (s: string, k: string[], a: string[]) => redis.eval(s, k.length, ...k, ...a) as Promise<unknown>,
    evalsha: (h: string, k: string[], a: string[]) => redis.evalsha(h, k.length, ...k, ...a) as Promise<unknown>,
  });
  const store = () => redisStorage(executor());
  for (const check of storageContract(store, { expiresByItself: true })) test(check.name, check.run, 20_000);

  test("scripts run by SHA-1 (EVALSHA) once loaded, and after a SCRIPT FLUSH the call is made again with EVAL", async () => {
    const one = redisStorage({ ...executor(), prefix: `sha-${Date.now()}:` });
    const now = Date.now();
    await one.saveTokens({ access: { hash: "sha-at", client_id: "c", scope: "read", expires_at: now + 60_000 } }, now);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the SHA-1s are computed once, asynchronously
    const calls = async () => {
      const info = await redis.info("commandstats");
      const of = (command: string) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
      return { eval: of("eval"), evalsha: of("evalsha") };
    };
    await redis.config("RESETSTAT");
    for (let i = 0; i < 10; i++) expect(await one.findAccessToken("sha-at", now)).toMatchObject({ hash: "sha-at" });
    expect(await calls()).toMatchObject({ eval: 0, evalsha: 10 });
    await redis.script("FLUSH");
    await redis.config("RESETSTAT");
    expect(await one.findAccessToken("sha-at", now)).toMatchObject({ hash: "sha-at" });
    // The EVALSHA answered NOSCRIPT (counted as a failed call), then EVAL ran the script and loaded it.
    expect(await calls()).toMatchObject({ eval: 1, evalsha: 1 });
    expect(await one.findAccessToken("sha-at", now)).toMatchObject({ hash: "sha-at" });
    expect(await calls()).toMatchObject({ eval: 1, evalsha: 2 });
  });

  test("storing tokens reads the client for its last_used_at once a minute per instance, and a new grant's TTL is set without reading it", async () => {
    const prefix = `touch-${Date.now()}:`;
    const one = redisStorage({ ...executor(), prefix });
    const now = Date.now();
    await one.saveClient({
      client_id: "c", name: "c", type: "confidential", redirect_uris: [], scopes: ["read"], grant_types: ["client_credentials"],
      client_credentials_refresh_token: false, active: true, created_at: now,
    });
    const calls = async () => {
      const info = await redis.info("commandstats");
      const of = (command: string) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
      return { hmget: of("hmget"), pttl: of("pttl"), pexpire: of("pexpire") };
    };
    const access = (hash: string, at: number) => ({ hash, client_id: "c", scope: "read", expires_at: at + 60_000 });
    await one.saveTokens({ access: access("t1", now) }, now);
    expect((await one.getClient("c"))?.last_used_at).toBe(now);
    await redis.config("RESETSTAT");
    await one.saveTokens({ access: access("t2", now + 1_000) }, now + 1_000);
    expect(await calls()).toMatchObject({ hmget: 0 }); // this instance wrote it a second ago
    await redis.config("RESETSTAT");
    await one.saveTokens({ access: access("t3", now + 61_000) }, now + 61_000);
    expect(await calls()).toMatchObject({ hmget: 1 });
    expect((await one.getClient("c"))?.last_used_at).toBe(now + 61_000);
    // Another instance has written nothing yet: it reads the client once, and finds it touched within the minute.
    const other = redisStorage({ ...executor(), prefix });
    await redis.config("RESETSTAT");
    await other.saveTokens({ access: access("t4", now + 62_000) }, now + 62_000);
    expect(await calls()).toMatchObject({ hmget: 1 });
    expect((await one.getClient("c"))?.last_used_at).toBe(now + 61_000);

    // A new grant: its key gets its TTL straight away; only the two indexes it joins are asked for theirs.
    await redis.config("RESETSTAT");
    await one.saveTokens({
      access: { ...access("t5", now + 62_000), user_id: "u", grant_id: "g" },
      refresh: { hash: "r5", client_id: "c", user_id: "u", scope: "read", grant_id: "g", expires_at: now + 86_400_000 },
    }, now + 62_000);
    expect(await calls()).toMatchObject({ pttl: 2 });
    expect(await redis.pttl(`${prefix}grant:g`)).toBeGreaterThanOrEqual(await redis.pttl(`${prefix}rt:r5`));
  });

  test("an index drops its expired members on one write in 16, picked by the clock and the member, and stays bounded", async () => {
    const prefix = `prune-${Date.now()}:`;
    // Virtual time: each grant expires 10 minutes after its write, and the next write comes 11 minutes later (plus
    // 1 ms, so that the writes' clocks run through every remainder of 16); the keys' TTLs stay 10 real minutes.
    let now = 1_700_000_000_000;
    const one = redisStorage({ ...executor(), prefix, expiryMargin: 0, clock: () => now });
    await redis.config("RESETSTAT");
    for (let i = 0; i < 160; i++, now += 660_001) {
      const grant = `g${i}A`; // one last character for all: the clock alone picks the writes that prune
      await one.saveTokens({
        access: { hash: `a${i}`, client_id: "c", user_id: "u", scope: "read", grant_id: grant, expires_at: now + 600_000 },
        refresh: { hash: `r${i}`, client_id: "c", user_id: "u", scope: "read", grant_id: grant, expires_at: now + 600_000 },
      }, now);
    }
    const info = await redis.info("commandstats");
    // The user's and the client's index, pruned together on 10 of the 160 writes.
    expect(Number(/cmdstat_zremrangebyscore:calls=(\d+)/.exec(info)?.[1])).toBe(20);
    expect(await redis.zcard(`${prefix}user:u:grants`)).toBeLessThanOrEqual(16);
    expect(await redis.zcard(`${prefix}client:c:grants`)).toBeLessThanOrEqual(16);
  });

  test("a redemption leaves the consent's index of codes alone: saveCode forgets redeemed codes when it counts", async () => {
    const one = store();
    const now = Date.now();
    const code = { hash: `own-${now}`, grant_id: `og-${now}`, client_id: "c", user_id: `ou-${now}`, redirect_uri: "https://c.example/cb", scope: "read", expires_at: now + 60_000 };
    await one.saveCode(code, 5);
    await redis.config("RESETSTAT");
    expect(await one.redeemCode(code.hash, { access: { hash: `oa-${now}`, client_id: "c", user_id: code.user_id, scope: "read", grant_id: code.grant_id, expires_at: now + 60_000 } }, now)).not.toBeNull();
    expect(/cmdstat_zrem:/.test(await redis.info("commandstats"))).toBe(false);
    await one.saveCode({ ...code, hash: `own2-${now}` }, 5);
    expect(await redis.zrange(`oauth:owner:c:${code.user_id}`, "0", "-1")).toEqual([`own2-${now}`]);
  });

  test("a rotation runs 8 commands: its marks in one, and the successor's link to it written with the successor", async () => {
    const one = store();
    const now = Date.now();
    const pair = (n: string) => ({
      access: { hash: `ra-${n}-${now}`, client_id: "c", user_id: "u", scope: "read", grant_id: `rg-${now}`, expires_at: now + 60_000 },
      refresh: { hash: `rr-${n}-${now}`, client_id: "c", user_id: "u", scope: "read", grant_id: `rg-${now}`, expires_at: now + 600_000 },
    });
    await one.saveTokens(pair("1"), now); // writes the client's last_used_at: the rotation need not
    await redis.config("RESETSTAT");
    expect(await one.rotateRefreshToken(`rr-1-${now}`, pair("2"), now)).not.toBeNull();
    const info = await redis.info("commandstats");
    const calls = [...info.matchAll(/cmdstat_(\w+):calls=(\d+)/g)].filter(([, name]) => !/^(evalsha|eval|config|info)$/.test(name!));
    // The token and its grant read; the grant's last use, the marks, 2 tokens each with its TTL written.
    expect(calls.reduce((n, [, , count]) => n + Number(count), 0)).toBe(8);
    expect(await redis.hget(`oauth:rt:rr-2-${now}`, "p")).toBe(`rr-1-${now}`);
  });

  test("a rotation drops the sealed successor its predecessor kept for the grace window", async () => {
    await sealsFollowTheChain(store(), (hash) => redis.hget(`oauth:rt:${hash}`, "s"));
  });

  test("every key of expiring data carries a TTL; only clients, their list and generations, and settings do not", async () => {
    const keys = await redis.keys("oauth:*");
    expect(keys.length).toBeGreaterThan(10);
    const lasting = [];
    for (const key of keys) if ((await redis.pttl(key)) < 0) lasting.push(key);
    expect(lasting.filter((k) => !/^oauth:(client:[^:]+|clients|setting:.*|cgen:.*)$/.test(k))).toEqual([]);
  });

  test("a revoked grant's tombstone outlives every token of the grant, which no index lists", async () => {
    const prefix = `tomb-${Date.now()}:`;
    const one = redisStorage({ ...executor(), prefix });
    const now = Date.now();
    const day = 86_400_000;
    // An access token stored alone for its grant, living longer than any default tombstone; then a refresh pair.
    await one.saveTokens({ access: { hash: "alone", client_id: "c", scope: "read", grant_id: "g1", expires_at: now + 2 * day } }, now);
    await one.saveTokens({
      access: { hash: "pair-at", client_id: "c", user_id: "u", scope: "read", grant_id: "g2", expires_at: now + 3_600_000 },
      refresh: { hash: "pair-rt", client_id: "c", user_id: "u", scope: "read", grant_id: "g2", expires_at: now + 30 * day },
    }, now);
    await one.revokeGrant("g1");
    await one.revokeGrant("g2");
    expect(await one.findAccessToken("alone", now)).toBeNull();
    expect(await one.findRefreshToken("pair-rt", now)).toBeNull();
    expect(await redis.pttl(`${prefix}grant:g1`)).toBeGreaterThanOrEqual(await redis.pttl(`${prefix}at:alone`));
    expect(await redis.pttl(`${prefix}grant:g2`)).toBeGreaterThanOrEqual(await redis.pttl(`${prefix}rt:pair-rt`));
  });

  test("random sequences of verbs answer as the memory store does (model-based, 25 runs)", async () => {
    await checkAgainstModel((clock) => redisStorage({ clock, prefix: `model-${Date.now()}:`, eval: (s, k, a) => redis.eval(s, k.length, ...k, ...a) as Promise<unknown> }), Number(process.env.MODEL_RUNS_DB ?? 25));
  }, 120_000);

  test("storage stays bounded under steady load: TTLs remove what expired, with no purge", async () => {
    const prefix = `steady-${Date.now()}:`;
    const store = redisStorage({ prefix, expiryMargin: 50, eval: (s, k, a) => redis.eval(s, k.length, ...k, ...a) as Promise<unknown> });
    const count = async () => (await redis.keys(`${prefix}*`)).length;
    const { counts, issued } = await steadyLoad(store, {
      cycles: 12, perCycle: 10, lifetime: 250,
      advance: async () => (await new Promise((r) => setTimeout(r, 100)), Date.now()),
      count,
    });
    expect(counts.at(-1)).toBeLessThan(issued / 2);
    await new Promise((r) => setTimeout(r, 600));
    // Only the index of the client's grants may linger until its own TTL; every record is gone.
    expect(await count()).toBeLessThanOrEqual(2);
  }, 30_000);

});

describe.skipIf(!started(server))("storage contract: redisStorage through node-redis", () => {
  let client: ReturnType<typeof createClient>;
  beforeAll(async () => {
    client = createClient({ url });
    await client.connect();
  });
  afterAll(() => client.quit());
  const store = () =>
    redisStorage({
      prefix: "nr:",
      eval: (s, k, a) => client.eval(s, { keys: k, arguments: a }),
      evalsha: (h, k, a) => client.evalSha(h, { keys: k, arguments: a }),
    });
  for (const check of storageContract(store, { expiresByItself: true })) test(check.name, check.run, 20_000);
});
