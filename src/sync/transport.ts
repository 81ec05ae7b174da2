/**
 * How sync messages travel, chosen by the Redis URL's scheme:
 *   redis://, rediss://  → pub/sub (pubsub-transport.ts): PUBLISH on the shared command
 *                          connection, SUBSCRIBE on a dedicated one. Pushed, sub-millisecond.
 *                          Bun only: INJECTED by the caller (`pubsub`: `openPubSubTransport`),
 *                          never imported here, so the Deno/workerd graphs reach no Bun code.
 *   https://, http://    → a Redis Stream (stream-transport.ts): XADD with MAXLEN ~, and XREAD
 *                          polled from the last id. Upstash's REST protocol has no long-lived
 *                          subscribe over plain request/response, so the reader polls.
 * Both deliver every message on the channel, our own included (the caller drops its own).
 */
export interface SyncTransport {
  readonly kind: "pubsub" | "stream";
  /** Send one message; rejects when Redis cannot take it now (the caller drops it). */
  publish(payload: string): Promise<void>;
  /** Deliver messages to `onMessage` from now on. Resolves after the first connect attempt; retries go on in the background. */
  start(onMessage: (payload: string) => void): Promise<void>;
  /** Whether the receiving side works right now (subscribed, or the last poll answered). */
  readonly receiving: boolean;
  readonly counters: TransportCounters;
  close(): Promise<void>;
}

export interface TransportCounters {
  /** Times the receiving side came back after losing Redis. */
  reconnects: number;
  /** Failed subscribe / poll attempts. */
  receiveErrors: number;
}

/** Opens the pub/sub transport (redis://, rediss://). */
export type PubSubOpener = (opts: SyncTransportOptions) => Promise<SyncTransport>;

export interface SyncTransportOptions {
  /** How to open redis:// URLs (Bun: pubsub-transport.ts's `openPubSubTransport`); without it they are refused. */
  readonly pubsub?: PubSubOpener;
  readonly url: string;
  /** Pub/sub channel name, or the stream's key. */
  readonly channel: string;
  /** Upstash REST token (https:// URLs). */
  readonly token?: string;
  /** A Redis command not answered by then fails (and its message is dropped). */
  readonly commandTimeoutMs: number;
  /** Stream reader: pause between polls that found nothing. */
  readonly pollMs: number;
  /** Stream: approximate number of entries kept (XADD MAXLEN ~). */
  readonly streamMaxLen: number;
}
