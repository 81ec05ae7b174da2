/**
 * The process's own health in the names every Prometheus client library uses (so the
 * dashboards and rules written for them apply): process_cpu_seconds_total,
 * process_resident_memory_bytes, process_virtual_memory_bytes, process_open_fds,
 * process_max_fds, process_start_time_seconds; and switchyard_event_loop_lag_seconds, the
 * longest delay a timer saw since the last scrape (the router serves every request on one
 * thread: a stalled loop stalls them all). The numbers come from a probe the runtime's entry
 * passes (Bun: /proc on Linux, runtime/bun/process-probe.ts); what a probe cannot tell is not
 * exposed rather than exposed as 0.
 */
import type { MetricsRegistry } from "./registry.ts";

export interface ProcessProbe {
  /** User + system CPU seconds since the process started. */
  cpuSeconds(): number;
  residentBytes(): number;
  virtualBytes?(): number | undefined;
  openFds?(): number | undefined;
  maxFds?(): number | undefined;
  /** Seconds since the epoch. */
  startTimeSeconds(): number;
}

export function bindProcessMetrics(r: MetricsRegistry, probe: ProcessProbe): void {
  r.counter(
    "process_cpu_seconds_total",
    "Total user and system CPU time spent in seconds",
  ).onCollect((c) => c.set([], probe.cpuSeconds()));
  r.gauge("process_resident_memory_bytes", "Resident memory size in bytes").onCollect((g) =>
    g.set([], probe.residentBytes()),
  );
  r.gauge(
    "process_start_time_seconds",
    "Start time of the process since unix epoch in seconds",
  ).onCollect((g) => g.set([], probe.startTimeSeconds()));
  const optional = (name: string, help: string, read: (() => number | undefined) | undefined) => {
    if (read === undefined) return;
    r.gauge(name, help).onCollect((g) => {
      const v = read();
      if (v === undefined) g.reset();
      else g.set([], v);
    });
  };
  optional(
    "process_virtual_memory_bytes",
    "Virtual memory size in bytes",
    probe.virtualBytes?.bind(probe),
  );
  optional("process_open_fds", "Number of open file descriptors", probe.openFds?.bind(probe));
  optional("process_max_fds", "Maximum number of open file descriptors", probe.maxFds?.bind(probe));
}

/** How often the lag timer fires: often enough to catch a 100 ms stall, rare enough to cost nothing. */
export const LAG_SAMPLE_MS = 100;

/**
 * Lateness of one tick up to this is the timers' own jitter, not a loop that was held: it is not
 * added to the running total a wait is judged by (below).
 */
export const LAG_JITTER_MS = 10;

/** A point on the lag meter's running total (`LoopLagMeter.mark`), to ask how much lag came since. */
export type LagMark = number;

/** What a wait asks of the event-loop lag: how long the loop was held since a mark. */
export interface LoopLagMeter {
  /** Now, on the running total of lag. */
  mark(): LagMark;
  /** Milliseconds the event loop was held (could run no callback) since `m`, the hold in progress included. */
  lagSince(m: LagMark): number;
}

/**
 * Event-loop lag: a timer asks to run every LAG_SAMPLE_MS and notes how late it ran. The
 * gauge shows the worst delay since the previous scrape (then starts over), so a stall
 * between two scrapes is not averaged away. It also keeps the running total of lateness
 * (LoopLagMeter): a deadline on an engine asks how much of its wait the router itself could not
 * run, so a wait the router's own stall stretched is not held against the engine.
 */
export class EventLoopLag implements LoopLagMeter {
  #worstMs = 0;
  #expected = 0;
  #timer: unknown;
  /** Sum of every tick's lateness past LAG_JITTER_MS, milliseconds. */
  #totalMs = 0;

  constructor(
    private readonly now: () => number,
    private readonly timers: {
      every(fn: () => void, ms: number): unknown;
      stop(handle: unknown): void;
    },
  ) {}

  start(): void {
    if (this.#timer !== undefined) return;
    this.#expected = this.now() + LAG_SAMPLE_MS;
    this.#timer = this.timers.every(() => this.tick(), LAG_SAMPLE_MS);
  }

  stop(): void {
    if (this.#timer !== undefined) this.timers.stop(this.#timer);
    this.#timer = undefined;
  }

  /** One timer run (exposed for tests): how late it is against the schedule. */
  tick(): void {
    const t = this.now();
    const late = t - this.#expected;
    if (late > this.#worstMs) this.#worstMs = late;
    this.#totalMs += held(late);
    this.#expected = t + LAG_SAMPLE_MS;
  }

  mark(): LagMark {
    return this.#totalMs + this.#pending();
  }

  lagSince(m: LagMark): number {
    return Math.max(0, this.#totalMs + this.#pending() - m);
  }

  /** The hold in progress: how late the next tick already is (it has not run yet). 0 while stopped. */
  #pending(): number {
    return this.#timer === undefined ? 0 : held(this.now() - this.#expected);
  }

  /** Seconds; resets the worst seen. */
  takeWorstSeconds(): number {
    const w = this.#worstMs;
    this.#worstMs = 0;
    return Math.max(0, w) / 1000;
  }

  bind(r: MetricsRegistry): void {
    r.gauge(
      "switchyard_event_loop_lag_seconds",
      "Longest delay of a timer on the router's event loop since the previous scrape",
    ).onCollect((g) => g.set([], this.takeWorstSeconds()));
  }
}

/** A tick's lateness counted as the loop held: past the timers' jitter, all of it. */
function held(lateMs: number): number {
  return lateMs > LAG_JITTER_MS ? lateMs : 0;
}
