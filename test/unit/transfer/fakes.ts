/** Test doubles for the handler: pools that record copies, a recording broadcaster. */
import { TransferError } from "../../../src/transfer/errors.ts";
import type { BlockBroadcaster, PoolKind, TransferPool } from "../../../src/transfer/types.ts";

export interface CopyCall {
  readonly from: PoolKind;
  readonly to: PoolKind;
  readonly pairs: number[];
}

/** Shared log of everything the fakes were asked to do, in order. */
export class Recorder {
  readonly events: string[] = [];
  readonly copies: CopyCall[] = [];
  active = 0;
  maxActive = 0;
  /** When set, copies wait for release() (to observe concurrency without sleeping). */
  gate: Promise<void> | undefined;
  #open: (() => void) | undefined;
  failOn: ((call: CopyCall) => Error | undefined) | undefined;

  hold(): void {
    this.gate = new Promise((resolve) => (this.#open = resolve));
  }
  release(): void {
    this.#open?.();
    this.gate = undefined;
  }
}

export class FakePool implements TransferPool {
  readonly blockBytes = 64;
  constructor(
    readonly kind: PoolKind,
    readonly numBlocks: number,
    readonly rec: Recorder,
  ) {}

  async copyTo(dst: TransferPool, pairs: Uint32Array): Promise<void> {
    const call = { from: this.kind, to: dst.kind, pairs: [...pairs] };
    this.rec.copies.push(call);
    this.rec.events.push(`copy ${this.kind}->${dst.kind} ${pairs.length / 2}`);
    this.rec.active++;
    this.rec.maxActive = Math.max(this.rec.maxActive, this.rec.active);
    try {
      if (this.rec.gate) await this.rec.gate;
      const err = this.rec.failOn?.(call);
      if (err) throw err;
    } finally {
      this.rec.active--;
    }
  }
}

export class FakeGroup implements BlockBroadcaster {
  constructor(
    readonly rank: number,
    readonly worldSize: number,
    readonly rec: Recorder,
  ) {}
  async broadcast(pool: TransferPool, indices: Uint32Array): Promise<void> {
    this.rec.events.push(`bcast ${pool.kind} [${[...indices].join(",")}]`);
  }
}

export function fakePools(rec: Recorder, kinds: readonly PoolKind[] = ["device", "host", "disk"]) {
  const out: Partial<Record<PoolKind, FakePool>> = {};
  for (const k of kinds) out[k] = new FakePool(k, 1024, rec);
  return out;
}

export function boom(message: string): TransferError {
  return new TransferError("io", message);
}
