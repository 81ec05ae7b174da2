/**
 * Engine restarts seen without waiting for an event. An engine restarted while idle emits
 * nothing, so the index kept its old blocks and the next request was routed for 14 blocks
 * of overlap onto an empty cache. Each good health check also reads who the
 * engine process is (`instance_id` or `started_at` of GET /v1/engine/info, engine-info.ts);
 * when that changes, `onRestart` runs before the check marks the worker healthy, and the
 * caller wipes the worker's blocks and restores them from the new process.
 *
 * Engines that do not say who they are (vLLM, SGLang: no /v1/engine/info) are never
 * reported; for them the restart is seen in their event stream (ids going back to 0, or
 * the ZMQ sequence going back). The probe and the callback are injected; no timers here.
 */
import type { WorkerId } from "../core/ids.ts";

export interface RestartDetectorOptions {
  /** Who the engine at `url` is now; undefined when it does not say. Throws on failure. */
  readonly probe: (url: string, signal: AbortSignal) => Promise<string | undefined>;
  /** The engine behind `id` is a new process: its cache is empty. */
  readonly onRestart: (id: WorkerId, previous: string, current: string) => void | Promise<void>;
}

export class RestartDetector {
  readonly #o: RestartDetectorOptions;
  readonly #instances = new Map<WorkerId, string>();
  #restarts = 0;

  constructor(o: RestartDetectorOptions) {
    this.#o = o;
  }

  /** Restarts seen so far. */
  get restarts(): number {
    return this.#restarts;
  }

  /** The instance first seen (at registration), so a restart before the first check counts. */
  remember(id: WorkerId, instance: string | undefined): void {
    if (instance !== undefined) this.#instances.set(id, instance);
  }

  forget(id: WorkerId): void {
    this.#instances.delete(id);
  }

  /** Ask the engine who it is; report a change. A failed probe changes nothing. */
  async check(id: WorkerId, url: string, signal: AbortSignal): Promise<boolean> {
    let current: string | undefined;
    try {
      current = await this.#o.probe(url, signal);
    } catch {
      return false;
    }
    if (current === undefined) return false;
    const previous = this.#instances.get(id);
    this.#instances.set(id, current);
    if (previous === undefined || previous === current) return false;
    this.#restarts++;
    await this.#o.onRestart(id, previous, current);
    return true;
  }
}
