/**
 * Which LoRA adapters are loaded on which (worker, dp_rank), and how many adapter slots
 * each worker has (Dynamo's `LoraStateTracker`: capacity defaults to 4 slots, additions are
 * idempotent, removing a worker drops all its adapters).
 *
 * Fed by discovery events (one entry per (worker, lora) pair). JavaScript runs each handler
 * to completion, so the inverse indexes (`loadedLocations` lora → workers and `perWorker`
 * worker → loras) are updated together and can never be seen disagreeing; the Rust
 * original needs a write lock for the same guarantee.
 *
 * It also remembers when the router last used each loaded adapter (`recordUse`), which
 * `--lora-evict` needs to pick the least recently used adapter to unload.
 */
import type { Logger } from "../../core/logger.ts";
import { keyOf, type WorkerKey, type WorkerWithDpRank } from "../../core/ids.ts";

/** What a worker publishes per adapter: one entry per (worker, adapter), capacity in each. */
export interface LoraInfo {
  readonly name: string;
  /** The engine's `--max-loras`: a worker-level capacity copied into every entry. */
  readonly maxGpuLoraCount?: number;
}

/** vLLM's default `--max-loras`, used when an entry does not say. */
export const DEFAULT_MAX_GPU_LORA_COUNT = 4;

export interface SlotUsage {
  readonly worker: WorkerWithDpRank;
  readonly loaded: number;
  readonly capacity: number;
}

interface LoadedAdapter {
  info: LoraInfo;
  /** Router clock (ms) of the last request routed to this adapter here; undefined: never. */
  lastUsedMs: number | undefined;
}

interface WorkerEntry {
  readonly worker: WorkerWithDpRank;
  /** Absent until the worker publishes an adapter or a capacity is set for it. */
  capacity: number | undefined;
  readonly loras: Map<string, LoadedAdapter>;
}

const silentLogger: Pick<Logger, "warn"> = { warn() {} };

export class LoraStateTracker {
  /** lora → workers holding it. Inverse of `WorkerEntry.loras`; empty sets are dropped. */
  readonly #loadedLocations = new Map<string, Map<WorkerKey, WorkerWithDpRank>>();
  readonly #workers = new Map<WorkerKey, WorkerEntry>();
  readonly #logger: Pick<Logger, "warn">;

  /** `logger` hears the one thing the tracker reports that is not a return value: a capacity mismatch. */
  constructor(opts: { logger?: Pick<Logger, "warn"> } = {}) {
    this.#logger = opts.logger ?? silentLogger;
  }

  /** A worker published (or re-published) an adapter. Idempotent and purely additive. */
  handleMdcAddition(worker: WorkerWithDpRank, info: LoraInfo): void {
    const key = keyOf(worker);
    let holders = this.#loadedLocations.get(info.name);
    if (!holders) this.#loadedLocations.set(info.name, (holders = new Map()));
    holders.set(key, worker);

    const entry = this.#entry(worker, key);
    const loaded = entry.loras.get(info.name);
    if (loaded) loaded.info = info;
    else entry.loras.set(info.name, { info, lastUsedMs: undefined });

    this.#adoptCapacity(entry, info.maxGpuLoraCount ?? DEFAULT_MAX_GPU_LORA_COUNT, info.name);
  }

  /** A worker unpublished one adapter. Its capacity stays known. */
  handleMdcRemoval(worker: WorkerWithDpRank, loraName: string): void {
    const key = keyOf(worker);
    const holders = this.#loadedLocations.get(loraName);
    if (holders) {
      holders.delete(key);
      if (holders.size === 0) this.#loadedLocations.delete(loraName);
    }
    this.#workers.get(key)?.loras.delete(loraName);
  }

  /** A worker left: drop its adapters and its capacity. */
  handleWorkerRemoval(worker: WorkerWithDpRank): void {
    const key = keyOf(worker);
    const entry = this.#workers.get(key);
    if (!entry) return;
    this.#workers.delete(key);
    for (const loraName of entry.loras.keys()) {
      const holders = this.#loadedLocations.get(loraName);
      if (!holders) continue;
      holders.delete(key);
      if (holders.size === 0) this.#loadedLocations.delete(loraName);
    }
  }

  /**
   * Record a worker's slot capacity before it has published any adapter (e.g. from its
   * registration), so the router can place the first adapter on it. Latest value wins.
   */
  setWorkerCapacity(worker: WorkerWithDpRank, capacity: number): void {
    this.#adoptCapacity(this.#entry(worker, keyOf(worker)), capacity, undefined);
  }

