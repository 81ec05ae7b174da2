/**
 * RedisConnection over Upstash's REST protocol (@upstash/redis): works wherever `fetch`
 * does, edge runtimes included. Replies come back raw (no JSON deserialisation: a binding
 * like "42|0|…" must stay a string), each request is one attempt (no client retries: the
 * store degrades instead) and is aborted after the command timeout.
 */
import { Redis } from "@upstash/redis";
import type { RedisConnection } from "./redis-connection.ts";

export class UpstashConnection implements RedisConnection {
  readonly kind = "rest";
  readonly #redis: Redis;

  constructor(url: string, token: string, timeoutMs: number) {
    this.#redis = new Redis({
      url,
      token,
      automaticDeserialization: false,
      retry: { retries: 0 },
      enableTelemetry: false,
      signal: () => AbortSignal.timeout(timeoutMs),
    });
  }

  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.#redis.eval(script, [...keys], [...args]);
  }

  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.#redis.evalsha(sha1, [...keys], [...args]);
  }

  command(args: readonly string[]): Promise<unknown> {
    const [name, ...rest] = args;
    if (!name) return Promise.reject(new Error("empty Redis command"));
    return this.#redis.exec([name, ...rest]);
  }

  async close(): Promise<void> {
    // HTTP: nothing stays open.
  }
}
