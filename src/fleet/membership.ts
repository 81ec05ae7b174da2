/**
 * Registering and removing workers, keeping every part that knows about workers in step:
 * the registry (URL, ranks, health), the load tracker (slots), the recovery driver (which
 * restores the worker's index from its /kv/query dump, and drops its blocks on removal) and
 * the LoRA tracker (adapters it reports). It does not route and does not check health.
 */
import { RouterError } from "../core/errors.ts";
import type { DpRank, WorkerId, WorkerWithDpRank } from "../core/ids.ts";
import { normalizeWorkerUrl, workerIdFromUrl } from "../core/worker-id.ts";
import { capacityOfRank, checkedBlocks, type KvCapacityReading } from "./engine-capacity.ts";
import type { EngineInfo } from "./engine-info.ts";
import type { ModelDirectory, ServedModel } from "./models.ts";
import type { WorkerRecord, WorkerRegistry } from "./registry.ts";

/**
 * Data-parallel ranks one worker may have, from any source (a registration, the workers file,
 * --zmq-dp-ranks, the engine's own /v1/engine/info): every rank is a routing target scored on
 * each request and, with KV events, a subscription: an engine claiming 20,000 ranks would
 * cost 20,000 /kv/query calls in 5 s and 5.7 ms of routing per request.
 */
export const MAX_DP_RANKS = 1024;

export interface RegisterInput {
  readonly url: string;
  readonly id?: WorkerId;
  readonly dpRanks?: number;
  readonly blockSize?: number;
  /** Adapters loaded on it (default: what its engine info says). */
  readonly loras?: readonly string[];
  /** Its LoRA slots (vLLM --max-loras; default: engine info). */
  readonly maxLoras?: number;
  /** Its base model (default: engine info). */
  readonly model?: string;
  /** Every base model it serves (default: what its GET /v1/models lists, adapters included). */
  readonly models?: readonly string[];
  /**
   * Restore its part of the index from GET /kv/query (default true). False for workers
   * whose events come from elsewhere (vLLM over ZMQ serves no /kv/query).
   */
  readonly restore?: boolean;
}

export interface RegisterResult {
  readonly worker: WorkerRecord;
  /** False when the same worker was already registered (registration is idempotent). */
  readonly created: boolean;
  readonly warnings: readonly string[];
}

/** The parts membership keeps in step; each is a narrow view of a real component. */
export interface MembershipDeps {
  readonly registry: WorkerRegistry;
  readonly blockSize: number;
  readonly load: {
    updateWorkers(targets: Iterable<WorkerWithDpRank>): void;
    /**
     * One worker's ranks in or out, the others untouched: with them a registration costs its
     * own ranks, not the whole fleet (syncing the whole list made 4,000 registrations take 11 s).
     */
    addWorkers?(targets: Iterable<WorkerWithDpRank>): void;
    removeLoad?(workerId: WorkerId): void;
    /** The KV blocks each rank's engine says it holds (engine info's kv_blocks, else `kvCapacity`), for the time-based kv's credit. */
    setKvCapacity?(worker: WorkerWithDpRank, blocks: number | undefined): void;
  };
  readonly recovery: {
    addRank(workerId: WorkerId, dpRank: DpRank): void;
    removeWorker(workerId: WorkerId): void;
  };
  readonly lora?: {
    handleMdcAddition(
      worker: WorkerWithDpRank,
      info: { name: string; maxGpuLoraCount?: number },
    ): void;
    handleWorkerRemoval(worker: WorkerWithDpRank): void;
    /** Known capacity before any adapter is loaded, so the router can place the first one. */
    setWorkerCapacity?(worker: WorkerWithDpRank, capacity: number): void;
  };
  /** Asks the engine about itself; a rejection registers the worker as not yet healthy. */
  readonly engineInfo: (url: string) => Promise<EngineInfo>;
  /**
   * Asks a real engine for its KV capacity (vLLM's /metrics, SGLang's server info:
   * engine-capacity-probe.ts) when its engine info names none; undefined or a rejection: unknown.
   */
  readonly kvCapacity?: (url: string) => Promise<KvCapacityReading | undefined>;
  /** Which models each worker serves, and how to ask an engine (GET /v1/models). */
  readonly models?: {
    readonly directory: ModelDirectory;
    readonly fetch: (url: string) => Promise<ServedModel[]>;
  };
  /** A worker was added or removed (health checker bookkeeping, logs). */
  readonly onAdded?: (w: WorkerRecord) => void;
  readonly onRemoved?: (w: WorkerRecord) => void;
  readonly warn?: (message: string) => void;
  /**
   * Workers that may be registered at once (--max-workers); one more is refused, naming the
   * flag. Every worker costs the router per request (each rank is a scheduling candidate)
   * and per registration; without a bound a client with the admin token could register
   * thousands (8,244 in the probe: 4.8-5.8 GB, 2 s event-loop stalls).
   */
  readonly maxWorkers?: number;
}