  /** Note that a request for `loraName` was routed to `worker` at `nowMs`. False if not loaded there. */
  recordUse(loraName: string, worker: WorkerWithDpRank, nowMs: number): boolean {
    const loaded = this.#workers.get(keyOf(worker))?.loras.get(loraName);
    if (!loaded) return false;
    loaded.lastUsedMs = nowMs;
    return true;
  }

  lastUsedMs(loraName: string, worker: WorkerWithDpRank): number | undefined {
    return this.#workers.get(keyOf(worker))?.loras.get(loraName)?.lastUsedMs;
  }

  getLoadedWorkers(loraName: string): WorkerWithDpRank[] {
    const holders = this.#loadedLocations.get(loraName);
    return holders ? [...holders.values()] : [];
  }

  isLoaded(loraName: string, worker: WorkerWithDpRank): boolean {
    return this.#loadedLocations.get(loraName)?.has(keyOf(worker)) ?? false;
  }

  listLoras(): string[] {
    return [...this.#loadedLocations.keys()];
  }

  /** Adapters loaded on one worker (the inverse index). */
  lorasOn(worker: WorkerWithDpRank): string[] {
    const entry = this.#workers.get(keyOf(worker));
    return entry ? [...entry.loras.keys()] : [];
  }

  loraInfo(loraName: string, worker: WorkerWithDpRank): LoraInfo | undefined {
    return this.#workers.get(keyOf(worker))?.loras.get(loraName)?.info;
  }

  /** Workers with a known capacity. */
  listWorkers(): WorkerWithDpRank[] {
    const out: WorkerWithDpRank[] = [];
    for (const entry of this.#workers.values())
      if (entry.capacity !== undefined) out.push(entry.worker);
    return out;
  }

  capacity(worker: WorkerWithDpRank): number | undefined {
    return this.#workers.get(keyOf(worker))?.capacity;
  }

  loadedCount(worker: WorkerWithDpRank): number {
    return this.#workers.get(keyOf(worker))?.loras.size ?? 0;
  }

  /** capacity − loaded, never below 0; 0 for a worker of unknown capacity. */
  freeSlots(worker: WorkerWithDpRank): number {
    const entry = this.#workers.get(keyOf(worker));
    if (!entry || entry.capacity === undefined) return 0;
    return Math.max(0, entry.capacity - entry.loras.size);
  }

  totalLoraSlots(): number {
    let total = 0;
    for (const entry of this.#workers.values()) total += entry.capacity ?? 0;
    return total;
  }

  getWorkerCapacities(): Map<WorkerKey, number> {
    const out = new Map<WorkerKey, number>();
    for (const [key, entry] of this.#workers)
      if (entry.capacity !== undefined) out.set(key, entry.capacity);
    return out;
  }

  getWorkerSlotUsage(): Map<WorkerKey, SlotUsage> {
    const out = new Map<WorkerKey, SlotUsage>();
    for (const [key, entry] of this.#workers) {
      if (entry.capacity === undefined) continue;
      out.set(key, { worker: entry.worker, loaded: entry.loras.size, capacity: entry.capacity });
    }
    return out;
  }

  workersWithFreeSlots(): WorkerWithDpRank[] {
    const out: WorkerWithDpRank[] = [];
    for (const entry of this.#workers.values()) {
      if (entry.capacity !== undefined && entry.loras.size < entry.capacity) out.push(entry.worker);
    }
    return out;
  }

  /** True when no worker has a known capacity. */
  isEmpty(): boolean {
    for (const entry of this.#workers.values()) if (entry.capacity !== undefined) return false;
    return true;
  }

  #entry(worker: WorkerWithDpRank, key: WorkerKey): WorkerEntry {
    let entry = this.#workers.get(key);
    if (!entry) this.#workers.set(key, (entry = { worker, capacity: undefined, loras: new Map() }));
    return entry;
  }

  #adoptCapacity(entry: WorkerEntry, capacity: number, loraName: string | undefined): void {
    if (entry.capacity !== undefined && entry.capacity !== capacity) {
      // Every entry from one worker should carry the same --max-loras; a change means a
      // misconfigured or restarted engine. Follow the newest value, but say so.
      this.#logger.warn("worker LoRA capacity changed", {
        workerId: entry.worker.workerId,
        dpRank: entry.worker.dpRank,
        loraName,
        previousCapacity: entry.capacity,
        newCapacity: capacity,
      });
    }
    entry.capacity = capacity;
  }
}
