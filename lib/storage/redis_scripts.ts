/**
 * The Lua scripts of the Redis store: one per verb, so that each verb is atomic (Redis runs a script to the
 * end before any other command). Every script starts with {@link PRELUDE}, which reads the common arguments, or
 * the reads on the hot path with {@link LOOKUP}, its first part.
 *
 * Layout, under the prefix P (default `oauth:`); every hash keeps the full record as JSON in field `r`, plus
 * the fields scripts test:
 * - `P client:ID` {r, a active, l last_used_at}; `P clients` the set of client ids. No TTL: clients stay.
 * - `P code:HASH` {r, e expires, d redeemed_at, g grant, c client, u user, G grant JSON}.
 * - `P at:HASH` {r, e, g, c, v}; `P rt:HASH` {r, e, g, c, t rotated_at, n replaced_by, G grant JSON,
 *   s the sealed successor (kept for the grace window), p the hash it replaced}.
 * - `P grant:ID` {r, c, u, k created_at, l last_used_at, e expires, x revoked}; a revoked grant is a tombstone.
 *   Its key lives as long as the latest token of the grant, so a tombstone outlives every token it kills; the
 *   tokens themselves are not indexed (every lookup checks the tombstone, and their TTLs remove them).
 * - Indexes, sorted sets scored by expiry and pruned as they grow: `P grant:ID:m` (the grant's codes, which
 *   revokeGrant deletes), `P user:ID:grants`, `P client:ID:grants`, `P client:ID:codes`, `P owner:CLIENT:USER`
 *   (the codes of one consent; saveCode forgets the redeemed ones when it counts them).
 * - `P cgen:ID` a client's generation, bumped by revokeClientGrants: an access token without a grant records
 *   the generation it was issued in ({v}), and dies when it changes. No TTL: it must outlive every token.
 * - `P once:KEY` (expiry), `P setting:NAME` (value, no TTL).
 * - `P dev:HASH` {r static JSON, e expires, x codes expire, s status, i interval, p last poll, u user, t auth_time,
 *   g grant, c client, G grant JSON without its user}; `P devu:USERHASH` the device code hash of a user code.
 *
 * Every key that holds an expiring record gets a TTL of its remaining life plus a margin (SLACK, one minute by
 * default), measured
 * on the store's clock; expiry itself is judged by the `now` each verb is given, so the TTL only makes expired
 * data go away by itself.
 *
 * @module
 */

/** ARGV[1] prefix, ARGV[2] now (or ""); what a lookup needs: a grant's tombstone, a client's generation. */
const LOOKUP = `
local P, NOW = ARGV[1], tonumber(ARGV[2])
local function revoked(grant)
  return grant ~= nil and grant ~= '' and grant ~= false and redis.call('HGET', P .. 'grant:' .. grant, 'x') == '1'
end
-- The client's generation: revokeClientGrants bumps it, which kills its tokens that belong to no grant (a
-- busy client_credentials client has too many to index and delete one by one).
local function generation(client)
  return redis.call('GET', P .. 'cgen:' .. client) or '0'
end
`;

/**
 * {@link LOOKUP}, ARGV[3] "clock:margin" or "clock:margin:touch" (the store's clock, the TTL margin, and "0" when
 * this instance wrote the client's last_used_at within the minute, so that touch need not read it), and the
 * writers' helpers.
 */
