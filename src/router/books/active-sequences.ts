/**
 * The active requests of ONE (worker, dp_rank) and the load they put on it (Dynamo's ActiveSequences,
 * Dynamo `ActiveSequences`, reference generation): blocks held (refcounted by sequence
 * hash, so requests sharing a prefix count it once) and prefill tokens still to compute.
 * A request's prefill tokens count in full until its first token says the prefill is done:
 * Dynamo decays the oldest prefill over an expected duration, but nothing on our request
 * path knows one, so there is no decay. It books and releases load; it never chooses a
 * worker. Time (for the 300 s expiry) is `now` in milliseconds, passed in.
 */
import { BlockRefs } from "./block-refs.ts";
import { u32Halves } from "./hash64-table.ts";
import type { Rng } from "../../core/rng.ts";

/** A request older than this is assumed leaked (its free never came) and is dropped. */
export const EXPIRY_MS = 300_000;
/** Expiry scans run at most this often, so adds stay O(request) in the common case. */
export const CHECK_EXPIRY_EVERY_MS = 30_000;

export interface SlotRequest {
  readonly requestId: string;
  /** Sequence hashes of the prompt's full blocks (Dynamo's compute_seq_hashes_for_tracking); null when blocks are not tracked. */
  readonly seqHashes: BigUint64Array | null;
  /** Prompt length in tokens. */
  readonly isl: number;
  /** Prompt blocks already cached on this worker: its prefill load is the rest. */
  readonly overlap: number;
}

interface RequestState {
  readonly promptNodes: Int32Array;
  /** The prompt's sequence hashes (a reference, not a copy): what the rank's cache holds once this prefill is done. */
  readonly seqHashes: BigUint64Array | null;
  outputNodes: number[] | null;
  readonly startedAt: number;
  /** Prefill tokens booked at admission: max(0, isl − overlap·blockSize). */
  readonly prefillTokens: number;
}

export class ActiveSequences {
  readonly #requests = new Map<string, RequestState>();
  /** Requests whose prefill load is still booked, in admission order (Map keeps it). */
  readonly #prefilling = new Map<string, RequestState>();
  #prefillSum = 0;
  /** Booked prefill tokens of every request seen done here (first token), ever: a running total. */
  #prefilledSum = 0;
  #lastExpiryCheck: number | undefined;
  #lastPrefillDoneAt = -Infinity;
  #lastBookedAt = -Infinity;
  /** The youngest request whose prefill is still booked: the last prompt the engine will have computed before the next one starts. */
  #prefillTail: RequestState | undefined;
  /**
   * The oldest request whose prefill is still booked (the first of `#prefilling`), kept so the
   * TTFT predictor reads it per rank per decision without a Map iterator: at 1,024 ranks that
   * iterator and its result object were a fifth of a decision.
   */
  #prefillHead: RequestState | undefined;

  /**
   * How many KV blocks this rank's engine can hold (its own report: vLLM's num_gpu_blocks, the
   * simulated engine's kv_blocks); undefined when it did not say. With it, the credit for a prefix
   * is what the engine can still hold when the request starts (keptWhenItStarts).
   */
  kvCapacityBlocks: number | undefined;

  /**
   * @param refs the block table shared by all slots of a tracker (a private one by default)
   * @param slot this slot's index in `refs`
   */
  constructor(
    readonly blockSize: number,
    readonly refs: BlockRefs = new BlockRefs(),
    readonly slot: number = refs.newSlot(),
  ) {
    if (!(blockSize >= 1)) throw new Error(`block size must be >= 1, got ${blockSize}`);
  }

  has(requestId: string): boolean {
    return this.#requests.has(requestId);
  }

  get activeRequests(): number {
    return this.#requests.size;
  }

  requestIds(): IterableIterator<string> {
    return this.#requests.keys();
  }

  /** Uncached prompt tokens: max(0, isl − overlap·blockSize). */
  newTokens(isl: number, overlap: number): number {
    return Math.max(0, isl - overlap * this.blockSize);
  }

