/**
 * Is one event source's picture true? One (worker, dp rank)'s state, from the verdicts of its
 * answers (answer-check.ts) and its canaries. Pure: time comes in as `now` (ms).
 *
 * - exact: the index's predictions are served; the router routes on it.
 * - degraded: the index claims blocks the engine does not serve, or the engine's prompts or
 *   blocks are not the router's (another template, tokenizer, block size): its overlaps are false.
 * - blind: the engine serves hits the router never heard of: its events are missing (dropped, or
 *   published where this router does not listen).
 *
 * Rules (over the last `window` checked answers of the source, DEFAULT_TRUTH_RULES):
 * - `tokensDiffer` answers whose prompt length is not the router's -> degraded, template_or_tokenizer;
 * - `blockSize` answers whose hit is not whole blocks of the router's size -> degraded, block_size;
 * - `hitsNeeded` answers that served less than predicted, and at least `share` of those with a
 *   predicted hit -> degraded, stale_index (a restart missed, another engine's events, or hashes
 *   that stopped matching);
 * - `unexpectedNeeded` answers that served more than the index and the in-flight requests
 *   explain, and at least `unexpectedShare` of those with a hit (a prompt's shared system prefix
 *   makes nearly every answer a hit, so a lost event shows in a few of them) -> blind, with the cause read from the event stream:
 *   no_events (no live event since `quietMs`), block_hashes (events come, but no prediction of
 *   the window ever hit: their hashes are not the router's), else events_missing; once a
 *   prediction is served, blind (block_hashes) becomes blind (events_missing), the only change of
 *   cause within a state;
 * - a canary that fails -> degraded at once, with the canary's cause.
 * Back to exact (hysteresis): `recoverAgree` agreeing answers in a row, `recoverHits` of them with
 * a predicted hit the engine served, and at least `minDwellMs` since the state was entered. Entering
 * needs a share of a window; leaving needs a clean run, so a source near a threshold does not flap.
 */
import type { AnswerVerdict } from "./answer-check.ts";

export type TruthState = "exact" | "degraded" | "blind";
export type TruthCause =
  | "template_or_tokenizer"
  | "block_size"
  | "block_hashes"
  | "stale_index"
  | "events_missing"
  | "no_events"
  | "lora_salt"
  | "cached_tokens";

export interface TruthRules {
  readonly window: number;
  readonly tokensDiffer: number;
  readonly blockSize: number;
  readonly hitsNeeded: number;
  readonly share: number;
  readonly unexpectedNeeded: number;
  readonly unexpectedShare: number;
  readonly quietMs: number;
  readonly recoverAgree: number;
  readonly recoverHits: number;
  readonly minDwellMs: number;
}

export const DEFAULT_TRUTH_RULES: TruthRules = {
  window: 20,
  tokensDiffer: 3,
  blockSize: 2,
  hitsNeeded: 3,
  share: 0.5,
  unexpectedNeeded: 4,
  unexpectedShare: 0.2,
  quietMs: 30_000,
  recoverAgree: 10,
  recoverHits: 3,
  minDwellMs: 30_000,
};

/** One checked answer, as the state keeps it. */
export interface CheckedAnswer {
  readonly verdict: AnswerVerdict;
  /** Cached tokens the router predicted (its index) and the engine reported. */
  readonly expected: number;
  readonly cached: number;
}

/** What the event path says about this source (the tracker counts it). */
export interface EventFacts {
  /** Live events applied since registration. */
  readonly seen: number;
  /** When the last one came (ms), if any. */
  readonly lastAt: number | undefined;
  /**
   * Stored events whose parent block the router never got (the index's parent_block_not_found):
   * an earlier event of this source was lost. Events hashed another way still chain to each other.
   */
  readonly orphans?: number;
}

export interface Transition {
  readonly from: TruthState;
  readonly to: TruthState;
  readonly cause: TruthCause | undefined;
  /** What the decision rests on, for the log line. */
  readonly evidence: string;
  readonly at: number;
}

export class SourceTruth {
  state: TruthState = "exact";
  cause: TruthCause | undefined;
  since: number;
  /** Answers checked since registration, and those that agreed. */
  checked = 0;
  agreed = 0;
  #window = new AnswerWindow();
  #run = 0;
  #runHits = 0;

  constructor(
    now: number,
    readonly rules: TruthRules = DEFAULT_TRUTH_RULES,
  ) {
    this.since = now;
  }