const PRELUDE = LOOKUP + `
local clock, margin, touched = string.match(ARGV[3], '^(%d+):(%d+):?(%d*)$')
local CLOCK, SLACK, TOUCH = tonumber(clock), tonumber(margin), touched ~= '0'
local function px(expires)
  local t = tonumber(expires) - CLOCK
  if t < 0 then t = 0 end
  return math.floor(t + SLACK)
end
local function extend(key, expires)
  local want = px(expires)
  if redis.call('PTTL', key) < want then redis.call('PEXPIRE', key, want) end
end
-- An index is pruned on about one write in 16, picked by the clock and the member (both change from write to
-- write), not on every write: a prune is one more command, and it rarely finds anything to drop. Expired members
-- linger a few writes longer; the index's TTL still bounds them.
local function index(zkey, member, expires)
  redis.call('ZADD', zkey, expires, member)
  if NOW and (NOW + (string.byte(member, -1) or 0)) % 16 == 0 then
    redis.call('ZREMRANGEBYSCORE', zkey, '-inf', '(' .. (math.min(NOW, CLOCK) - SLACK))
  end
  extend(zkey, expires)
end
local function touch(client)
  if not TOUCH then return end
  local c = redis.call('HMGET', P .. 'client:' .. client, 'a', 'l')
  if not c[1] then return end
  local last = tonumber(c[2])
  if not last or NOW - last >= 60000 then redis.call('HSET', P .. 'client:' .. client, 'l', NOW) end
end
-- A grant's key lives 10 ms longer than its latest member: a Redis whose clock moves during a script (7.0 does)
-- gives a member set after its grant an expiry a millisecond or so later, and the tombstone must outlive it.
local GRANT_EXTRA = 10
-- Creates or refreshes a live grant; false when it is revoked (a tombstone refuses every write). Its key lives
-- as long as its latest token (e), so a tombstone set on it outlives every member, which need no index of their
-- own: every lookup of a member checks the tombstone. The user's and client's indexes change only when the
-- grant is new or lives longer; a rotation, which keeps the grant's expiry, writes one field.
local function upsert_grant(id, json, client, user, expires)
  local key = P .. 'grant:' .. id
  local g = redis.call('HMGET', key, 'x', 'k', 'e')
  if g[1] == '1' then return false end
  local e, old = tonumber(expires), tonumber(g[3])
  if g[2] and old >= e then
    redis.call('HSET', key, 'l', NOW)
    return true
  end
  if old and old > e then e = old end
  if g[2] then
    redis.call('HSET', key, 'l', NOW, 'e', e)
  else
    redis.call('HSET', key, 'r', json, 'c', client, 'u', user, 'k', NOW, 'l', NOW, 'e', e)
  end
  -- Every write of a grant's key sets 'e' or 'x': with neither, the key is new and has no TTL to compare.
  if g[3] then extend(key, e + GRANT_EXTRA) else redis.call('PEXPIRE', key, px(e + GRANT_EXTRA)) end
  if user ~= '' then index(P .. 'user:' .. user .. ':grants', id, e) end
  index(P .. 'client:' .. client .. ':grants', id, e)
  return true
end
-- A token of a grant stored without that grant's upsert (an access token alone): the grant's key is made to
-- outlive it, so that a later tombstone does too.
local function cover(grant, expires)
  local key = P .. 'grant:' .. grant
  local e = tonumber(redis.call('HGET', key, 'e'))
  if not e or e < tonumber(expires) then redis.call('HSET', key, 'e', expires) end
  extend(key, tonumber(expires) + GRANT_EXTRA)
end
local function remember(key, grant, expires)
  if grant ~= '' then index(P .. 'grant:' .. grant .. ':m', key, expires) end
end
-- Issued tokens from ARGV[i..]: access hash, json, expires, grant, client; then "1" and the refresh token's
-- hash, json, expires, grant, client, grant json, user (or ""), or "0" and nothing. \`upserted\`: the caller
-- has just upserted the grant (so it is live, and its key covers these tokens). \`replaces\`: the hash of the
-- refresh token the new one replaces (a rotation), written with it rather than by a command of its own.
local function store_tokens(i, upserted, access_only, replaces)
  local grant = ARGV[i + 3]
  if not upserted and revoked(grant) then return false end
  local at = P .. 'at:' .. ARGV[i]
  if grant == '' then
    redis.call('HSET', at, 'r', ARGV[i + 1], 'e', ARGV[i + 2], 'g', grant, 'c', ARGV[i + 4], 'v', generation(ARGV[i + 4]))
  else
    redis.call('HSET', at, 'r', ARGV[i + 1], 'e', ARGV[i + 2], 'g', grant, 'c', ARGV[i + 4])
    if not upserted then cover(grant, ARGV[i + 2]) end
  end
  redis.call('PEXPIRE', at, px(ARGV[i + 2]))
  if ARGV[i + 5] == '1' and not access_only then
    local rt = P .. 'rt:' .. ARGV[i + 6]
    local fields = {'r', ARGV[i + 7], 'e', ARGV[i + 8], 'g', ARGV[i + 9], 'c', ARGV[i + 10], 'G', ARGV[i + 11], 'u', ARGV[i + 12]}
    if replaces then fields[13], fields[14] = 'p', replaces end
    redis.call('HSET', rt, unpack(fields))
    redis.call('PEXPIRE', rt, px(ARGV[i + 8]))
  end
  touch(ARGV[i + 4])
  return true
end
local function tokens_expiry(i)
  local e = tonumber(ARGV[i + 2])
  if ARGV[i + 5] == '1' and tonumber(ARGV[i + 8]) > e then e = tonumber(ARGV[i + 8]) end
  return e
end
`;

