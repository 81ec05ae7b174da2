/**
 * The little of Redis that the affinity store needs, behind one interface, with two
 * implementations chosen by URL:
 *   redis:// or rediss://  → Bun's built-in RedisClient (RESP), resp-client.ts — INJECTED by
 *                            the caller (`resp`, e.g. `openRespConnection`), never imported
 *                            here, so the Deno and workerd module graphs (and workerd's bundle)
 *                            cannot reach Bun code (test/architecture.test.ts checks it)
 *   https:// (or http://)  → @upstash/redis (Upstash's REST protocol), upstash-client.ts:
 *                            portable (fetch only), imported when its scheme is used
 * Both are wrapped in the hang guard.
 */
import { DEFAULT_PROBE_TIMEOUT_MS, HangGuardConnection, withDeadline } from "./redis-guard.ts";
import type { RedisConnection } from "./redis-connection.ts";

/** Opens a RESP connection (redis://, rediss://) with this connect/command deadline. */
export type RespOpener = (url: string, timeoutMs: number) => Promise<RedisConnection>;

export interface RedisConnectionOptions {
  /**
   * How to open redis:// and rediss:// URLs; Bun passes resp-client.ts's `openRespConnection`.
   * Without it such a URL is refused (the portable runtimes speak Upstash REST only).
   */
  readonly resp?: RespOpener;
  /** Upstash REST token (https:// URLs). */
  readonly token?: string;
  /**
   * The longest a command may wait (default 50 ms): one that has not answered by then fails
   * and the connection is treated as down until a probe answers (redis-guard.ts), so a hung
   * Redis costs a request this much at most, once.
   */
  readonly commandTimeoutMs?: number;
  /** Deadline of a probe PING and of a connect attempt (default 1 s); off the request path. */
  readonly probeTimeoutMs?: number;
  /** Told when the connection goes down (a command timed out) and comes back. */
  readonly onAvailabilityChange?: (up: boolean) => void;
}

export { DEFAULT_COMMAND_TIMEOUT_MS } from "./redis-guard.ts";

/** Open by URL scheme, behind the hang guard. */
export async function openRedisConnection(
  url: string,
  opts: RedisConnectionOptions = {},
): Promise<HangGuardConnection> {
  const scheme = url.slice(0, url.indexOf(":") + 1).toLowerCase();
  // The transport's own deadline is the probe's: the guard puts the short one on commands.
  const innerTimeoutMs = Math.max(
    opts.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS,
    opts.commandTimeoutMs ?? 0,
  );
  let inner: RedisConnection;
  switch (scheme) {
    case "redis:":
    case "rediss:": {
      if (opts.resp === undefined)
        throw new Error(
          `${scheme}// needs a RESP client, which runs on Bun only (use an Upstash REST https:// URL here)`,
        );
      inner = await opts.resp(url, innerTimeoutMs);
      break;
    }
    case "https:":
    case "http:": {
      if (!opts.token) throw new Error(`an Upstash REST URL (${url}) needs a token`);
      const { UpstashConnection } = await import("./upstash-client.ts");
      inner = new UpstashConnection(url, opts.token, innerTimeoutMs);
      break;
    }
    default:
      throw new Error(
        `unsupported Redis URL scheme "${scheme}" (use redis://, rediss:// or https://)`,
      );
  }
  return new HangGuardConnection(inner, {
    timeoutMs: opts.commandTimeoutMs,
    probeTimeoutMs: opts.probeTimeoutMs,
    onChange: opts.onAvailabilityChange,
  });
}

/** A Lua script run by SHA1 (EVALSHA), falling back to EVAL when the server lacks it. */
export class LuaScript {
  #sha1: string | undefined;

  constructor(readonly source: string) {
    void sha1Hex(source).then((h) => (this.#sha1 = h));
  }

  async run(
    conn: RedisConnection,
    keys: readonly string[],
    args: readonly string[],
  ): Promise<unknown> {
    const sha1 = this.#sha1;
    if (sha1 !== undefined) {
      try {
        return await conn.evalsha(sha1, keys, args);
      } catch (e) {
        // After a restart or SCRIPT FLUSH the cache is empty: EVAL loads the script again.
        if (!String((e as Error)?.message ?? e).includes("NOSCRIPT")) throw e;
      }
    }
    return conn.eval(this.source, keys, args);
  }
}

async function sha1Hex(text: string): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-1", new TextEncoder().encode(text)),
  );
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/** Reject with a RedisTimeoutError if `p` takes longer than `ms`. */
export const withTimeout = withDeadline;
