/**
 * One way in for workers, whoever adds them (`POST /v1/workers`, `--workers-file`,
 * `--zmq-endpoint`): register through membership and, when the spec names `kv_events`, subscribe to
 * every rank's ZMQ event stream. A worker fed by ZMQ is registered without a `/kv/query` restore
 * (vLLM and SGLang serve none): its index comes from its events. The subscription ends when the
 * worker is removed (src/runtime/bun.ts wires the worker-removed hook to
 * `KvEventSources.unsubscribe`). Under `--policy approx` nothing is subscribed (`eventsUnused`). It
 * does not route and does not read any file.
 */
import { RouterError } from "../core/errors.ts";
import type { WorkerId } from "../core/ids.ts";
import type { RegisterInput, RegisterResult } from "./membership.ts";
import type { WorkerRecord } from "./registry.ts";
import type { KvEventsSpec, WorkerSpec } from "./worker-spec.ts";

/** The ZMQ event subscriptions (src/runtime/bun/zmq/sources.ts); an interface so tests can fake it. */
export interface KvEventSources {
  /** Subscribe to every rank; rejects (and leaves nothing running) when a rank cannot start. */
  subscribe(workerId: WorkerId, spec: KvEventsSpec): Promise<void>;
  /** Stop every rank's subscriber; resolves when they are gone. No-op when none. */
  unsubscribe(workerId: WorkerId): Promise<void>;
  has(workerId: WorkerId): boolean;
  /** The subscription as GET /v1/workers shows it. */
  describe(workerId: WorkerId): Record<string, unknown> | undefined;
}

export interface ProvisionerDeps {
  readonly membership: {
    register(input: RegisterInput): Promise<RegisterResult>;
    remove(id: WorkerId): WorkerRecord;
  };
  /** Absent where there is no ZMQ (edge runtimes): `kv_events` is then refused. */
  readonly sources?: KvEventSources;
  /** Records a spec's `role` (src/edge/disagg/roles.ts) before the worker can be routed to. */
  readonly setRole?: (url: string, role: "prefill" | "decode" | "both") => void;
  /**
   * `--policy approx`: the router of its own decisions drops every engine event, so a spec's
   * `kv_events` is validated and the worker registered as asked, but no stream is opened —
   * reading and decoding a stream only to drop it is work (and sockets) for nothing.
   */
  readonly eventsUnused?: boolean;
}

export class WorkerProvisioner {
  constructor(private readonly d: ProvisionerDeps) {}

  async register(spec: WorkerSpec): Promise<RegisterResult> {
    const kv = spec.kvEvents;
    if (kv && !this.d.sources) {
      throw new RouterError(
        "invalid_request",
        "kv_events: this router has no ZMQ support (libzmq is not available here)",
        "kv_events",
      );
    }
    const { kvEvents: _, role, ...input } = spec;
    if (role !== undefined) this.d.setRole?.(spec.url, role);
    const res = await this.d.membership.register({
      ...input,
      dpRanks: kv?.dpRanks ?? spec.dpRanks,
      restore: kv ? false : undefined,
    });
    if (!kv || this.d.sources!.has(res.worker.id)) return res;
    if (res.worker.dpRanks !== kv.dpRanks) {
      if (res.created) this.d.membership.remove(res.worker.id);
      throw new RouterError(
        "invalid_request",
        `kv_events.dp_ranks: ${kv.dpRanks} ranks publish events but worker ${res.worker.id} has ${res.worker.dpRanks}`,
        "kv_events.dp_ranks",
      );
    }
    if (this.d.eventsUnused) return res;
    try {
      await this.d.sources!.subscribe(res.worker.id, kv);
    } catch (e) {
      // A worker whose events cannot be read would be routed blind: take it out again.
      if (res.created) this.d.membership.remove(res.worker.id);
      throw new RouterError(
        "unavailable",
        `kv_events: cannot subscribe to ${kv.endpoint}: ${(e as Error).message}`,
        "kv_events",
      );
    }
    return res;
  }

  remove(id: WorkerId): WorkerRecord {
    return this.d.membership.remove(id);
  }
}
