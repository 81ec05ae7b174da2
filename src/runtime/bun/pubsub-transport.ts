/**
 * SyncTransport over RESP (redis://, rediss://): PUBLISH through the sessions' RESP
 * connection (no offline queue, own reconnect with backoff, command timeout), messages in
 * through a dedicated self-reconnecting subscriber. Bun only.
 */
import { openRedisConnection } from "../../sync/redis-client.ts";
import type { RedisConnection } from "../../sync/redis-connection.ts";
import { DEFAULT_PROBE_TIMEOUT_MS } from "../../sync/redis-guard.ts";
import { openRespConnection } from "./resp-client.ts";
import { RespSubscriber } from "./resp-subscriber.ts";
import type {
  PubSubOpener,
  SyncTransport,
  SyncTransportOptions,
  TransportCounters,
} from "../../sync/transport.ts";

export class PubSubTransport implements SyncTransport {
  readonly kind = "pubsub";
  #subscriber: RespSubscriber | undefined;

  private constructor(
    readonly opts: SyncTransportOptions,
    readonly conn: RedisConnection,
  ) {}

  static async open(opts: SyncTransportOptions): Promise<PubSubTransport> {
    return new PubSubTransport(
      opts,
      await openRedisConnection(opts.url, {
        commandTimeoutMs: opts.commandTimeoutMs,
        resp: openRespConnection,
      }),
    );
  }

  get receiving(): boolean {
    return this.#subscriber?.subscribed ?? false;
  }

  get counters(): TransportCounters {
    return {
      reconnects: this.#subscriber?.reconnects ?? 0,
      receiveErrors: this.#subscriber?.errors ?? 0,
    };
  }

  async publish(payload: string): Promise<void> {
    await this.conn.command(["PUBLISH", this.opts.channel, payload]);
  }

  start(onMessage: (payload: string) => void): Promise<void> {
    // Subscribing is off the request path: it gets the probe's deadline, not the command's.
    const connectTimeoutMs = Math.max(this.opts.commandTimeoutMs, DEFAULT_PROBE_TIMEOUT_MS);
    this.#subscriber = new RespSubscriber(
      this.opts.url,
      this.opts.channel,
      connectTimeoutMs,
      onMessage,
    );
    return this.#subscriber.start();
  }

  async close(): Promise<void> {
    this.#subscriber?.close();
    await this.conn.close();
  }
}

/** The pub/sub opener the Bun runtime hands to openSyncTransport (`pubsub`); see transport.ts. */
export const openPubSubTransport: PubSubOpener = (opts) => PubSubTransport.open(opts);
