/**
 * `--discover kubernetes`, assembled: the pods the selector matches in the namespace are
 * listed and watched (pod-watch.ts) through the API client (kube-api.ts) and kept in step
 * with the router's workers (pod-fleet.ts), whose failed registrations and lost workers are
 * looked at again every `tickMs`. Runtime-free: the runtime's glue passes the connection's
 * fetch (TLS settings inside it), the timers, the clock and the randomness.
 */
import type { Logger } from "../../core/logger.ts";
import type { DiscoveryMetrics } from "./discovery-metrics.ts";
import { KubeApi } from "./kube-api.ts";
import { PodFleet, type FleetActions } from "./pod-fleet.ts";
import { PodWatch, type PodWatchOptions, type Timers } from "./pod-watch.ts";

export interface KubernetesDiscoveryOptions {
  readonly server: string;
  readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
  readonly token: () => Promise<string | undefined>;
  readonly namespace: string;
  /** A label selector, e.g. `app=vllm,tier in (a,b)`. */
  readonly selector: string;
  readonly portName: string;
  readonly actions: FleetActions;
  readonly timers: Timers;
  readonly rng: () => number;
  readonly now: () => number;
  readonly log: Pick<Logger, "info" | "warn" | "error">;
  readonly metrics?: DiscoveryMetrics;
  /** How often failed registrations and lost workers are looked at (ms; default 1000). */
  readonly tickMs?: number;
  /** Tuning of the watch loop (tests shorten them). */
  readonly watch?: Pick<
    PodWatchOptions,
    "backoffBaseMs" | "backoffMaxMs" | "idleMs" | "watchTimeoutSeconds"
  >;
  readonly retryMs?: number;
}

export class KubernetesDiscovery {
  readonly fleet: PodFleet;
  readonly #watch: PodWatch;
  readonly #o: KubernetesDiscoveryOptions;
  #tick: unknown;

  constructor(o: KubernetesDiscoveryOptions) {
    this.#o = o;
    this.fleet = new PodFleet({
      portName: o.portName,
      actions: o.actions,
      retryMs: o.retryMs,
      now: o.now,
      log: o.log,
      metrics: o.metrics,
    });
    o.metrics?.countPods(() => this.fleet.counts());
    this.#watch = new PodWatch({
      api: new KubeApi({ server: o.server, fetch: o.fetch, token: o.token }),
      namespace: o.namespace,
      selector: o.selector,
      sink: this.fleet,
      timers: o.timers,
      rng: o.rng,
      now: o.now,
      log: o.log,
      metrics: o.metrics,
      ...o.watch,
    });
  }

  /**
   * Resolves once the first list was applied and its ready pods registered (or the first list
   * failed: the router starts anyway and keeps trying, as it does with a dead engine).
   */
  async start(): Promise<void> {
    await this.#watch.start();
    await this.fleet.settled();
    const every = this.#o.tickMs ?? 1_000;
    const tick = () => {
      this.fleet.tick();
      this.#tick = this.#o.timers.set(tick, every);
    };
    this.#tick = this.#o.timers.set(tick, every);
  }

  async stop(): Promise<void> {
    this.#o.timers.clear(this.#tick);
    this.#tick = undefined;
    await this.#watch.stop();
  }
}
