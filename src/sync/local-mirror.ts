/**
 * This router's own active requests as replicas know them: the add event as published and
 * whether its prefill is done. It exists to answer resync requests with a snapshot; the
 * LoadTracker does not keep the add's original fields (sequence hashes, isl, overlap).
 * It holds a reference to each request's sequence-hash array, no copy. No I/O.
 */
import type { ActiveSequenceEvent } from "../router/index.ts";

interface Entry {
  readonly add: ActiveSequenceEvent;
  prefillDone: boolean;
}

export class LocalMirror {
  readonly #entries = new Map<string, Entry>();

  get size(): number {
    return this.#entries.size;
  }

  /** Follow one local event (called on the request path: O(1), no allocation beyond the entry). */
  record(ev: ActiveSequenceEvent): void {
    switch (ev.data.type) {
      case "add_request":
        this.#entries.set(ev.requestId, { add: ev, prefillDone: false });
        return;
      case "mark_prefill_completed": {
        const e = this.#entries.get(ev.requestId);
        if (e) e.prefillDone = true;
        return;
      }
      case "free":
        this.#entries.delete(ev.requestId);
        return;
    }
  }

  /**
   * Every live request as an add event, each followed by a MarkPrefillCompleted when its
   * prefill is done. Requests the tracker dropped without an event (its 300 s expiry, a
   * removed worker) are forgotten on the way.
   */
  snapshot(isLive: (requestId: string) => boolean): ActiveSequenceEvent[] {
    this.prune(isLive);
    const out: ActiveSequenceEvent[] = [];
    for (const { add, prefillDone } of this.#entries.values()) {
      out.push(add);
      if (prefillDone) out.push({ ...add, data: { type: "mark_prefill_completed" } });
    }
    return out;
  }

  prune(isLive: (requestId: string) => boolean): number {
    let n = 0;
    for (const id of this.#entries.keys()) {
      if (!isLive(id)) {
        this.#entries.delete(id);
        n++;
      }
    }
    return n;
  }
}
