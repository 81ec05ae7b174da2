/**
 * Keeps the router's workers in step with the pods the watch reports, through the same way
 * in every other source uses (the provisioner: POST /v1/workers, the workers file): a ready
 * pod is registered; a pod that is not ready or is terminating is held (no new requests, its
 * in-flight requests finish, its index and load stay); a pod that is gone, or whose address or
 * annotations changed, is removed (index, load, sessions: the remove path) and, when changed,
 * registered again. A pod with a bad annotation is skipped with one log line and one count per
 * version of it, naming the pod and the field; the others keep working.
 *
 * Level-triggered, one pod at a time: each pod has the state the API last reported and a
 * sync that brings the router to it; a sync in progress (registration asks the engine about
 * itself) is followed by another when the pod changed meanwhile, so one slow engine delays
 * nobody else. `tick()` (every second from the discovery) retries failed registrations after
 * `retryMs` and puts back a pod's worker removed by other means (DELETE /v1/workers): the pods
 * are the source of truth for the workers they made. Workers added otherwise are never touched.
 */
import type { Logger } from "../../core/logger.ts";
import type { WorkerId } from "../../core/ids.ts";
import type { WorkerSpec } from "../worker-spec.ts";
import type { DiscoveryMetrics, FleetCounts } from "./discovery-metrics.ts";
import { podKey, podWorker, type PodWorker } from "./pod-worker.ts";

/** What the fleet does to the router; the runtime wires these to the provisioner and health. */
export interface FleetActions {
  register(spec: WorkerSpec): Promise<unknown>;
  remove(id: WorkerId): void;
  /** No new requests until released; in-flight ones finish. */
  hold(id: WorkerId, reason: string): void;
  release(id: WorkerId): void;
  isRegistered(id: WorkerId): boolean;
  /** `switchyard.dev/tokenizer` after registration; resolves to warnings. */
  tokenizer?(id: WorkerId, path: string): Promise<readonly string[]>;
}

export interface PodFleetOptions {
  /** --discover-port-name. */
  readonly portName: string;
  readonly actions: FleetActions;
  /** A failed registration is tried again after this long (ms; default 5000). */
  readonly retryMs?: number;
  readonly now: () => number;
  readonly log: Pick<Logger, "info" | "warn" | "error">;
  readonly metrics?: DiscoveryMetrics;
}

interface Applied {
  readonly id: WorkerId;
  readonly fingerprint: string;
  held: boolean;
}

interface Entry {
  readonly key: string;
  /** What the API said last; undefined once the pod is gone. */
  want: PodWorker | undefined;
  applied: Applied | undefined;
  running: boolean;
  again: boolean;
  failed: { fingerprint: string; at: number } | undefined;
  /** The version of a problem already logged and counted (rejection, address taken). */
  reported: string | undefined;
}

export class PodFleet {
  readonly #o: PodFleetOptions;
  readonly #entries = new Map<string, Entry>();
  /** Which pod's worker holds an id (a new pod may get a deleted pod's address). */
  readonly #owners = new Map<WorkerId, string>();
  #running = 0;
  #idle: (() => void)[] = [];

  constructor(o: PodFleetOptions) {
    this.#o = o;
  }

  /** A pod was added or changed (ADDED, MODIFIED). */
  upsert(pod: unknown): void {
    const key = podKey(pod);
    if (key === undefined) {
      this.#o.log.warn("discovery: an object without metadata.name/namespace was skipped");
      return;
    }
    this.#set(key, podWorker(pod, this.#o.portName));
  }

  /** A pod is gone (DELETED). */
  delete(pod: unknown): void {
    const key = podKey(pod);
    if (key !== undefined) this.#set(key, undefined);
  }