const script = (body: string): string => PRELUDE + body;
/**
 * A read on the hot path (the Bearer check, a client, a code or refresh token before its exchange): without the
 * writers' helpers, whose definitions Redis would otherwise run on every call, for nothing.
 */
const lookup = (body: string): string => LOOKUP + body;

/** Device authorizations: a live record by key, as {r, s, i, p, u, t}, or nil. */
const DEVICE = `
local function device(key)
  local v = redis.call('HMGET', key, 'r', 'e', 's', 'i', 'p', 'u', 't')
  if not v[1] or tonumber(v[2]) <= NOW then return nil end
  return {v[1], v[3], v[4], v[5], v[6], v[7]}
end
local function device_key(user_code)
  local h = redis.call('GET', P .. 'devu:' .. user_code)
  if not h then return nil end
  return P .. 'dev:' .. h
end
`;

/** A verb that has a script. */
export type ScriptName =
  | "getClient" | "saveClient" | "setClientActive" | "listClients" | "revokeClientGrants" | "saveCode" | "findCode"
  | "redeemCode" | "saveTokens" | "findAccessToken" | "findRefreshToken" | "rotateRefreshToken" | "revokeGrant"
  | "revokeAccessToken" | "listGrants" | "markOnce" | "isMarked" | "initSetting" | "getSetting" | "swapSetting"
  | "saveDevice" | "findDevice" | "decideDevice" | "pollDevice" | "redeemDevice";

