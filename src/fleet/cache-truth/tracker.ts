/**
 * The fleet's cache truth: one SourceTruth per (worker, dp rank), fed by every checked answer
 * (the proxy's usage tap), the live events applied per source, and the canaries. It logs each
 * transition with its evidence, keeps the set of distrusted sources the router scores from its
 * own decisions instead (router ports `distrusted`), and shows the states to /v1/workers, the
 * status page and /metrics. Runtime-free: the clock comes in.
 */
import { workerKey, type DpRank, type WorkerId, type WorkerKey } from "../../core/ids.ts";
import type { Logger } from "../../core/logger.ts";
import type { RouterEvent } from "../../core/events.ts";
import type { MetricsRegistry } from "../../observe/registry.ts";
import { checkAnswer, type AnswerFacts } from "./answer-check.ts";
import {
  DEFAULT_TRUTH_RULES,
  SourceTruth,
  type Transition,
  type TruthCause,
  type TruthRules,
  type TruthState,
} from "./source-state.ts";

export interface CacheTruthOptions {
  readonly now: () => number;
  readonly log: Logger;
  readonly rules?: TruthRules;
}

interface Source {
  readonly workerId: WorkerId;
  readonly dpRank: DpRank;
  readonly truth: SourceTruth;
  speaksCached: boolean;
  eventsSeen: number;
  /** Removal events (removed, cleared) among them: an eviction between an answer's routing and its end. */
  removals: number;
  /** Stored events whose parent the index never got (parent_block_not_found): one before was lost. */
  orphans: number;
  lastEventAt: number | undefined;
  canary: { ok: boolean; at: number; evidence: string } | undefined;
}

/** One source as /v1/workers and the status page show it. */
export interface SourceView {
  readonly dp_rank: number;
  readonly state: TruthState;
  readonly cause: TruthCause | null;
  readonly since_ms: number;
  /** Share of the last checked answers whose cached tokens were what the index predicted. */
  readonly agreement: number;
  readonly answers_checked: number;
  readonly events_seen: number;
  readonly canary: {
    readonly ok: boolean;
    readonly age_ms: number;
    readonly evidence: string;
  } | null;
}

export type AnswerInput = Omit<AnswerFacts, "speaksCached" | "evictedMeanwhile"> & {
  /** The source's removalsSeen() when the request was routed (undefined: not known). */
  readonly removalsAtRoute?: number;
};

export class CacheTruth {
  readonly #o: CacheTruthOptions;
  readonly #sources = new Map<WorkerKey, Source>();
  /** The same sources by worker, then dp rank: found per answer without making a key string. */
  readonly #byWorker = new Map<WorkerId, Source[]>();
  /** Keys whose state is not exact: the router scores them from the approximate index. */
  readonly distrusted = new Set<WorkerKey>();
  readonly transitions: { to: TruthState; cause: string; workerId: WorkerId }[] = [];
  #transitionCounts = new Map<string, number>();

  constructor(o: CacheTruthOptions) {
    this.#o = o;
  }

