/**
 * A SUBSCRIBE that survives Redis going away, on its own Bun RedisClient (a subscribed
 * connection can run no other command). Bun does not resubscribe after a reconnect, and a
 * reconnected client keeps its old listeners, so every (re)connection is a fresh client.
 * Retries back off from 100 ms to 2 s. Messages published while disconnected are lost:
 * the sync layer notices them by their sequence numbers. Bun only.
 */
import { RedisClient } from "bun";

const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 2_000;

export class RespSubscriber {
  #client: RedisClient | undefined;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #backoffMs = MIN_BACKOFF_MS;
  #closed = false;
  #everConnected = false;
  reconnects = 0;
  errors = 0;

  constructor(
    readonly url: string,
    readonly channel: string,
    readonly connectTimeoutMs: number,
    readonly onMessage: (payload: string) => void,
  ) {}

  get subscribed(): boolean {
    return this.#client !== undefined;
  }

  /** First attempt; on failure, retries continue in the background. */
  start(): Promise<void> {
    return this.#attempt();
  }

  close(): void {
    this.#closed = true;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    this.#retry = undefined;
    const c = this.#client;
    this.#client = undefined;
    c?.close();
  }

  async #attempt(): Promise<void> {
    this.#retry = undefined;
    if (this.#closed) return;
    const client = new RedisClient(this.url, {
      autoReconnect: false,
      enableOfflineQueue: false,
      connectionTimeout: this.connectTimeoutMs,
    });
    let live = false;
    client.onclose = () => {
      if (!live) return; // a failed attempt is handled below
      live = false;
      if (this.#client === client) this.#client = undefined;
      this.#scheduleRetry();
    };
    try {
      await client.connect();
      await client.subscribe(this.channel, (message) => this.onMessage(message));
      if (this.#closed) {
        client.close();
        return;
      }
      live = true;
      this.#client = client;
      this.#backoffMs = MIN_BACKOFF_MS;
      if (this.#everConnected) this.reconnects++;
      this.#everConnected = true;
    } catch {
      this.errors++;
      client.close();
      this.#scheduleRetry();
    }
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retry !== undefined) return;
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(MAX_BACKOFF_MS, this.#backoffMs * 2);
    this.#retry = setTimeout(() => void this.#attempt(), delay);
  }
}