  /** A fresh list: pods it lacks are gone (deleted while the watch was not looking). */
  replaceAll(pods: readonly unknown[]): void {
    const seen = new Set<string>();
    for (const p of pods) {
      const key = podKey(p);
      if (key === undefined) continue;
      seen.add(key);
      this.#set(key, podWorker(p, this.#o.portName));
    }
    for (const key of [...this.#entries.keys()]) if (!seen.has(key)) this.#set(key, undefined);
  }

  /** Retry what failed, and put back workers removed behind the pods' back. */
  tick(): void {
    const now = this.#o.now();
    const retryMs = this.#o.retryMs ?? 5_000;
    for (const e of this.#entries.values()) {
      const due = e.failed !== undefined && now - e.failed.at >= retryMs;
      const lost = e.applied !== undefined && !this.#o.actions.isRegistered(e.applied.id);
      if (due || lost) void this.#sync(e);
    }
  }

  /** Resolves once no sync is running (registrations included). */
  settled(): Promise<void> {
    if (this.#running === 0) return Promise.resolve();
    return new Promise((r) => this.#idle.push(r));
  }

  counts(): FleetCounts {
    const c: FleetCounts = { routable: 0, held: 0, waiting: 0, rejected: 0 };
    for (const e of this.#entries.values()) {
      if (e.applied) c[e.applied.held ? "held" : "routable"]++;
      else if (e.want?.kind === "rejected") c.rejected++;
      else if (e.want) c.waiting++;
    }
    return c;
  }

  /** The worker id a pod's registration has, when it has one (tests, logs). */
  workerOf(key: string): WorkerId | undefined {
    return this.#entries.get(key)?.applied?.id;
  }

  #set(key: string, want: PodWorker | undefined): void {
    let e = this.#entries.get(key);
    if (e === undefined) {
      if (want === undefined) return;
      e = {
        key,
        want,
        applied: undefined,
        running: false,
        again: false,
        failed: undefined,
        reported: undefined,
      };
      this.#entries.set(key, e);
    }
    e.want = want;
    void this.#sync(e);
  }

  async #sync(e: Entry): Promise<void> {
    if (e.running) {
      e.again = true;
      return;
    }
    e.running = true;
    this.#running++;
    try {
      do {
        e.again = false;
        await this.#step(e);
      } while (e.again);
    } finally {
      e.running = false;
      if (e.want === undefined && e.applied === undefined && this.#entries.get(e.key) === e) {
        this.#entries.delete(e.key);
        this.#o.metrics?.forget(e.key);
      }
      if (--this.#running === 0) for (const r of this.#idle.splice(0)) r();
    }
  }

  async #step(e: Entry): Promise<void> {
    const { actions, log } = this.#o;
    const w = e.want;
    const a = e.applied;
    // The worker no longer says what the pod says (gone, new address, new annotations, now invalid).
    if (
      a !== undefined &&
      (w === undefined || w.kind !== "worker" || w.fingerprint !== a.fingerprint)
    ) {
      e.applied = undefined;
      this.#owners.delete(a.id);
      if (actions.isRegistered(a.id)) {
        try {
          actions.remove(a.id);
          log.info(
            `discovery: pod ${e.key}: worker ${a.id} removed (${w === undefined ? "pod gone" : "pod changed"})`,
          );
        } catch (err) {
          log.warn(
            `discovery: pod ${e.key}: cannot remove worker ${a.id}: ${(err as Error).message}`,
          );
        }
      }
      this.#wakeWaitersOf(a.id);
    }
    if (w === undefined || w.kind === "pending") return;
    if (w.kind === "rejected") {
      if (e.reported !== w.fingerprint) {
        e.reported = w.fingerprint;
        log.warn(`discovery: pod ${e.key} skipped: ${w.message}`, { pod: e.key, field: w.field });
        this.#o.metrics?.rejected(e.key, w.field);
      }
      return;
    }
    const cur = e.applied;
    if (cur === undefined) {
      if (w.state !== "ready") return; // a pod registers once it can take requests
      const owner = this.#owners.get(w.id);
      if (owner !== undefined && owner !== e.key) {
        const note = `owner:${owner}:${w.fingerprint}`;
        if (e.reported !== note) {
          e.reported = note;
          log.warn(
            `discovery: pod ${e.key} has the address of pod ${owner} (${w.spec.url}), which is still registered; it waits until that one is gone`,
          );
        }
        return;
      }
      if (
        e.failed !== undefined &&
        e.failed.fingerprint === w.fingerprint &&
        this.#o.now() - e.failed.at < (this.#o.retryMs ?? 5_000)
      )
        return;
      this.#owners.set(w.id, e.key);
      try {
        await actions.register(w.spec);
      } catch (err) {
        this.#owners.delete(w.id);
        e.failed = { fingerprint: w.fingerprint, at: this.#o.now() };
        log.error(
          `discovery: pod ${e.key}: cannot register ${w.spec.url}: ${(err as Error).message} (retried in ${(this.#o.retryMs ?? 5_000) / 1000} s)`,
        );
        this.#o.metrics?.registrationFailed();
        return;
      }
      e.failed = undefined;
      e.reported = undefined;
      e.applied = { id: w.id, fingerprint: w.fingerprint, held: false };
      log.info(`discovery: pod ${e.key}: worker ${w.id} registered`, { url: w.spec.url });
      if (w.tokenizer !== undefined && actions.tokenizer !== undefined) {
        try {
          for (const warning of await actions.tokenizer(w.id, w.tokenizer))
            log.warn(`discovery: pod ${e.key}: ${warning}`);
        } catch (err) {
          log.warn(`discovery: pod ${e.key}: ${(err as Error).message}`, {
            pod: e.key,
            field: "tokenizer",
          });
          this.#o.metrics?.rejected(e.key, "tokenizer");
        }
      }
      e.again = true; // the pod may have changed while the engine was asked
      return;
    }
    if (!actions.isRegistered(cur.id)) {
      // Removed by other means (DELETE /v1/workers): the pod says it exists, so it comes back.
      e.applied = undefined;
      this.#owners.delete(cur.id);
      e.again = true;
      return;
    }
    if (w.state === "ready" && cur.held) {
      cur.held = false;
      actions.release(cur.id);
      log.info(`discovery: pod ${e.key}: ready again, worker ${cur.id} takes requests`);
    } else if (w.state !== "ready" && !cur.held) {
      cur.held = true;
      const reason =
        w.state === "terminating" ? "draining: pod terminating" : "draining: pod not ready";
      actions.hold(cur.id, reason);
      log.info(`discovery: pod ${e.key}: ${w.state}, worker ${cur.id} gets no new requests`);
    }
  }

  /** A pod that waited for this address may now take it. */
  #wakeWaitersOf(id: WorkerId): void {
    for (const other of this.#entries.values()) {
      if (other.applied === undefined && other.want?.kind === "worker" && other.want.id === id)
        void this.#sync(other);
    }
  }
}
