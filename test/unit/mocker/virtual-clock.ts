/**
 * Virtual time for engine tests: sleep() registers a timer, run() fires timers in time order
 * and lets every promise chain settle between them. Deterministic, no real waiting.
 */
import type { Clock } from "../../../src/mocker/engine.ts";

interface Timer {
  at: number;
  seq: number;
  resolve(): void;
}

export class VirtualClock implements Clock {
  private t = 0;
  private seq = 0;
  private timers: Timer[] = [];

  now(): number {
    return this.t;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) =>
      this.timers.push({ at: this.t + Math.max(0, ms), seq: this.seq++, resolve }),
    );
  }

  /** Fire timers until none is left (or `until` is reached); returns the final time. */
  async run(until = Infinity): Promise<number> {
    for (let steps = 0; steps < 1_000_000; steps++) {
      await settle();
      if (this.timers.length === 0) return this.t;
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      if (this.timers[0]!.at > until) {
        this.t = until;
        return this.t;
      }
      const next = this.timers.shift()!;
      this.t = next.at;
      next.resolve();
    }
    throw new Error("virtual clock: too many steps");
  }
}

/** Let pending promise reactions run (macrotask boundary: all microtasks drain first). */
export function settle(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}
