/**
 * The Lua scripts behind the per-tenant limits shared by every router. A check is ONE script,
 * so "is there room in every limited dimension? then take it from all" is atomic on the
 * server: N routers enforce one limit, not N, and no two can both take the last unit.
 *
 * Layout (the {hash tag} keeps a tenant's keys, and all of them, in one cluster slot):
 *   <prefix>t:<tenant>  hash: r / rt, p / pt, o / ot — the request, prompt-token and
 *                       output-token buckets (level, ms it was last brought up to date)
 *   <prefix>c:<tenant>  sorted set: running requests by id, scored by when their slot lapses
 *
 * Buckets hold at most the per-minute limit and refill at limit per minute, with the same
 * arithmetic as src/protect/limits/token-bucket.ts. Time is Redis TIME, read inside the
 * script (or ARGV now, for tests), so every router shares one clock. A running request's slot
 * lapses after the lease unless released: a router that dies mid-request must not hold a
 * tenant's slot for ever. The keys' own PEXPIRE only collects garbage once a bucket is full.
 */
import { LuaScript } from "./redis-client.ts";
import { LUA_NOW_MS } from "./redis-scripts.ts";

const PRELUDE = `
${LUA_NOW_MS}local function bucket(key, name, lim, now)
  local v = redis.call('HMGET', key, name, name .. 't')
  local l, at = tonumber(v[1]), tonumber(v[2])
  if not l or not at then return lim end
  if now > at then l = math.min(lim, l + (now - at) * lim / 60000) end
  return l
end
local function reset_ms(l, lim)
  if l >= lim then return 0 end
  return math.ceil((lim - l) * 60000 / lim)
end
`;

/**
 * Check and take. KEYS: buckets hash, running set. ARGV: now, limit requests, limit prompt
 * tokens, limit output tokens, limit concurrent (0 = none), prompt tokens, output tokens
 * booked, request id, lease ms. Returns {allowed, refused (0 none, 1 requests, 2 prompt, 3
 * output, 4 concurrent), too_large, retry_ms, then remaining and reset ms for requests,
 * prompt, output, then remaining concurrent, output booked}.
 */
export const ACQUIRE = new LuaScript(`${PRELUDE}
local now = now_ms(ARGV[1])
local lim = { tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]) }
local conc = tonumber(ARGV[5])
local cost = { 1, tonumber(ARGV[6]), tonumber(ARGV[7]) }
local names = { 'r', 'p', 'o' }
local level = { 0, 0, 0 }
local refused, too_large, retry = 0, 0, 0
for i = 1, 3 do
  if lim[i] > 0 then
    level[i] = bucket(KEYS[1], names[i], lim[i], now)
    if i > 1 and cost[i] > lim[i] then
      too_large = 1
      if refused == 0 then refused = i end
    elseif level[i] < cost[i] then
      if refused == 0 then refused = i end
      local w = math.ceil((cost[i] - level[i]) * 60000 / lim[i])
      if w > retry then retry = w end
    end
  end
end
local running = 0
if conc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  running = redis.call('ZCARD', KEYS[2])
  if running >= conc then
    if refused == 0 then refused = 4 end
    if retry < 1000 then retry = 1000 end
  end
end
if refused == 0 then
  for i = 1, 3 do
    if lim[i] > 0 then level[i] = level[i] - cost[i] end
  end
  if conc > 0 then
    local lease = tonumber(ARGV[9])
    redis.call('ZADD', KEYS[2], now + lease, ARGV[8])
    redis.call('PEXPIRE', KEYS[2], lease)
    running = running + 1
  end
else
  retry = math.max(retry, 1)
end
local fields, ttl = {}, 60000
for i = 1, 3 do
  if lim[i] > 0 then
    fields[#fields + 1] = names[i]
    fields[#fields + 1] = string.format('%.3f', level[i])
    fields[#fields + 1] = names[i] .. 't'
    fields[#fields + 1] = string.format('%d', now)
    ttl = math.max(ttl, reset_ms(level[i], lim[i]) + 60000)
  end
end
if #fields > 0 then
  redis.call('HSET', KEYS[1], unpack(fields))
  redis.call('PEXPIRE', KEYS[1], ttl)
end
local out = { refused == 0 and 1 or 0, refused, too_large, retry }
for i = 1, 3 do
  out[#out + 1] = math.floor(level[i])
  out[#out + 1] = lim[i] > 0 and reset_ms(level[i], lim[i]) or 0
end
out[#out + 1] = conc > 0 and (conc - running) or 0
out[#out + 1] = cost[3]
return out
`);

/**
 * Release. KEYS: buckets hash, running set. ARGV: now, limit output tokens, output tokens
 * generated minus booked (a refund when negative), request id, limit prompt tokens, prompt
 * tokens reported minus charged. The request's slot frees and each bucket is charged its
 * difference.
 */
export const RELEASE = new LuaScript(`${PRELUDE}
local now = now_ms(ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[4])
local ttl = 0
local function settle(name, lim, delta)
  if lim > 0 and delta ~= 0 then
    local l = math.min(lim, bucket(KEYS[1], name, lim, now) - delta)
    redis.call('HSET', KEYS[1], name, string.format('%.3f', l), name .. 't', string.format('%d', now))
    ttl = math.max(ttl, 60000, reset_ms(l, lim) + 60000)
  end
end
settle('o', tonumber(ARGV[2]), tonumber(ARGV[3]))
settle('p', tonumber(ARGV[5] or '0'), tonumber(ARGV[6] or '0'))
-- Only ever lengthened: another bucket in the hash may need longer.
if ttl > 0 and redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
`);
