/**
 * RedisConnection over Bun's built-in RedisClient (RESP3, auto-pipelined).
 *
 * Commands never wait in an offline queue: while Redis is away they fail at once, and the
 * store answers "no binding". Reconnection is ours: the next command after a failure starts
 * one connect attempt (others wait for that same attempt); after a failed attempt the next
 * one waits a backoff (0.2 s doubling to 2 s) and commands fail fast meanwhile.
 */
import { RedisClient } from "bun";
import { withTimeout, type RespOpener } from "../../sync/redis-client.ts";
import type { RedisConnection } from "../../sync/redis-connection.ts";

const MIN_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 2_000;

export class RespConnection implements RedisConnection {
  readonly kind = "resp";
  readonly #client: RedisClient;
  readonly #timeoutMs: number;
  #connecting: Promise<void> | undefined;
  #retryAt = 0;
  #backoffMs = MIN_BACKOFF_MS;
  #closed = false;

  private constructor(url: string, timeoutMs: number) {
    this.#timeoutMs = timeoutMs;
    this.#client = new RedisClient(url, {
      autoReconnect: false,
      enableOfflineQueue: false,
      connectionTimeout: timeoutMs,
    });
  }

  /** Connects once; if Redis is down the connection is still returned and retries later. */
  static async open(url: string, timeoutMs: number): Promise<RespConnection> {
    const conn = new RespConnection(url, timeoutMs);
    await conn.#ready().catch(() => {});
    return conn;
  }

  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.#send("EVAL", [script, String(keys.length), ...keys, ...args]);
  }

  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.#send("EVALSHA", [sha1, String(keys.length), ...keys, ...args]);
  }

  command(args: readonly string[]): Promise<unknown> {
    const [name, ...rest] = args;
    if (!name) return Promise.reject(new Error("empty Redis command"));
    return this.#send(name, rest);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#client.close();
  }

  async #send(command: string, args: string[]): Promise<unknown> {
    if (!this.#client.connected) await this.#ready();
    return withTimeout(this.#client.send(command, args), this.#timeoutMs, `redis ${command}`);
  }

  #ready(): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("redis connection closed"));
    if (this.#client.connected) return Promise.resolve();
    if (this.#connecting) return this.#connecting;
    const now = performance.now();
    if (now < this.#retryAt)
      return Promise.reject(new Error("redis unavailable (waiting to reconnect)"));
    this.#connecting = withTimeout(this.#client.connect(), this.#timeoutMs, "redis connect").then(
      () => {
        this.#connecting = undefined;
        this.#backoffMs = MIN_BACKOFF_MS;
      },
      (e: unknown) => {
        this.#connecting = undefined;
        this.#retryAt = performance.now() + this.#backoffMs;
        this.#backoffMs = Math.min(MAX_BACKOFF_MS, this.#backoffMs * 2);
        throw e;
      },
    );
    return this.#connecting;
  }
}

/** The RESP opener the Bun runtime hands to openRedisConnection (`resp`); see redis-client.ts. */
export const openRespConnection: RespOpener = (url, timeoutMs) =>
  RespConnection.open(url, timeoutMs);