  #find(workerId: WorkerId, dpRank: DpRank): Source | undefined {
    return this.#byWorker.get(workerId)?.[dpRank];
  }

  #source(workerId: WorkerId, dpRank: DpRank): Source {
    let s = this.#find(workerId, dpRank);
    if (s === undefined) {
      s = {
        workerId,
        dpRank,
        truth: new SourceTruth(this.#o.now(), this.#o.rules ?? DEFAULT_TRUTH_RULES),
        speaksCached: false,
        eventsSeen: 0,
        removals: 0,
        orphans: 0,
        lastEventAt: undefined,
        canary: undefined,
      };
      this.#sources.set(workerKey(workerId, dpRank), s);
      const ranks = this.#byWorker.get(workerId) ?? [];
      ranks[dpRank] = s;
      this.#byWorker.set(workerId, ranks);
    }
    return s;
  }

  /** An answer ended with usage: check it against what was predicted. */
  answer(workerId: WorkerId, dpRank: DpRank, f: AnswerInput): void {
    const s = this.#source(workerId, dpRank);
    if (f.cachedTokens !== undefined) s.speaksCached = true;
    const c = checkAnswer(
      f,
      s.speaksCached,
      f.removalsAtRoute !== undefined && s.removals > f.removalsAtRoute,
    );
    const now = this.#o.now();
    const t = s.truth.observe(
      c,
      { seen: s.eventsSeen, lastAt: s.lastEventAt, orphans: s.orphans },
      now,
    );
    if (t !== undefined) this.#moved(s, t);
  }

  /** Live events applied from engines (not dumps or replays): who is still talking. */
  eventsApplied(events: readonly RouterEvent[]): void {
    if (events.length === 0) return;
    const now = this.#o.now();
    let last: Source | undefined;
    for (const e of events) {
      if (last === undefined || last.workerId !== e.workerId || last.dpRank !== e.event.dpRank)
        last = this.#source(e.workerId, e.event.dpRank);
      last.eventsSeen++;
      last.lastEventAt = now;
      const type = e.event.data.type;
      if (type === "removed" || type === "cleared") last.removals++;
    }
  }

  /** A stored event of the rank named a parent block the index never got: an earlier event was lost. */
  orphanEvent(workerId: WorkerId, dpRank: DpRank): void {
    this.#source(workerId, dpRank).orphans++;
  }

  /** A canary's result (canary.ts). A failure degrades the source at once. */
  canaryResult(
    workerId: WorkerId,
    dpRank: DpRank,
    ok: boolean,
    cause: TruthCause | undefined,
    evidence: string,
    inconclusive = false,
  ): void {
    const s = this.#source(workerId, dpRank);
    const now = this.#o.now();
    s.canary = { ok, at: now, evidence };
    if (ok) {
      this.#o.log.info(
        `cache truth: canary ${inconclusive ? "inconclusive" : "passed"} on worker ${workerId} dp rank ${dpRank}: ${evidence}`,
        { worker_id: String(workerId), dp_rank: dpRank },
      );
      return;
    }
    const t = s.truth.canaryFailed(cause ?? "cached_tokens", evidence, now);
    if (t !== undefined) this.#moved(s, t);
  }

  /** The worker left: its sources go. */
  forget(workerId: WorkerId): void {
    for (const [key, s] of this.#sources) {
      if (s.workerId !== workerId) continue;
      this.#sources.delete(key);
      this.distrusted.delete(key);
    }
    this.#byWorker.delete(workerId);
  }

  /** Removal events (removed, cleared) heard from the rank since it was first seen. */
  removalsSeen(workerId: WorkerId, dpRank: DpRank): number {
    return this.#find(workerId, dpRank)?.removals ?? 0;
  }

  /** The rank has reported cached tokens in an answer (its missing count then means 0). */
  speaksCached(workerId: WorkerId, dpRank: DpRank): boolean {
    return this.#find(workerId, dpRank)?.speaksCached === true;
  }

  /** Live events heard from the rank since it was first seen. */
  eventsSeen(workerId: WorkerId, dpRank: DpRank): number {
    return this.#find(workerId, dpRank)?.eventsSeen ?? 0;
  }

  state(workerId: WorkerId, dpRank: DpRank): TruthState {
    return this.#find(workerId, dpRank)?.truth.state ?? "exact";
  }

  causeOf(workerId: WorkerId, dpRank: DpRank): TruthCause | undefined {
    return this.#find(workerId, dpRank)?.truth.cause;
  }

  /** The worker's sources, rank order (none before its first answer or event). */
  view(workerId: WorkerId): SourceView[] {
    const now = this.#o.now();
    const out: SourceView[] = [];
    for (const s of this.#sources.values()) {
      if (s.workerId !== workerId) continue;
      out.push({
        dp_rank: s.dpRank,
        state: s.truth.state,
        cause: s.truth.cause ?? null,
        since_ms: Math.max(0, now - s.truth.since),
        agreement: Math.round(s.truth.agreement * 1000) / 1000,
        answers_checked: s.truth.checked,
        events_seen: s.eventsSeen,
        canary:
          s.canary !== undefined
            ? {
                ok: s.canary.ok,
                age_ms: Math.max(0, now - s.canary.at),
                evidence: s.canary.evidence,
              }
            : null,
      });
    }
    return out.sort((a, b) => a.dp_rank - b.dp_rank);
  }

  /** switchyard_cache_truth_state, _agreement and _transitions_total, read at scrape time. */
  bindMetrics(r: MetricsRegistry, prefix: string): void {
    r.gauge(
      `${prefix}cache_truth_state`,
      "1 for the state of each (worker, dp rank) event source: exact (the index's predictions are served), degraded (they are false), blind (the engine serves hits the router never heard of)",
      ["worker", "dp_rank", "state"],
    ).onCollect((g) => {
      g.reset();
      for (const s of this.#sources.values())
        for (const st of STATES)
          g.set([String(s.workerId), String(s.dpRank), st], s.truth.state === st ? 1 : 0);
    });
    r.gauge(
      `${prefix}cache_agreement`,
      "Share of a source's last checked answers whose reported cached tokens were what the router's index predicted",
      ["worker", "dp_rank"],
    ).onCollect((g) => {
      g.reset();
      for (const s of this.#sources.values())
        g.set([String(s.workerId), String(s.dpRank)], s.truth.agreement);
    });
    r.counter(
      `${prefix}cache_truth_transitions_total`,
      "State changes of the event sources, by the state entered and its cause",
      ["worker", "to", "cause"],
    ).onCollect((c) => {
      for (const [k, n] of this.#transitionCounts) {
        const [w, to, cause] = k.split("|") as [string, string, string];
        c.set([w, to, cause], n);
      }
    });
  }

  #moved(s: Source, t: Transition): void {
    const key = workerKey(s.workerId, s.dpRank);
    if (t.to === "exact") this.distrusted.delete(key);
    else this.distrusted.add(key);
    const cause = t.cause ?? "recovered";
    const k = `${s.workerId}|${t.to}|${cause}`;
    this.#transitionCounts.set(k, (this.#transitionCounts.get(k) ?? 0) + 1);
    this.transitions.push({ to: t.to, cause, workerId: s.workerId });
    if (this.transitions.length > 100) this.transitions.shift();
    const fields = {
      worker_id: String(s.workerId),
      dp_rank: s.dpRank,
      from: t.from,
      to: t.to,
      cause: t.cause ?? null,
      evidence: t.evidence,
    };
    const line = `cache truth: worker ${s.workerId} dp rank ${s.dpRank} ${t.from} -> ${t.to}${t.cause !== undefined ? ` (cause: ${t.cause})` : ""}: ${t.evidence}${t.to === "exact" ? "" : "; routed from the router's own decisions until its answers agree again"}`;
    if (t.to === "exact") this.#o.log.info(line, fields);
    else this.#o.log.warn(line, fields);
  }
}

const STATES: readonly TruthState[] = ["exact", "degraded", "blind"];