  /** Share of the window that agreed (1 with nothing checked yet). */
  get agreement(): number {
    let n = 0;
    let ok = 0;
    this.#window.each((a) => {
      if (a.verdict === "unchecked") return;
      n++;
      if (a.verdict === "agree") ok++;
    });
    return n === 0 ? 1 : ok / n;
  }

  observe(a: CheckedAnswer, events: EventFacts, now: number): Transition | undefined {
    if (a.verdict === "unchecked") return undefined;
    this.checked++;
    if (a.verdict === "agree") this.agreed++;
    this.#window.push(a, this.rules.window);
    if (this.state !== "exact") {
      if (a.verdict === "agree") {
        this.#run++;
        if (a.expected > 0) this.#runHits++;
      } else {
        this.#run = 0;
        this.#runHits = 0;
      }
      if (
        this.#run >= this.rules.recoverAgree &&
        this.#runHits >= this.rules.recoverHits &&
        now - this.since >= this.rules.minDwellMs
      ) {
        const evidence = `${this.#run} answers in a row served what the index predicted (${this.#runHits} with hits) after ${Math.round((now - this.since) / 1000)} s ${this.state}`;
        this.#window.clear();
        return this.#move("exact", undefined, evidence, now);
      }
    }
    const found = this.#rule(events, now);
    if (found === undefined) return undefined;
    // Only a move to another state: a new cause within the same state is not news, except one:
    // block_hashes is named while no prediction in the window was served, which is also how a
    // source looks before enough of its dropped events' neighbours arrived; a prediction served
    // later proves the hashes are the router's, so the cause is events_missing after all. Never
    // back the other way: that needs a whole window without a served prediction, not new evidence.
    if (
      found.state === this.state &&
      !(this.cause === "block_hashes" && found.cause === "events_missing")
    )
      return undefined;
    if (this.state !== "exact" && found.state === "degraded" && this.state === "blind")
      return undefined;
    return this.#move(found.state, found.cause, found.evidence, now);
  }

  /** A canary failed: degraded at once. */
  canaryFailed(cause: TruthCause, evidence: string, now: number): Transition | undefined {
    if (this.state === "degraded" && this.cause === cause) return undefined;
    return this.#move("degraded", cause, `canary: ${evidence}`, now);
  }

  #move(to: TruthState, cause: TruthCause | undefined, evidence: string, now: number): Transition {
    const t: Transition = { from: this.state, to, cause, evidence, at: now };
    this.state = to;
    this.cause = cause;
    this.since = now;
    this.#run = 0;
    this.#runHits = 0;
    return t;
  }

  #rule(
    events: EventFacts,
    now: number,
  ): { state: TruthState; cause: TruthCause; evidence: string } | undefined {
    const r = this.rules;
    const { tokens, blocks, missed, predicted, unexpected, hits, predictedServed } = this.#window;
    const n = this.#window.length;
    if (tokens >= r.tokensDiffer)
      return {
        state: "degraded",
        cause: "template_or_tokenizer",
        evidence: `${tokens} of the last ${n} answers: the engine's prompt length is not the router's`,
      };
    if (blocks >= r.blockSize)
      return {
        state: "degraded",
        cause: "block_size",
        evidence: `${blocks} of the last ${n} answers: a cache hit that is not whole blocks of the router's size`,
      };
    if (unexpected >= r.unexpectedNeeded && unexpected >= r.unexpectedShare * hits) {
      const quiet = events.lastAt === undefined || now - events.lastAt >= r.quietMs;
      const cause: TruthCause = quiet
        ? "no_events"
        : predictedServed === 0 && (events.orphans ?? 0) === 0
          ? "block_hashes"
          : "events_missing";
      const why =
        cause === "no_events"
          ? events.seen === 0
            ? "no live event from this source since it registered"
            : `no live event for ${Math.round((now - events.lastAt!) / 1000)} s`
          : cause === "block_hashes"
            ? `${events.seen} events came, but no predicted hit in the window was served: their block hashes are not the router's`
            : predictedServed === 0
              ? `events come, but ${events.orphans} of them named a parent block the router never got: earlier ones were lost`
              : "events come, but not all of them";
      return {
        state: "blind",
        cause,
        evidence: `${unexpected} of ${hits} answers with cache hits served blocks the router never heard of; ${why}`,
      };
    }
    if (missed >= r.hitsNeeded && missed >= r.share * predicted) {
      return {
        state: "degraded",
        cause: "stale_index",
        evidence: `${missed} of ${predicted} answers with a predicted hit served less than the index holds`,
      };
    }
    return undefined;
  }
}

/**
 * The last checked answers (a ring) and the counts the rules read, kept as answers come and go:
 * each answer costs the same whatever the window's size, and allocates nothing.
 */
class AnswerWindow {
  #ring: CheckedAnswer[] = [];
  #head = 0;
  length = 0;
  tokens = 0;
  blocks = 0;
  missed = 0;
  unexpected = 0;
  predicted = 0;
  hits = 0;
  predictedServed = 0;

  push(a: CheckedAnswer, size: number): void {
    if (this.length < size) {
      this.#ring[(this.#head + this.length) % size] = a;
      this.length++;
    } else {
      this.#count(this.#ring[this.#head]!, -1);
      this.#ring[this.#head] = a;
      this.#head = (this.#head + 1) % size;
    }
    this.#count(a, 1);
  }

  clear(): void {
    this.#ring = [];
    this.#head = 0;
    this.length = 0;
    this.tokens = this.blocks = this.missed = this.unexpected = 0;
    this.predicted = this.hits = this.predictedServed = 0;
  }

  /** Oldest first. */
  each(f: (a: CheckedAnswer) => void): void {
    const size = this.#ring.length;
    for (let i = 0; i < this.length; i++) f(this.#ring[(this.#head + i) % size]!);
  }

  #count(a: CheckedAnswer, by: 1 | -1): void {
    if (a.verdict === "tokens_differ") this.tokens += by;
    else if (a.verdict === "block_size") this.blocks += by;
    else if (a.verdict === "missed_hits") this.missed += by;
    else if (a.verdict === "unexpected_hits") this.unexpected += by;
    if (a.expected > 0) this.predicted += by;
    if (a.cached > 0) this.hits += by;
    if (a.expected > 0 && a.cached >= a.expected) this.predictedServed += by;
  }
}
