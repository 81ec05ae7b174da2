/**
 * The Lua scripts behind the Redis affinity store. Each store operation is one script, so
 * each is atomic on the server: no router can see or act on half an update.
 *
 * Layout:
 *   <prefix>s:<sessionId>  string "workerId|dpRank|ttlMs|kind|expiresAt" (kind e|r, ms)
 *   <prefix>expiry         sorted set: engine-backed session ids scored by expiresAt
 * Expiry is decided by the stored expiresAt against the store clock (ARGV now, or Redis
 * TIME when now is ""). The keys' own PEXPIRE only collects garbage: router-only keys live
 * ttl + slack, engine-backed keys ttl + grace (they must outlive their expiry until a reaper
 * has claimed them and closed the engine session).
 */
import { LuaScript } from "./redis-client.ts";

/**
 * Lua: the caller's clock when it passes one (ms), else Redis' own TIME, so every router's
 * scripts agree on "now" without trusting their clocks. Shared by the session and limit scripts.
 */
export const LUA_NOW_MS = `local function now_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

const PRELUDE = `
${LUA_NOW_MS}local function parse(v)
  local w, r, ttl, k, exp = string.match(v, '^(%d+)|(%d+)|(%d+)|([er])|(%d+)$')
  if not w then return nil end
  return { w = w, r = r, ttl = tonumber(ttl), k = k, exp = tonumber(exp) }
end
local function encode(b)
  return b.w .. '|' .. b.r .. '|' .. string.format('%d', b.ttl) .. '|' .. b.k .. '|' .. string.format('%d', b.exp)
end
local function save(key, zset, id, b, slack, grace)
  if b.k == 'e' then
    redis.call('SET', key, encode(b), 'PX', string.format('%d', b.ttl + grace))
    redis.call('ZADD', zset, string.format('%d', b.exp), id)
  else
    redis.call('SET', key, encode(b), 'PX', string.format('%d', b.ttl + slack))
    redis.call('ZREM', zset, id)
  end
end
`;

/**
 * get / peek. KEYS: binding, expiry set. ARGV: now, id, refresh ("1"|"0"), slack, grace.
 * Returns {0} none, {1, value} live (refreshed if asked), {2, value} expired and claimed by
 * this call: an engine-backed binding whose ZREM this caller won, so it must call onExpire.
 */
export const LOOKUP = new LuaScript(`${PRELUDE}
local v = redis.call('GET', KEYS[1])
if not v then return {0} end
local b = parse(v)
if not b then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[2])
  return {0}
end
local now = now_ms(ARGV[1])
if b.exp <= now then
  redis.call('DEL', KEYS[1])
  if b.k == 'e' and redis.call('ZREM', KEYS[2], ARGV[2]) == 1 then return {2, v} end
  return {0}
end
if ARGV[3] == '1' then
  b.exp = now + b.ttl
  save(KEYS[1], KEYS[2], ARGV[2], b, tonumber(ARGV[4]), tonumber(ARGV[5]))
  v = encode(b)
end
return {1, v}
`);

/** put. KEYS: binding, expiry set. ARGV: now, id, workerId, dpRank, ttlMs, kind, slack, grace. */
export const PUT = new LuaScript(`${PRELUDE}
local now = now_ms(ARGV[1])
local ttl = tonumber(ARGV[5])
local b = { w = ARGV[3], r = ARGV[4], ttl = ttl, k = ARGV[6], exp = now + ttl }
save(KEYS[1], KEYS[2], ARGV[2], b, tonumber(ARGV[7]), tonumber(ARGV[8]))
return {1, encode(b)}
`);

/** remove. KEYS: binding, expiry set. ARGV: id. Returns {0} or {1, value}. */
export const REMOVE = new LuaScript(`
local v = redis.call('GET', KEYS[1])
if not v then return {0} end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return {1, v}
`);

/**
 * Reaper claim. KEYS: expiry set. ARGV: now, limit, binding key prefix. Looks at up to
 * `limit` ids due by now; each expired engine-backed binding is deleted and returned, so
 * exactly one router (the one whose script ran) closes it. Returns {scanned, {id, value, …}}.
 * (Binding keys are built here from the prefix; the prefix's {hash tag} keeps every key of
 * the store in one cluster slot.)
 */
export const CLAIM_EXPIRED = new LuaScript(`${PRELUDE}
local now = now_ms(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now), 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for i = 1, #ids do
  local id = ids[i]
  local key = ARGV[3] .. id
  local v = redis.call('GET', key)
  local b = v and parse(v)
  if b and b.k == 'e' and b.exp > now then
    redis.call('ZADD', KEYS[1], string.format('%d', b.exp), id)
  else
    redis.call('ZREM', KEYS[1], id)
    if b and b.k == 'e' then
      redis.call('DEL', key)
      out[#out + 1] = id
      out[#out + 1] = v
    end
  end
end
return {#ids, out}
`);
