/**
 * One dp rank's steps as vLLM V1's scheduler makes them (`--scheduler v1`, the default).
 *
 * vllm/v1/core/sched/scheduler.py `Scheduler.schedule()` at vllm-project/vllm 00024d31: "There's
 * no 'decoding phase' nor 'prefill phase' in the scheduler": every step has a token budget
 * (`token_budget = self.max_num_scheduled_tokens`, i.e. max_num_batched_tokens); "First,
 * schedule the RUNNING requests": each running request takes what it still needs, a decode 1
 * token, a partly prefilled prompt its next chunk (`num_new_tokens = min(num_new_tokens,
 * token_budget)`); "Next, schedule the WAITING requests", in arrival order, `while self.waiting
 * and token_budget > 0`, stopping at `if len(self.running) == self.max_num_running_reqs: break`,
 * each taking at most what is left of the budget (chunked prefill, on by default in V1), its
 * cached prefix looked up when it is first scheduled. A request whose last prompt chunk ran
 * samples its first token at the end of that step; every later step gives it one more.
 *
 * So a prefill shares its step with the rank's decodes and its time grows with the batch it
 * joins, and a long prompt is spread over several steps while decodes keep going. The time of a
 * step is timing.ts's `stepMs`: the decode cost of its batch plus the compute of its prompt
 * tokens. Time comes from the engine's Clock; the schedule is absolute (no drift), within a
 * small lag allowance so a step that starts late does not make later arrivals look instant.
 * It knows nothing of caches or HTTP: the engine gives it sequences with callbacks.
 */
import { AbortedError } from "./fifo.ts";
import { stepMs, type TimingModel } from "./timing.ts";

/** The engine's Clock (engine.ts), as far as the steps use it. */
export interface StepClock {
  /** Monotonic milliseconds. */
  now(): number;
  sleep(ms: number): Promise<void>;
}

/** What the scheduler needs of one request. Callbacks run inside a step and must not throw. */
export interface StepSeq {
  readonly maxTokens: number;
  readonly signal?: AbortSignal;
  /** The request is first scheduled (the cache is looked up now): the prompt tokens it must compute. */
  begin(): number;
  /** Its last prompt chunk's step ended; the first token follows at once. */
  prefilled(): void;
  /** Output token `index` (0 = the one the prefill step sampled). */
  token(index: number): void;
}

interface Entry {
  readonly seq: StepSeq;
  /** Prompt tokens still to compute; undefined until first scheduled. */
  prefillLeft: number | undefined;
  generated: number;
  done: boolean;
  resolve(): void;
  reject(e: unknown): void;
}

/** A late step may start this far behind its due time; later than that, the schedule restarts from now. */
const MAX_LAG_MS = 5;
/** Sleeps shorter than this are skipped (timers are ~1 ms coarse); the schedule stays absolute. */
const MIN_SLEEP_MS = 1;

export interface StepLimits {
  /** vLLM's max_num_batched_tokens: the tokens one step computes. */
  readonly maxNumBatchedTokens: number;
  /** vLLM's max_num_seqs: requests running at once. */
  readonly maxRunning: number;
}

export class StepScheduler {
  readonly #waiting: Entry[] = [];
  readonly #running: Entry[] = [];
  #looping = false;

  constructor(
    private readonly clock: StepClock,
    private readonly timing: TimingModel,
    private readonly limits: StepLimits,
  ) {
    if (!(limits.maxNumBatchedTokens >= 1 && limits.maxRunning >= 1))
      throw new RangeError("step limits must be >= 1");
  }

  /** Requests not yet scheduled. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Requests scheduled at least once and not finished (prefilling or decoding). */
  get running(): number {
    return this.#running.length;
  }

  /** Running requests past their prefill. */
  get decoding(): number {
    let n = 0;
    for (const e of this.#running) if (e.prefillLeft === 0) n++;
    return n;
  }

  /** Run a request to its last token; rejects with AbortedError as soon as its signal fires. */
  submit(seq: StepSeq): Promise<void> {
    if (seq.signal?.aborted) return Promise.reject(new AbortedError());
    return new Promise<void>((resolve, reject) => {
      const e: Entry = { seq, prefillLeft: undefined, generated: 0, done: false, resolve, reject };
      const onAbort = () => this.#end(e, new AbortedError());
      seq.signal?.addEventListener("abort", onAbort, { once: true });
      e.resolve = () => {
        seq.signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      this.#waiting.push(e);
      if (!this.#looping) void this.#loop();
    });
  }

  /** Finish an entry now (its last token, or an abort): it leaves whichever queue holds it. */
  #end(e: Entry, error?: unknown): void {
    if (e.done) return;
    e.done = true;
    remove(this.#waiting, e);
    remove(this.#running, e);
    if (error === undefined) e.resolve();
    else e.reject(error);
  }

  async #loop(): Promise<void> {
    this.#looping = true;
    // Requests that arrive in the same tick are scheduled in the same step.
    await null;
    let due = this.clock.now();
    try {
      while (this.#waiting.length > 0 || this.#running.length > 0) {
        const plan = this.#plan();
        const now = this.clock.now();
        if (due < now - MAX_LAG_MS) due = now;
        due += plan.ms;
        const wait = due - now;
        // Always yield, even for a step too short to sleep: arrivals and aborts get their turn.
        await this.clock.sleep(wait >= MIN_SLEEP_MS ? wait : 0);
        this.#apply(plan.work);
      }
    } finally {
      this.#looping = false;
    }
  }

  /** One step's work, running requests first, then waiting ones in what is left of the budget. */
  #plan(): { work: [Entry, number][]; ms: number } {
    const work: [Entry, number][] = [];
    let budget = this.limits.maxNumBatchedTokens;
    let decodes = 0;
    let prefillTokens = 0;
    let prefills = 0;
    for (const e of this.#running) {
      if (budget <= 0) break;
      if (e.prefillLeft === 0) {
        work.push([e, 1]);
        budget -= 1;
        decodes++;
      } else {
        const n = Math.min(e.prefillLeft!, budget);
        work.push([e, n]);
        budget -= n;
        prefillTokens += n;
        prefills++;
      }
    }
    while (
      this.#waiting.length > 0 &&
      budget > 0 &&
      this.#running.length < this.limits.maxRunning
    ) {
      const e = this.#waiting.shift()!;
      // A fully cached prompt still runs its last token through the model (vLLM recomputes it).
      e.prefillLeft = Math.max(1, e.seq.begin());
      this.#running.push(e);
      const n = Math.min(e.prefillLeft, budget);
      work.push([e, n]);
      budget -= n;
      prefillTokens += n;
      prefills++;
    }
    return { work, ms: stepMs(decodes, prefills, prefillTokens, this.timing) };
  }

  #apply(work: readonly [Entry, number][]): void {
    for (const [e, n] of work) {
      if (e.done) continue; // aborted during the step
      if (e.prefillLeft! > 0) {
        e.prefillLeft! -= n;
        if (e.prefillLeft! > 0) continue;
        e.seq.prefilled();
      }
      e.seq.token(e.generated++);
      if (e.generated >= e.seq.maxTokens) this.#end(e);
    }
  }
}

function remove(list: Entry[], e: Entry): void {
  const i = list.indexOf(e);
  if (i >= 0) list.splice(i, 1);
}
