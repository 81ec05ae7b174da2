/**
 * Pushes KV events to the router: events collect for `batchMs`, then one POST of a JSON array (the
 * RouterEvent wire form of core/events.ts) to `${routerUrl}/v1/kv/events`. One POST in flight at a
 * time, so batches arrive in id order. A failed POST is dropped and counted, never retried or
 * waited on: requests must not depend on the router, and the router sees the gap in the event ids
 * and fetches what it missed from /kv/query. `fetch` is injected. One publisher serves one router;
 * an engine with several routers has one each (server.ts), so a slow or absent router never holds
 * back the others' batches.
 */
import { routerEventToWire, type RouterEvent } from "../core/events.ts";
import { stringifyBigint } from "../core/json.ts";

export interface PublisherOptions {
  routerUrl: string;
  /** The router's --events-token: the engine's own credential for pushes, never the admin token. */
  eventsToken?: string;
  batchMs: number;
  fetch?: typeof fetch;
  /** Called with a description of each failed push (logging). */
  onError?: (message: string) => void;
}

/** Upper bound per POST, so a burst (a big clear/restore) is not one enormous body. */
const MAX_BATCH_EVENTS = 4096;
/** A hung router must not stall the publisher (or shutdown) for long; the batch is dropped. */
const PUSH_TIMEOUT_MS = 5_000;

export class EventPublisher {
  private pending: RouterEvent[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private inFlight: Promise<void> | undefined;
  private stopped = false;
  private readonly url: string;
  /** The router's base URL (without trailing slashes), as in metrics labels. */
  readonly routerUrl: string;
  private readonly doFetch: typeof fetch;
  private readonly headers: Record<string, string>;
  sentBatches = 0;
  sentEvents = 0;
  failedBatches = 0;
  droppedEvents = 0;

  constructor(private readonly o: PublisherOptions) {
    this.routerUrl = o.routerUrl.replace(/\/+$/, "");
    this.url = `${this.routerUrl}/v1/kv/events`;
    this.doFetch = o.fetch ?? fetch;
    // Marks the batch as this engine's own stream, ordered by its ids (src/fleet/events/http-batch.ts).
    this.headers = { "content-type": "application/json", "x-switchyard-event-source": "engine" };
    if (o.eventsToken) this.headers.authorization = `Bearer ${o.eventsToken}`;
  }

  push(event: RouterEvent): void {
    if (this.stopped) return;
    this.pending.push(event);
    if (this.timer === undefined && this.inFlight === undefined) {
      this.timer = setTimeout(() => this.fire(), this.o.batchMs);
    }
  }

  private fire(): void {
    this.timer = undefined;
    if (this.inFlight !== undefined || this.pending.length === 0) return;
    const batch =
      this.pending.length <= MAX_BATCH_EVENTS
        ? this.pending
        : this.pending.slice(0, MAX_BATCH_EVENTS);
    this.pending = batch === this.pending ? [] : this.pending.slice(MAX_BATCH_EVENTS);
    this.inFlight = this.send(batch).finally(() => {
      this.inFlight = undefined;
      // Events that arrived meanwhile go out after their own batching window.
      if (this.pending.length > 0 && !this.stopped)
        this.timer = setTimeout(() => this.fire(), this.o.batchMs);
    });
  }

  private async send(batch: RouterEvent[]): Promise<void> {
    try {
      const body = stringifyBigint(batch.map(routerEventToWire));
      const res = await this.doFetch(this.url, {
        method: "POST",
        headers: this.headers,
        body,
        signal: AbortSignal.timeout(PUSH_TIMEOUT_MS),
      });
      // Drain the body so the connection can be reused.
      await res.arrayBuffer().catch(() => undefined);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      this.sentBatches++;
      this.sentEvents += batch.length;
    } catch (e) {
      this.failedBatches++;
      this.droppedEvents += batch.length;
      this.o.onError?.(
        `KV event push of ${batch.length} events to ${this.url} failed: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

  /** Send everything pending now and wait for it (tests, shutdown). */
  async flush(): Promise<void> {
    for (;;) {
      if (this.timer !== undefined) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
      if (this.inFlight !== undefined) await this.inFlight;
      if (this.timer !== undefined) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
      if (this.pending.length === 0) return;
      this.fire();
    }
  }

  /** Flush, then accept no more events. */
  async stop(): Promise<void> {
    await this.flush();
    this.stopped = true;
  }
}