/** The scripts, by verb; issued tokens are read by `store_tokens` from the index each script names. */
export const SCRIPTS: Readonly<Record<ScriptName, string>> = {
  getClient: lookup(`
return redis.call('HMGET', P .. 'client:' .. ARGV[4], 'r', 'a', 'l')`),

  saveClient: script(`
local key = P .. 'client:' .. ARGV[4]
redis.call('DEL', key)
redis.call('HSET', key, 'r', ARGV[5], 'a', ARGV[6])
if ARGV[7] ~= '' then redis.call('HSET', key, 'l', ARGV[7]) end
redis.call('SADD', P .. 'clients', ARGV[4])
return 1`),

  setClientActive: script(`
local key = P .. 'client:' .. ARGV[4]
if redis.call('EXISTS', key) == 0 then return nil end
redis.call('HSET', key, 'a', ARGV[5])
return redis.call('HMGET', key, 'r', 'a', 'l')`),

  listClients: script(`
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', P .. 'clients')) do
  local v = redis.call('HMGET', P .. 'client:' .. id, 'r', 'a', 'l')
  if v[1] then table.insert(out, v) end
end
return out`),

  /** ARGV[4] client id, ARGV[5] "1" to delete the client too. Returns {live grants revoked, existed}. */
  revokeClientGrants: script(`
local id = ARGV[4]
local count = 0
local grants = P .. 'client:' .. id .. ':grants'
for _, g in ipairs(redis.call('ZRANGE', grants, 0, -1)) do
  local key = P .. 'grant:' .. g
  local v = redis.call('HMGET', key, 'x', 'k', 'e')
  if v[1] ~= '1' then
    if v[2] and v[3] and tonumber(v[3]) > CLOCK then count = count + 1 end
    redis.call('HSET', key, 'x', '1')
    if redis.call('PTTL', key) < 3600000 then redis.call('PEXPIRE', key, 3600000) end
    for _, m in ipairs(redis.call('ZRANGE', key .. ':m', 0, -1)) do redis.call('DEL', m) end
    redis.call('DEL', key .. ':m')
  end
end
redis.call('DEL', grants)
for _, h in ipairs(redis.call('ZRANGE', P .. 'client:' .. id .. ':codes', 0, -1)) do redis.call('DEL', P .. 'code:' .. h) end
redis.call('DEL', P .. 'client:' .. id .. ':codes')
redis.call('INCR', P .. 'cgen:' .. id)
local existed = 0
if ARGV[5] == '1' then
  existed = redis.call('DEL', P .. 'client:' .. id)
  redis.call('SREM', P .. 'clients', id)
end
return {count, existed}`),

  /** ARGV[4..] hash, json, expires, grant, client, user, grant json, limit (or ""). */
  saveCode: script(`
local hash, grant, client, user = ARGV[4], ARGV[7], ARGV[8], ARGV[9]
if revoked(grant) then return 0 end
local key = P .. 'code:' .. hash
redis.call('HSET', key, 'r', ARGV[5], 'e', ARGV[6], 'g', grant, 'c', client, 'u', user, 'G', ARGV[10])
redis.call('PEXPIRE', key, px(ARGV[6]))
remember(key, grant, ARGV[6])
index(P .. 'client:' .. client .. ':codes', hash, ARGV[6])
local owner = P .. 'owner:' .. client .. ':' .. user
redis.call('ZADD', owner, ARGV[6], hash)
extend(owner, ARGV[6])
local limit = tonumber(ARGV[11])
if limit then
  -- Caps the codes one consent can mint: drop the earliest-expiring others until \`limit\` remain. Codes that
  -- are gone already (revoked with their grant, or dropped by their TTL) or redeemed are forgotten first,
  -- uncounted: a redemption leaves the index alone, one command fewer on the hot path.
  for _, h in ipairs(redis.call('ZRANGE', owner, 0, -1)) do
    local c = redis.call('HMGET', P .. 'code:' .. h, 'r', 'd')
    if not c[1] or c[2] then redis.call('ZREM', owner, h) end
  end
  local excess = redis.call('ZCARD', owner) - limit
  if excess > 0 then
    for _, h in ipairs(redis.call('ZRANGE', owner, 0, -1)) do
      if excess <= 0 then break end
      if h ~= hash then
        redis.call('DEL', P .. 'code:' .. h)
        redis.call('ZREM', owner, h)
        excess = excess - 1
      end
    end
  end
end
return 1`),

  findCode: lookup(`
local v = redis.call('HMGET', P .. 'code:' .. ARGV[4], 'r', 'e', 'd')
if not v[1] or tonumber(v[2]) <= NOW then return nil end
return {v[1], v[3]}`),

  /** ARGV[4] code hash, tokens from ARGV[5]. */
  redeemCode: script(`
local key = P .. 'code:' .. ARGV[4]
local v = redis.call('HMGET', key, 'r', 'e', 'd', 'g', 'c', 'u', 'G')
if not v[1] or tonumber(v[2]) <= NOW or v[3] then return nil end
if not upsert_grant(v[4], v[7], v[5], v[6], tokens_expiry(5)) then return nil end
redis.call('HSET', key, 'd', NOW)
store_tokens(5, true)
return v[1]`),

  /** Tokens from ARGV[4]. */
  saveTokens: script(`
local upserted = ARGV[9] == '1'
if upserted and not upsert_grant(ARGV[13], ARGV[15], ARGV[14], ARGV[16], tokens_expiry(4)) then return 0 end
if store_tokens(4, upserted) then return 1 end
return 0`),

  findAccessToken: lookup(`
local v = redis.call('HMGET', P .. 'at:' .. ARGV[4], 'r', 'e', 'g', 'c', 'v')
if not v[1] or tonumber(v[2]) <= NOW or revoked(v[3]) then return nil end
if v[5] and v[5] ~= generation(v[4]) then return nil end
return v[1]`),

  findRefreshToken: lookup(`
local v = redis.call('HMGET', P .. 'rt:' .. ARGV[4], 'r', 'e', 'g', 't', 'n')
if not v[1] or tonumber(v[2]) <= NOW or revoked(v[3]) then return nil end
return {v[1], v[4], v[5]}`),

  /**
   * ARGV[4] hash, ARGV[5] grace ms, ARGV[6] the sealed successor (or ""), tokens from ARGV[7]. Returns the old
   * {json, rotated_at, replaced_by, sealed successor}: the last two only to a grace retry.
   */
  rotateRefreshToken: script(`
local key = P .. 'rt:' .. ARGV[4]
local v = redis.call('HMGET', key, 'r', 'e', 'g', 't', 'n', 'c', 'G', 'u', 's', 'p')
if not v[1] or tonumber(v[2]) <= NOW then return nil end
if v[4] then
  -- A retry inside the grace window, while the successor is still unrotated (a multi-process client): it gets
  -- the first rotation's sealed successor and stores an access token only, so no second chain starts.
  local grace = tonumber(ARGV[5])
  if grace <= 0 or tonumber(v[4]) <= NOW - grace or not v[5] or not v[9] then return nil end
  local s = redis.call('HMGET', P .. 'rt:' .. v[5], 'r', 't')
  if not s[1] or s[2] then return nil end
end
-- The grant's tombstone is checked here: a revoked grant refuses the rotation.
if not upsert_grant(v[3], v[7], v[6], v[8] or '', tokens_expiry(7)) then return nil end
if v[4] then
  store_tokens(7, true, true)
  return {v[1], v[4], v[5], v[9]}
end
-- The rotation's marks in one command, not one per field.
local marks = {'t', NOW}
if ARGV[12] == '1' then table.insert(marks, 'n'); table.insert(marks, ARGV[13]) end
if ARGV[6] ~= '' then table.insert(marks, 's'); table.insert(marks, ARGV[6]) end
redis.call('HSET', key, unpack(marks))
store_tokens(7, true, false, ARGV[4])
-- Once this token rotated, its predecessor can no longer be retried: its seal goes.
if v[10] then redis.call('HDEL', P .. 'rt:' .. v[10], 's') end
return {v[1]}`),

  revokeGrant: script(`
local key = P .. 'grant:' .. ARGV[4]
redis.call('HSET', key, 'x', '1')
-- The tombstone outlives anything a racing request could still write for this grant.
if redis.call('PTTL', key) < 3600000 then redis.call('PEXPIRE', key, 3600000) end
for _, m in ipairs(redis.call('ZRANGE', key .. ':m', 0, -1)) do redis.call('DEL', m) end
redis.call('DEL', key .. ':m')
return 1`),

  revokeAccessToken: script(`
return redis.call('DEL', P .. 'at:' .. ARGV[4])`),

  listGrants: script(`
local out = {}
local index = P .. 'user:' .. ARGV[4] .. ':grants'
for _, g in ipairs(redis.call('ZRANGEBYSCORE', index, '(' .. NOW, '+inf')) do
  local v = redis.call('HMGET', P .. 'grant:' .. g, 'r', 'k', 'l', 'e', 'x')
  if v[1] and v[2] and v[5] ~= '1' and tonumber(v[4]) > NOW then table.insert(out, {v[1], v[2], v[3], v[4]}) end
end
return out`),

  /** ARGV[4] key, ARGV[5] expires at. */
  markOnce: script(`
local key = P .. 'once:' .. ARGV[4]
local until_ = tonumber(redis.call('GET', key))
if until_ and until_ > NOW then return 0 end
redis.call('SET', key, ARGV[5], 'PX', px(ARGV[5]))
return 1`),

  isMarked: script(`
local until_ = tonumber(redis.call('GET', P .. 'once:' .. ARGV[4]))
if until_ and until_ > NOW then return 1 end
return 0`),

  initSetting: script(`
local key = P .. 'setting:' .. ARGV[4]
redis.call('SET', key, ARGV[5], 'NX')
return redis.call('GET', key)`),

  getSetting: script(`
return redis.call('GET', P .. 'setting:' .. ARGV[4])`),

  /** ARGV[4] name, ARGV[5] "1" when a value is expected, ARGV[6] the expected value, ARGV[7] the next one. */
  swapSetting: script(`
local key = P .. 'setting:' .. ARGV[4]
local current = redis.call('GET', key)
if ARGV[5] == '1' then
  if current ~= ARGV[6] then return 0 end
elseif current then
  return 0
end
redis.call('SET', key, ARGV[7])
return 1`),

  /** ARGV[4] hash, user code hash, static JSON, expires, codes expire, interval, grant, client, grant JSON. */
  saveDevice: script(DEVICE + `
local held = device_key(ARGV[5])
if held and device(held) then return 0 end
local key = P .. 'dev:' .. ARGV[4]
redis.call('DEL', key)
redis.call('HSET', key, 'r', ARGV[6], 'e', ARGV[7], 'x', ARGV[8], 'i', ARGV[9], 's', 'pending', 'g', ARGV[10],
  'c', ARGV[11], 'G', ARGV[12])
redis.call('PEXPIRE', key, px(ARGV[7]))
redis.call('SET', P .. 'devu:' .. ARGV[5], ARGV[4], 'PX', px(ARGV[7]))
return 1`),

  /** ARGV[4] user code hash. */
  findDevice: script(DEVICE + `
local key = device_key(ARGV[4])
if not key then return nil end
return device(key)`),

  /** ARGV[4] user code hash, "1" approved or "0" denied, user id, auth_time (or ""). */
  decideDevice: script(DEVICE + `
local key = device_key(ARGV[4])
if not key or not device(key) then return nil end
local v = redis.call('HMGET', key, 's', 'x')
if v[1] ~= 'pending' or tonumber(v[2]) <= NOW then return nil end
local status = 'denied'
if ARGV[5] == '1' then status = 'approved' end
redis.call('HSET', key, 's', status, 'u', ARGV[6])
if ARGV[7] ~= '' then redis.call('HSET', key, 't', ARGV[7]) end
return device(key)`),

  /** ARGV[4] device code hash. Returns {slow_down 1|0, record}. */
  pollDevice: script(DEVICE + `
local key = P .. 'dev:' .. ARGV[4]
local v = device(key)
if not v then return nil end
local interval, last, slow = tonumber(v[3]), tonumber(v[4]), 0
if last and NOW < last + interval then
  slow = 1
  redis.call('HSET', key, 'i', interval + 5000)
end
redis.call('HSET', key, 'p', NOW)
return {slow, device(key)}`),

  /** ARGV[4] device code hash, tokens from ARGV[5]. */
  redeemDevice: script(DEVICE + `
local key = P .. 'dev:' .. ARGV[4]
local before = device(key)
if not before then return nil end
local v = redis.call('HMGET', key, 's', 'x', 'g', 'c', 'u', 'G')
if v[1] ~= 'approved' or tonumber(v[2]) <= NOW then return nil end
local grant = string.sub(v[6], 1, -2) .. ',"user_id":' .. cjson.encode(v[5]) .. '}'
if not upsert_grant(v[3], grant, v[4], v[5], tokens_expiry(5)) then return nil end
redis.call('HSET', key, 's', 'redeemed')
store_tokens(5, true)
return before`),
};
