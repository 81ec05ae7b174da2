/**
 * A driver wired to a ModelIndex and FakeEngineRanks, with queries that can be held and
 * released by the test (answered at release time, like a slow worker).
 */
import type { RouterEvent } from "../../../../../src/core/events.ts";
import { workerKey, type DpRank, type WorkerId } from "../../../../../src/core/ids.ts";
import {
  RecoveryDriver,
  type RecoveryDriverOptions,
} from "../../../../../src/router/recovery/driver.ts";
import type { WorkerKvQueryResponse } from "../../../../../src/router/recovery/types.ts";
import { FakeEngineRank } from "./fake-engine.ts";
import { ModelIndex } from "./model-index.ts";

export interface QueryCall {
  readonly workerId: WorkerId;
  readonly dpRank: DpRank;
  readonly start: bigint | undefined;
  readonly end: bigint | undefined;
}

type Answer = (call: QueryCall) => WorkerKvQueryResponse | Promise<WorkerKvQueryResponse>;

export class Harness {
  readonly index = new ModelIndex();
  readonly engines = new Map<string, FakeEngineRank>();
  readonly calls: QueryCall[] = [];
  readonly sleeps: number[] = [];
  readonly warnings: string[] = [];
  readonly driver: RecoveryDriver;
  /** When set, queries wait for release(); otherwise they answer at once. */
  hold = false;
  /** Replaces the engine's answer (scripted failures). */
  answer: Answer | undefined;
  private held: {
    call: QueryCall;
    resolve: (r: WorkerKvQueryResponse) => void;
    reject: (e: unknown) => void;
  }[] = [];

  constructor(opts: Partial<RecoveryDriverOptions> = {}) {
    this.driver = new RecoveryDriver({
      sink: this.index,
      query: (workerId, dpRank, start, end) => {
        const call = { workerId, dpRank, start, end };
        this.calls.push(call);
        return new Promise((resolve, reject) => {
          this.held.push({ call, resolve, reject });
          if (!this.hold) this.releaseOne();
        });
      },
      sleep: async (ms) => {
        this.sleeps.push(ms);
      },
      onWarning: (m) => this.warnings.push(m),
      ...opts,
    });
  }

  engine(workerId: WorkerId, dpRank: DpRank = 0, capacity?: number): FakeEngineRank {
    const key = workerKey(workerId, dpRank);
    let e = this.engines.get(key);
    if (e === undefined) {
      e = new FakeEngineRank(workerId, dpRank, capacity);
      this.engines.set(key, e);
    }
    return e;
  }

  deliver(...events: RouterEvent[]): void {
    for (const ev of events) this.driver.onLiveEvent(ev);
  }

  get heldCount(): number {
    return this.held.length;
  }

  /** Answer every held query (now, from the engines' current state) until none is left. */
  async release(): Promise<void> {
    for (let guard = 0; guard < 1000; guard++) {
      while (this.held.length > 0) this.releaseOne();
      await flush();
      if (this.held.length === 0) return;
    }
    throw new Error("queries kept coming");
  }

  /** Release everything and wait for the driver to be idle. */
  async settle(): Promise<void> {
    const hold = this.hold;
    this.hold = false;
    await this.release();
    await this.driver.idle();
    this.hold = hold;
  }

  private releaseOne(): void {
    const h = this.held.shift();
    if (h === undefined) return;
    try {
      const answer = this.answer ?? ((c: QueryCall) => this.engineAnswer(c));
      Promise.resolve(answer(h.call)).then(h.resolve, h.reject);
    } catch (e) {
      h.reject(e);
    }
  }

  private engineAnswer(c: QueryCall): WorkerKvQueryResponse {
    const e = this.engines.get(workerKey(c.workerId, c.dpRank));
    if (e === undefined) return { kind: "error", message: "no such worker" };
    return e.query(c.start, c.end);
  }
}

export async function flush(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await null;
}