export class WorkerMembership {
  /**
   * The id each registered engine calls itself (its /v1/engine/info worker_id), by that id:
   * the engine's URL. Events an engine pushes carry this id, so two engines claiming one id
   * would write into one worker's part of the index.
   */
  readonly #claims = new Map<WorkerId, string>();

  constructor(private readonly d: MembershipDeps) {}

  async register(input: RegisterInput): Promise<RegisterResult> {
    let url: string;
    try {
      url = normalizeWorkerUrl(input.url);
      if (!/^https?:$/.test(new URL(url).protocol)) throw new Error("scheme");
    } catch {
      throw new RouterError(
        "invalid_request",
        `url: must be an http:// or https:// URL (got ${JSON.stringify(input.url)})`,
        "url",
      );
    }
    const id = input.id ?? workerIdFromUrl(url);
    const known = this.#existing(id, url);
    if (known) return { worker: known, created: false, warnings: [] };
    this.#checkRoom();

    const warnings: string[] = [];
    let info: EngineInfo | undefined;
    // Asked together: a registration waits for the slower of the two, not their sum.
    const served =
      input.models === undefined
        ? this.#servedModels(url)
        : Promise.resolve(input.models.map((id) => ({ id, parent: null })));
    try {
      info = await this.d.engineInfo(url);
    } catch (e) {
      warnings.push(
        `engine info unavailable (${(e as Error).message}); registered as unhealthy until a health check passes`,
      );
    }
    // Only engines that did not say kv_blocks are asked again (vLLM and SGLang serve no engine info).
    const probed =
      info?.kvBlocks === undefined && this.d.kvCapacity !== undefined
        ? this.d.kvCapacity(url).catch(() => undefined)
        : Promise.resolve(undefined);
    const models = await served;
    const capacity = this.#kvCapacity(info, await probed, warnings);
    const blockSize = input.blockSize ?? info?.blockSize;
    if (blockSize !== undefined && blockSize !== this.d.blockSize) {
      throw new RouterError(
        "invalid_request",
        `block_size: the worker uses ${blockSize}-token blocks but this router hashes ${this.d.blockSize}-token blocks (--block-size)`,
        "block_size",
      );
    }
    if (info?.workerId !== undefined) this.#checkClaim(info.workerId, url);
    if (info?.workerId !== undefined && info.workerId !== id) {
      warnings.push(
        `the engine calls itself worker ${info.workerId} but is registered as ${id}; events it pushes under its own id will be dropped`,
      );
    }
    // Another registration of the same id may have finished while we awaited.
    const raced = this.#existing(id, url);
    if (raced) return { worker: raced, created: false, warnings };
    this.#checkRoom(); // others may have filled the last places while we awaited

    const dpRanks = input.dpRanks ?? info?.dpRanks ?? 1;
    // One cap whatever said it: the registration, or the engine about itself.
    if (!Number.isSafeInteger(dpRanks) || dpRanks < 1 || dpRanks > MAX_DP_RANKS) {
      const from = input.dpRanks !== undefined ? "the registration" : "its /v1/engine/info";
      throw new RouterError(
        "invalid_request",
        `dp_ranks: ${from} says ${dpRanks} data-parallel ranks; at most ${MAX_DP_RANKS}`,
        "dp_ranks",
      );
    }
    // Checked again: another engine's registration may have claimed the id while we awaited.
    if (info?.workerId !== undefined) this.#checkClaim(info.workerId, url);
    this.d.registry.add(id, url, dpRanks, info !== undefined, input.model ?? info?.model);
    if (info?.workerId !== undefined) this.#claims.set(info.workerId, url);
    const rec = this.d.registry.get(id)!;
    if (models !== undefined) this.d.models?.directory.set(id, models);
    if (this.d.load.addWorkers !== undefined) this.d.load.addWorkers(ranksOf(id, dpRanks));
    else this.#syncLoad();
    for (let r = 0; r < dpRanks; r++)
      this.d.load.setKvCapacity?.({ workerId: id, dpRank: r }, capacity(r));
    if (input.restore !== false) for (let r = 0; r < dpRanks; r++) this.d.recovery.addRank(id, r);
    this.#recordLoras(
      id,
      dpRanks,
      input.loras ?? info?.loras ?? [],
      input.maxLoras ?? info?.maxLoras,
    );
    for (const w of warnings) this.d.warn?.(`worker ${id} (${url}): ${w}`);
    this.d.onAdded?.(rec);
    return { worker: rec, created: true, warnings };
  }

  /** Remove a worker: its blocks leave the index and its in-flight bookings are freed. */
  remove(id: WorkerId): WorkerRecord {
    const rec = this.d.registry.remove(id);
    if (!rec) throw new RouterError("worker_not_found", `worker ${id} is not registered`);
    for (const [claimed, url] of this.#claims) if (url === rec.url) this.#claims.delete(claimed);
    if (this.d.load.removeLoad !== undefined) this.d.load.removeLoad(id);
    else this.#syncLoad();
    this.d.recovery.removeWorker(id);
    this.d.models?.directory.remove(id);
    if (this.d.lora)
      for (let r = 0; r < rec.dpRanks; r++)
        this.d.lora.handleWorkerRemoval({ workerId: id, dpRank: r });
    this.d.onRemoved?.(rec);
    return rec;
  }

  /** The engine's model list, or undefined when it serves none (the worker may serve any model). */
  async #servedModels(url: string): Promise<ServedModel[] | undefined> {
    if (!this.d.models) return undefined;
    try {
      return await this.d.models.fetch(url);
    } catch {
      return undefined;
    }
  }

  /**
   * Each rank's KV capacity in blocks: engine info's kv_blocks, else what the probe read; a value
   * that cannot be a real cache is a warning and leaves the capacity unknown.
   */
  #kvCapacity(
    info: EngineInfo | undefined,
    probed: KvCapacityReading | undefined,
    warnings: string[],
  ): (dpRank: number) => number | undefined {
    if (info?.kvBlocks !== undefined) {
      const blocks = checkedBlocks(info.kvBlocks, this.d.blockSize);
      if (typeof blocks === "number") return () => blocks;
      warnings.push(`KV capacity unknown: its /v1/engine/info kv_blocks ${blocks}`);
      return () => undefined;
    }
    if (probed === undefined) return () => undefined;
    for (const p of probed.problems) warnings.push(`KV capacity: ${probed.source} not taken: ${p}`);
    return (r) => capacityOfRank(probed, r);
  }

  /** Adapters are engine-wide (vLLM loads one for every rank): record each on every rank. */
  #recordLoras(
    id: WorkerId,
    dpRanks: number,
    loras: readonly string[],
    maxLoras: number | undefined,
  ): void {
    const lora = this.d.lora;
    if (!lora) return;
    for (let r = 0; r < dpRanks; r++) {
      const worker = { workerId: id, dpRank: r };
      if (maxLoras !== undefined) lora.setWorkerCapacity?.(worker, maxLoras);
      for (const name of loras) lora.handleMdcAddition(worker, { name, maxGpuLoraCount: maxLoras });
    }
  }

  #checkRoom(): void {
    const max = this.d.maxWorkers;
    if (max === undefined || this.d.registry.size < max) return;
    throw new RouterError(
      "unavailable",
      `url: this router already has ${this.d.registry.size} workers, its limit (--max-workers ${max}); remove one first or raise the limit`,
      "url",
    );
  }

  /**
   * An engine at `url` calls itself `claimed`: refused when another registered engine (another
   * URL) claims that id too, or is registered under it. The usual cause is engines in containers
   * that derive their id from the same listen address (http://0.0.0.0:8000).
   */
  #checkClaim(claimed: WorkerId, url: string): void {
    const other = this.#claims.get(claimed) ?? this.d.registry.get(claimed)?.url;
    if (other === undefined || other === url) return;
    throw new RouterError(
      "duplicate_request",
      `worker id clash: the engine at ${url} calls itself worker ${claimed}, which the engine at ${other} already claims; ` +
        "their KV events would mix in one worker's index. Give each engine its own id: start it with --advertise-url " +
        "set to the URL this router reaches it at (or a distinct --worker-id)",
      "url",
    );
  }

  #existing(id: WorkerId, url: string): WorkerRecord | undefined {
    const rec = this.d.registry.get(id);
    if (rec === undefined) {
      // The same engine under a second id would count twice: twice the load it can take,
      // every request's cost split between two views of one cache.
      const other = this.d.registry.idOfUrl(url);
      if (other !== undefined)
        throw new RouterError(
          "duplicate_request",
          `url: ${url} is already registered as worker ${other}`,
          "url",
        );
      return undefined;
    }
    if (rec.url === url) return rec;
    throw new RouterError(
      "duplicate_request",
      `worker id ${id} is already registered for ${rec.url}`,
      "id",
    );
  }

  /** The tracker keeps slots of every registered rank, healthy or not (load survives a fence). */
  #syncLoad(): void {
    const targets: WorkerWithDpRank[] = [];
    for (const w of this.d.registry.list())
      for (let r = 0; r < w.dpRanks; r++) targets.push({ workerId: w.id, dpRank: r });
    this.d.load.updateWorkers(targets);
  }
}

function ranksOf(id: WorkerId, dpRanks: number): WorkerWithDpRank[] {
  return Array.from({ length: dpRanks }, (_, r) => ({ workerId: id, dpRank: r }));
}
