/**
 * The little of Redis that the affinity store needs, behind one interface, with two
 * implementations chosen by URL:
 *   redis:// or rediss://  → Bun's built-in RedisClient (RESP), resp-client.ts
 *   https:// (or http://)  → @upstash/redis (Upstash's REST protocol), upstash-client.ts
 * Each implementation is imported only when its scheme is used, so an edge runtime that
 * only speaks REST never loads the Bun one.
 */

export interface RedisConnection {
  readonly kind: "resp" | "rest";
  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** Any other command, e.g. ["PING"]. */
  command(args: readonly string[]): Promise<unknown>;
  close(): Promise<void>;
}

export interface RedisConnectionOptions {
  /** Upstash REST token (https:// URLs). */
  readonly token?: string;
  /** A command that has not answered by then fails, so a hung Redis cannot hang requests. */
  readonly commandTimeoutMs?: number;
}

/** Long enough for a loaded Redis, short enough that a sticky lookup never stalls a request. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 1_000;

export async function openRedisConnection(url: string, opts: RedisConnectionOptions = {}): Promise<RedisConnection> {
  const scheme = url.slice(0, url.indexOf(":") + 1).toLowerCase();
  const timeoutMs = opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
  switch (scheme) {
    case "redis:":
    case "rediss:": {
      const { RespConnection } = await import("./resp-client.ts");
      return RespConnection.open(url, timeoutMs);
    }
    case "https:":
    case "http:": {
      if (!opts.token) throw new Error(`an Upstash REST URL (${url}) needs a token`);
      const { UpstashConnection } = await import("./upstash-client.ts");
      return new UpstashConnection(url, opts.token, timeoutMs);
    }
    default:
      throw new Error(`unsupported Redis URL scheme "${scheme}" (use redis://, rediss:// or https://)`);
  }
}

/** A Lua script run by SHA1 (EVALSHA), falling back to EVAL when the server lacks it. */
export class LuaScript {
  #sha1: string | undefined;

  constructor(readonly source: string) {
    void sha1Hex(source).then((h) => (this.#sha1 = h));
  }

  async run(conn: RedisConnection, keys: readonly string[], args: readonly string[]): Promise<unknown> {
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
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-1", new TextEncoder().encode(text)));
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/** Reject with a clear error if `p` takes longer than `ms`. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
