/**
 * Bookings made through POST /v1/route for frontends that forward requests themselves
 * (Dynamo's router RPC New / MarkPrefill / MarkFree). They live until the frontend frees them; one
 * that never does is reclaimed when the load tracker expires it (300 s, as Dynamo's ActiveSequences), at
 * the next sweep.
 */
import type { LoadTracker } from "./load-tracker.ts";
import type { RequestLease } from "./request-lease.ts";

export class ExternalLeases {
  readonly #byId = new Map<string, RequestLease>();

  constructor(private readonly tracker: LoadTracker) {}

  add(lease: RequestLease): void {
    this.#byId.set(lease.requestId, lease);
  }

  prefillDone(requestId: string): boolean {
    const lease = this.#byId.get(requestId);
    if (!lease || !this.tracker.hasRequest(requestId)) return false;
    lease.prefillDone();
    return true;
  }

  free(requestId: string): boolean {
    const lease = this.#byId.get(requestId);
    if (!lease) return false;
    this.#byId.delete(requestId);
    return lease.free();
  }

  get size(): number {
    return this.#byId.size;
  }

  /** Forget leases the tracker no longer holds (expired, or their worker was removed). */
  sweep(): void {
    for (const [id, lease] of this.#byId) {
      if (!this.tracker.hasRequest(id)) {
        this.#byId.delete(id);
        lease.free();
      }
    }
  }
}
