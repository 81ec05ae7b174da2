/**
 * SyncTransport over a Redis Stream, for Upstash's REST protocol (https://), where a
 * request/response client cannot hold a subscription open:
 *   publish: XADD <key> MAXLEN ~ <n> * m <payload>   (Redis trims whole nodes, cheaply)
 *   read:    XREAD COUNT 256 STREAMS <key> <last id>  (no BLOCK: a blocking read would hold
 *            a REST request open), again at once while full pages come back, else after
 *            `pollMs`. The reader starts at the stream's current end (XREVRANGE … COUNT 1):
 *            history is not replayed; a late router asks its peers for snapshots instead.
 * Every poll is a REST request: on a metered Upstash plan, pollMs = 5 is 200 requests/s per
 * router. A reader that falls further behind than the trimmed length misses entries; the
 * sync layer sees the gap in `seq` and resyncs. Runs on any fetch runtime.
 */
import { openRedisConnection } from "./redis-client.ts";
import type { RedisConnection } from "./redis-connection.ts";
import type { SyncTransport, SyncTransportOptions, TransportCounters } from "./transport.ts";

const PAGE = 256;
const MAX_ERROR_BACKOFF_MS = 1_000;

export class StreamTransport implements SyncTransport {
  readonly kind = "stream";
  readonly counters: TransportCounters = { reconnects: 0, receiveErrors: 0 };
  #lastId: string | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #receiving = false;
  #failing = false;
  #backoffMs: number;
  #closed = false;
  #onMessage: (payload: string) => void = () => {};

  private constructor(
    readonly opts: SyncTransportOptions,
    readonly conn: RedisConnection,
  ) {
    this.#backoffMs = opts.pollMs;
  }

  static async open(opts: SyncTransportOptions): Promise<StreamTransport> {
    const conn = await openRedisConnection(opts.url, {
      token: opts.token,
      commandTimeoutMs: opts.commandTimeoutMs,
    });
    return new StreamTransport(opts, conn);
  }

  get receiving(): boolean {
    return this.#receiving;
  }

  async publish(payload: string): Promise<void> {
    await this.conn.command([
      "XADD",
      this.opts.channel,
      "MAXLEN",
      "~",
      String(this.opts.streamMaxLen),
      "*",
      "m",
      payload,
    ]);
  }

  async start(onMessage: (payload: string) => void): Promise<void> {
    this.#onMessage = onMessage;
    await this.#poll();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.conn.close();
  }

  async #poll(): Promise<void> {
    this.#timer = undefined;
    if (this.#closed) return;
    let full = false;
    try {
      this.#lastId ??= await this.#endId();
      const reply = await this.conn.command([
        "XREAD",
        "COUNT",
        String(PAGE),
        "STREAMS",
        this.opts.channel,
        this.#lastId,
      ]);
      full = this.#deliver(reply) >= PAGE;
      if (this.#failing) this.counters.reconnects++;
      this.#failing = false;
      this.#receiving = true;
      this.#backoffMs = this.opts.pollMs;
    } catch {
      this.counters.receiveErrors++;
      this.#failing = true;
      this.#receiving = false;
    }
    if (this.#closed) return;
    const delay = this.#failing ? this.#backoff() : full ? 0 : this.opts.pollMs;
    this.#timer = setTimeout(() => void this.#poll(), delay);
  }

  #backoff(): number {
    const d = this.#backoffMs;
    this.#backoffMs = Math.min(MAX_ERROR_BACKOFF_MS, Math.max(1, d) * 2);
    return d;
  }

  /** The id of the newest entry, or "0-0" for an empty stream. */
  async #endId(): Promise<string> {
    const reply = await this.conn.command(["XREVRANGE", this.opts.channel, "+", "-", "COUNT", "1"]);
    const first = Array.isArray(reply) ? reply[0] : undefined;
    return Array.isArray(first) && typeof first[0] === "string" ? first[0] : "0-0";
  }

  /** Hand each entry's `m` field to the listener; returns how many entries came. */
  #deliver(reply: unknown): number {
    // RESP2 shape: [[key, [[id, [field, value, …]], …]]], or null when nothing is new.
    if (!Array.isArray(reply)) return 0;
    const stream = reply[0];
    const entries: unknown = Array.isArray(stream) ? stream[1] : undefined;
    if (!Array.isArray(entries)) return 0;
    for (const entry of entries) {
      if (!Array.isArray(entry) || typeof entry[0] !== "string") continue;
      this.#lastId = entry[0];
      const fields: unknown = entry[1];
      if (!Array.isArray(fields)) continue;
      for (let i = 0; i + 1 < fields.length; i += 2) {
        if (fields[i] === "m" && typeof fields[i + 1] === "string")
          this.#onMessage(fields[i + 1] as string);
      }
    }
    return entries.length;
  }
}
