/**
 * The ZMQ KV event subscriptions of the workers registered at run time: one
 * subscriber per data-parallel rank, on the engine's rank-0 endpoint offset by the rank
 * (endpoints.ts, vLLM's rule), started when a worker with `kv_events` is registered and
 * stopped when it is removed. Every subscriber hands its events to the same `onEvents`.
 * It does not register workers or apply events to an index.
 */
import type { Logger } from "../../../core/logger.ts";
import type { RouterEvent } from "../../../core/events.ts";
import type { BatchBlockHasher } from "../../../core/block-hash.ts";
import type { WorkerId } from "../../../core/ids.ts";
import type { KvEventSources } from "../../../fleet/provisioner.ts";
import type { KvEventsSpec } from "../../../fleet/worker-spec.ts";
import { endpointForDpRank } from "./endpoints.ts";
import {
  startVllmKvSubscriber,
  type VllmKvSubscriber,
  type VllmKvSubscriberOptions,
} from "./subscriber.ts";

export interface ZmqSourcesOptions {
  readonly blockSize: number;
  readonly onEvents: (events: RouterEvent[]) => void;
  readonly hasher?: BatchBlockHasher;
  readonly log?: Pick<Logger, "info" | "warn">;
  /** Injected in tests; default startVllmKvSubscriber. */
  readonly start?: (opts: VllmKvSubscriberOptions) => Promise<VllmKvSubscriber>;
}

interface Subscription {
  readonly spec: KvEventsSpec;
  readonly ranks: VllmKvSubscriber[];
}

export class ZmqEventSources implements KvEventSources {
  readonly #subs = new Map<WorkerId, Subscription>();
  /** Subscriptions being started, so a second registration of the same worker does not start twice. */
  readonly #starting = new Map<WorkerId, Promise<void>>();

  constructor(private readonly o: ZmqSourcesOptions) {}

  has(workerId: WorkerId): boolean {
    return this.#subs.has(workerId) || this.#starting.has(workerId);
  }

  get size(): number {
    return this.#subs.size;
  }

  subscribe(workerId: WorkerId, spec: KvEventsSpec): Promise<void> {
    const pending = this.#starting.get(workerId);
    if (pending) return pending;
    if (this.#subs.has(workerId)) return Promise.resolve();
    const p = this.#start(workerId, spec).finally(() => this.#starting.delete(workerId));
    this.#starting.set(workerId, p);
    return p;
  }

  async #start(workerId: WorkerId, spec: KvEventsSpec): Promise<void> {
    const start = this.o.start ?? startVllmKvSubscriber;
    const ranks: VllmKvSubscriber[] = [];
    try {
      for (let r = 0; r < spec.dpRanks; r++) {
        ranks.push(
          await start({
            endpoint: endpointForDpRank(spec.endpoint, r),
            replayEndpoint:
              spec.replayEndpoint !== undefined
                ? endpointForDpRank(spec.replayEndpoint, r)
                : undefined,
            topic: spec.topic,
            workerId,
            blockSize: this.o.blockSize,
            dpRank: r,
            hasher: this.o.hasher,
            log: this.o.log,
            onEvents: this.o.onEvents,
          }),
        );
      }
    } catch (e) {
      await Promise.all(ranks.map((s) => s.stop()));
      throw e;
    }
    this.#subs.set(workerId, { spec, ranks });
    this.o.log?.info(`worker ${workerId}: KV events over ZMQ`, {
      endpoint: spec.endpoint,
      replay: spec.replayEndpoint ?? null,
      dp_ranks: spec.dpRanks,
      topic: spec.topic,
    });
  }

  async unsubscribe(workerId: WorkerId): Promise<void> {
    await this.#starting.get(workerId)?.catch(() => {});
    const sub = this.#subs.get(workerId);
    if (!sub) return;
    this.#subs.delete(workerId);
    await Promise.all(sub.ranks.map((s) => s.stop()));
  }

  describe(workerId: WorkerId): Record<string, unknown> | undefined {
    const sub = this.#subs.get(workerId);
    if (!sub) return this.#starting.has(workerId) ? { state: "starting" } : undefined;
    return {
      endpoint: sub.spec.endpoint,
      replay_endpoint: sub.spec.replayEndpoint ?? null,
      topic: sub.spec.topic,
      dp_ranks: sub.spec.dpRanks,
      ranks: sub.ranks.map((s, r) => {
        const st = s.stats();
        const session = s.session();
        return {
          dp_rank: r,
          endpoint: endpointForDpRank(sub.spec.endpoint, r),
          // The socket's own session (libzmq's monitor), not only "the subscriber runs".
          connected: s.running() && session.state === "connected",
          session: s.running() ? session.state : "stopped",
          resubscribes: session.resubscribes,
          last_seq: st.lastSeq,
          batches: st.batches,
          events: st.events,
          gaps: st.gaps,
          // Replays asked (gaps, and the first sight of a publisher) and how many failed.
          replays: st.replayRequests,
          replays_failed: st.replayFailures,
          replayed_batches: st.replayed,
          batches_lost: st.lostBatches,
          restarts: st.restarts,
          decode_errors: st.decodeErrors,
          // Events of the engine's CPU / disk tiers indexed, and tier events skipped: vLLM's
          // tokenless placeholders (self_describing_kv_events off) and media no engine holds.
          tier_events: st.decode.tier,
          tier_placeholders_skipped: st.decode.placeholder,
          other_medium_skipped: st.decode.otherMedium,
        };
      }),
    };
  }

  /** Stop every subscription (router stopping). */
  async stopAll(): Promise<void> {
    await Promise.all([...this.#subs.keys()].map((id) => this.unsubscribe(id)));
  }
}