  /** Book a request. A duplicate id is ignored (returns null). Returns the ids expired first. */
  add(req: SlotRequest, now: number): string[] | null {
    if (this.#requests.has(req.requestId)) return null;
    const expired = this.forceExpiry(now);
    const seq = req.seqHashes;
    const promptNodes = new Int32Array(seq ? seq.length : 0);
    if (seq && seq.length > 0)
      this.refs.acquireAll(this.slot, u32Halves(seq), seq.length, promptNodes);
    const state: RequestState = {
      promptNodes,
      seqHashes: seq,
      outputNodes: null,
      startedAt: now,
      prefillTokens: this.newTokens(req.isl, req.overlap),
    };
    this.#requests.set(req.requestId, state);
    if (now > this.#lastBookedAt) this.#lastBookedAt = now;
    if (state.prefillTokens > 0) {
      if (this.#prefilling.size === 0) this.#prefillHead = state;
      this.#prefilling.set(req.requestId, state);
      this.#prefillSum += state.prefillTokens;
      this.#prefillTail = state;
    }
    return expired;
  }

  /**
   * The request's prompt is computed: its prefill load goes (idempotent). `now` (ms), when
   * given, is when the rank's prefill lane was seen free again (`lastPrefillDoneAt`).
   */
  markPrefillCompleted(requestId: string, now?: number): void {
    const state = this.#prefilling.get(requestId);
    if (!state) return;
    this.#prefilledSum += state.prefillTokens;
    this.#unqueue(requestId, state);
    if (now !== undefined && now > this.#lastPrefillDoneAt) this.#lastPrefillDoneAt = now;
  }

  /**
   * The booked prefill tokens of every request whose prefill was seen done on this rank so far
   * (this router's first tokens and, with load sync, the other routers'), a running total. Two
   * readings bracket what the rank computed in between: the TTFT predictor's sample counts with it
   * the prompts that went ahead of a request without this router having seen them booked
   * (ttft-predictor.ts, firstTokenSampler). A request freed before its first token is not in it.
   */
  get prefilledTokens(): number {
    return this.#prefilledSum;
  }

  /** Take a request off the prefill queue (done, or freed before its first token). */
  #unqueue(requestId: string, state: RequestState): void {
    this.#prefilling.delete(requestId);
    this.#prefillSum -= state.prefillTokens;
    if (state === this.#prefillTail) {
      // Prefills finish oldest first, so the tail goes only when the queue empties (or a request is freed early): rare, and the walk is short.
      this.#prefillTail = undefined;
      for (const s of this.#prefilling.values()) this.#prefillTail = s;
    }
    if (state === this.#prefillHead) {
      // The oldest finishes first as a rule, and the next oldest is then the Map's first entry.
      this.#prefillHead = undefined;
      for (const s of this.#prefilling.values()) {
        this.#prefillHead = s;
        break;
      }
    }
  }

  /**
   * When a request was last booked here (ms; −Infinity: never): how long this rank's cache has gone
   * untouched, so how cold what it holds is. The kv picker's tie-break places a new prefix where it
   * evicts the coldest blocks (pickers/fastest-then-cache.ts).
   */
  get lastBookedAt(): number {
    return this.#lastBookedAt;
  }

  /**
   * When a prefill on this rank was last seen done (ms; -Infinity before the first). Engines
   * prefill one request after another per rank, so this is when the oldest request still
   * prefilling could start at the earliest (the TTFT predictor's clock for the lane).
   */
  get lastPrefillDoneAt(): number {
    return this.#lastPrefillDoneAt;
  }

  /** Requests whose prefill is still booked (each costs the engine its per-request overhead). */
  get prefillingRequests(): number {
    return this.#prefilling.size;
  }

  /** The oldest request still prefilling: its booked prefill tokens and when it was booked; undefined when none. */
  prefillHead(): { readonly tokens: number; readonly bookedAt: number } | undefined {
    const h = this.#prefillHead;
    return h === undefined ? undefined : { tokens: h.prefillTokens, bookedAt: h.startedAt };
  }

  /** prefillHead()'s tokens without building it (0 when none): read per rank per decision. */
  get prefillHeadTokens(): number {
    return this.#prefillHead?.prefillTokens ?? 0;
  }

  /** prefillHead()'s bookedAt without building it (-Infinity when none). */
  get prefillHeadBookedAt(): number {
    return this.#prefillHead?.startedAt ?? -Infinity;
  }

  /**
   * Of a prompt's leading blocks that are cached here or being computed here (`credited`: the
   * index's depth or the in-flight prefixes', whichever is longer), how many the engine will still
   * hold when this request's prefill starts, given its KV capacity. Unknown capacity: all of them.
   *
   * Why: an engine cannot keep more blocks than it has, and it computes its queue in order. When
   * the last prompt queued ahead fills the whole cache, that prompt is all the engine holds when
   * this request starts: what this request finds is what it shares with that prompt. Otherwise
   * the credited prefix can survive, but never beyond the capacity. Crediting whole in-flight
   * prefixes on engines smaller than one prompt made every sibling of an agent's fan-out look
   * nearly free on the engine holding the agent (booked prefill ÷ computed ≈ 1 ÷ 4 in the timing
   * simulation's small-cache agentic cell), and requests piled onto it.
   */
  keptWhenItStarts(seqHashes: BigUint64Array | null, credited: number): number {
    const cap = this.kvCapacityBlocks;
    if (cap === undefined) return credited;
    const tail = this.#prefillTail?.seqHashes;
    if (tail && tail.length >= cap) {
      const n = Math.min(cap, seqHashes?.length ?? 0, tail.length);
      let shared = 0;
      while (shared < n && seqHashes![shared] === tail[shared]) shared++;
      return shared;
    }
    return Math.min(cap, credited);
  }

  /** Release everything the request holds. Returns whether it was active. */
  free(requestId: string): boolean {
    const queued = this.#prefilling.get(requestId);
    if (queued) this.#unqueue(requestId, queued);
    const state = this.#requests.get(requestId);
    if (!state) return false;
    this.#requests.delete(requestId);
    const nodes = state.promptNodes;
    for (let i = 0; i < nodes.length; i++) this.refs.release(nodes[i]!);
    if (state.outputNodes) for (const n of state.outputNodes) this.refs.release(n);
    return true;
  }

  /**
   * One more generated block for the request, under a random hash (output is never shared).
   * With `decayFraction`, every block only this request holds counts as that fraction of a
   * block from now on (the request is expected to finish soon). False if unknown.
   */
  addOutputBlock(requestId: string, decayFraction: number | undefined, rng: Rng): boolean {
    const state = this.#requests.get(requestId);
    if (!state) return false;
    const node = this.refs.acquire(
      this.slot,
      (rng() * 0x1_0000_0000) >>> 0,
      (rng() * 0x1_0000_0000) >>> 0,
    );
    (state.outputNodes ??= []).push(node);
    if (decayFraction !== undefined) {
      const refs = this.refs;
      for (const n of state.promptNodes)
        if (refs.refCount(n) === 1) refs.setFraction(n, decayFraction);
      for (const n of state.outputNodes)
        if (refs.refCount(n) === 1) refs.setFraction(n, decayFraction);
    }
    return true;
  }

  /**
   * Free every request started more than EXPIRY_MS before `now`; runs at most once per
   * CHECK_EXPIRY_EVERY_MS (the first call only starts the clock). Returns the freed ids.
   */
  forceExpiry(now: number): string[] {
    if (this.#lastExpiryCheck === undefined) {
      this.#lastExpiryCheck = now;
      return [];
    }
    if (now < this.#lastExpiryCheck + CHECK_EXPIRY_EVERY_MS) return [];
    this.#lastExpiryCheck = now;
    const cutoff = now - EXPIRY_MS;
    const expired: string[] = [];
    for (const [id, state] of this.#requests) if (state.startedAt < cutoff) expired.push(id);
    for (const id of expired) this.free(id);
    return expired;
  }

  /** Blocks held, shared prefixes once, fractional blocks as their fraction. */
  activeBlocks(): number {
    return this.refs.activeBlocks(this.slot);
  }

  /** Prefill tokens still to compute: those of every request whose prefill is not done. */
  activeTokens(): number {
    return this.#prefillSum;
  }

  /** Of these sequence hashes, how many this slot does not hold yet. */
  newBlocks(seqHashes: BigUint64Array): number {
    const halves = u32Halves(seqHashes);
    let missing = 0;
    for (let i = 0; i < seqHashes.length; i++)
      if (!this.refs.holds(this.slot, halves[2 * i]!, halves[2 * i + 1]!)) missing++;
    return missing;
  }

  /** Free every request (the slot is going away). */
  clear(): void {
    for (const id of [...this.#requests.keys()]) this.free(id);
  }

  /** Ids still prefilling, oldest first (test and debug view). */
  prefillOrder(): string[] {
    return [...this.#prefilling.keys()];
  }
}
