/**
 * Burst claims in Redis (the port of src/router/books/burst-claims.ts): one list that every router
 * in front of the same engines appends its decisions to. A claim is ONE script: drop what has
 * aged out of the window, read what is left, append this claim; so of two routers deciding in the
 * same instant, the one Redis runs second sees the first's claim. A request's claim lives for the
 * window only (its booking reaches the other routers through the load sync well within it).
 *
 *   <key>  list of "<at ms>|<router id, 16 hex>|<worker id>|<dp rank>|<tokens>|<prefix>|<request id>"
 *          (prefix: "<blocks>:<sequence hash, hex>" marks, comma-separated, burst-claims.ts claimPrefix),
 *          oldest first; at most MAX_CLAIMS; the key expires when no router has claimed for a while
 *
 * Time is Redis TIME (or ARGV now, for tests), so routers share one clock. Every command goes
 * through the connection's hang guard (redis-guard.ts): a slow or absent Redis fails the claim
 * at the command deadline, and the router decides on its own books, as without claims.
 */
import type { BurstClaim, BurstClaims, HeldClaim, PrefixMark } from "../router/index.ts";
import { routerIdHex } from "../core/ids.ts";
import { LuaScript } from "./redis-client.ts";
import type { RedisConnection } from "./redis-connection.ts";
import { LUA_NOW_MS } from "./redis-scripts.ts";

/** Default list key (the load sync's channel is "switchyard:active_sequences"). */
export const DEFAULT_CLAIMS_KEY = "switchyard:burst_claims";
/** Default window: claims older than this are dropped (ms). */
export const DEFAULT_CLAIM_WINDOW_MS = 100;
/**
 * The most claims kept (and returned). A claim is ~300 bytes with its prefix marks, so a reply is
 * at most ~80 kB; 256 claims within the default 100 ms is ~2,500 decisions a second across the
 * routers (past that, the window is shorter than set: the oldest claims go first).
 */
export const MAX_CLAIMS = 256;

/**
 * Claim. KEYS: the list. ARGV: now ('' = TIME), window ms, max claims, the claim without its time,
 * the stored claim it replaces ('' none). Returns {the stored claim, the earlier claims...}.
 */
export const CLAIM = new LuaScript(`${LUA_NOW_MS}
local now = now_ms(ARGV[1])
local window = tonumber(ARGV[2])
local oldest = now - window
while true do
  local head = redis.call('LINDEX', KEYS[1], 0)
  if not head then break end
  local at = tonumber(string.match(head, '^(%d+)|'))
  if at and at >= oldest then break end
  redis.call('LPOP', KEYS[1])
end
if ARGV[5] ~= '' then redis.call('LREM', KEYS[1], 1, ARGV[5]) end
local earlier = redis.call('LRANGE', KEYS[1], 0, -1)
local stored = string.format('%d', now) .. '|' .. ARGV[4]
redis.call('RPUSH', KEYS[1], stored)
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[3]), -1)
redis.call('PEXPIRE', KEYS[1], window * 10 + 1000)
table.insert(earlier, 1, stored)
return earlier
`);

export interface RedisBurstClaimsOptions {
  readonly key?: string;
  readonly windowMs?: number;
  /** Tests: a fixed time instead of Redis TIME (ms). */
  readonly now?: () => number;
}

export class RedisBurstClaims implements BurstClaims {
  readonly #key: string;
  readonly #windowMs: number;

  constructor(
    private readonly conn: RedisConnection,
    private readonly opts: RedisBurstClaimsOptions = {},
  ) {
    this.#key = opts.key ?? DEFAULT_CLAIMS_KEY;
    this.#windowMs = opts.windowMs ?? DEFAULT_CLAIM_WINDOW_MS;
  }

  async claim(
    mine: BurstClaim,
    replaces?: HeldClaim,
  ): Promise<{ held: HeldClaim; earlier: BurstClaim[] }> {
    const now = this.opts.now === undefined ? "" : String(Math.floor(this.opts.now()));
    const args = [
      now,
      String(this.#windowMs),
      String(MAX_CLAIMS),
      encodeClaim(mine),
      replaces?.stored ?? "",
    ];
    const reply = await CLAIM.run(this.conn, [this.#key], args);
    if (!Array.isArray(reply) || reply.length === 0)
      throw new Error(`burst claim: unexpected reply ${String(reply)}`);
    const earlier: BurstClaim[] = [];
    for (let i = 1; i < reply.length; i++) {
      const c = decodeStoredClaim(String(reply[i]));
      if (c !== undefined) earlier.push(c);
    }
    return { held: { stored: String(reply[0]) }, earlier };
  }
}

/** A claim as the script stores it, less the time it prepends. */
export function encodeClaim(c: BurstClaim): string {
  const prefix = c.prefix.map((m) => `${m.blocks}:${m.hash.toString(16)}`).join(",");
  return `${routerIdHex(c.routerId)}|${c.worker.workerId}|${c.worker.dpRank}|${Math.max(0, Math.round(c.tokens))}|${prefix}|${c.requestId}`;
}

const STORED =
  /^\d+\|([0-9a-f]{16})\|(\d+)\|(\d+)\|(\d+)\|((?:\d+:[0-9a-f]{1,16})(?:,\d+:[0-9a-f]{1,16})*)?\|(.*)$/s;

/** A stored claim ("<at>|" + encodeClaim), or undefined for anything else (never throws). */
export function decodeStoredClaim(s: string): BurstClaim | undefined {
  const m = STORED.exec(s);
  if (m === null) return undefined;
  const workerId = BigInt(m[2]!);
  if (workerId >= 1n << 64n) return undefined;
  const prefix: PrefixMark[] = [];
  if (m[5] !== undefined) {
    for (const part of m[5].split(",")) {
      const i = part.indexOf(":");
      prefix.push({ blocks: Number(part.slice(0, i)), hash: BigInt(`0x${part.slice(i + 1)}`) });
    }
  }
  return {
    routerId: BigInt(`0x${m[1]}`),
    worker: { workerId, dpRank: Number(m[3]) },
    tokens: Number(m[4]),
    prefix,
    requestId: m[6]!,
  };
}
