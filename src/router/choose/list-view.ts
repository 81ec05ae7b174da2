/**
 * What candidates.ts needs to know about one endpoint list, resolved once per list instead of
 * once per endpoint per request: each endpoint's tracker slot (valid while the tracker's slot
 * set is unchanged, `LoadTracker.slotsVersion`) and each key's position in the list. The list
 * is reused by every request until membership changes; at 1,024 ranks a string-keyed lookup
 * per endpoint per request was a tenth of a decision.
 *
 * With the positions, a request's overlaps (a Map holding only the ranks that match, usually a
 * few) become arrays by position in O(matching ranks) instead of one Map lookup per endpoint.
 */
import type { WorkerKey } from "../../core/ids.ts";
import type { OverlapScores } from "../../core/overlap.ts";
import type { ActiveSequences } from "../books/active-sequences.ts";
import type { LoadTracker } from "../books/load-tracker.ts";
import type { Endpoint } from "./types.ts";

export interface ListView {
  readonly endpoints: readonly Endpoint[];
  readonly tracker: LoadTracker;
  readonly version: number;
  /** Tracker slot per position (undefined: not tracked). */
  readonly seqs: readonly (ActiveSequences | undefined)[];
  /** Position per key; undefined when a key is listed twice (then overlaps are looked up per endpoint). */
  readonly positionOf: ReadonlyMap<WorkerKey, number> | undefined;
  /** overlapsByPosition's scratch, sized to the list and refilled by each call. */
  readonly scores: Float64Array;
  readonly treeSizes: Float64Array;
}

const views = new WeakMap<readonly Endpoint[], ListView>();

export function listViewOf(endpoints: readonly Endpoint[], tracker: LoadTracker): ListView {
  const cached = views.get(endpoints);
  if (cached !== undefined && cached.tracker === tracker && cached.version === tracker.slotsVersion)
    return cached;
  const seqs = endpoints.map((e) => tracker.slotOf(e.key));
  const view: ListView = {
    endpoints,
    tracker,
    version: tracker.slotsVersion,
    seqs,
    positionOf: cached?.positionOf ?? positionsOf(endpoints),
    scores: cached?.scores ?? new Float64Array(endpoints.length),
    treeSizes: cached?.treeSizes ?? new Float64Array(endpoints.length),
  };
  views.set(endpoints, view);
  return view;
}

function positionsOf(endpoints: readonly Endpoint[]): Map<WorkerKey, number> | undefined {
  const m = new Map<WorkerKey, number>();
  for (let i = 0; i < endpoints.length; i++) {
    if (m.has(endpoints[i]!.key)) return undefined;
    m.set(endpoints[i]!.key, i);
  }
  return m;
}

/**
 * The request's overlap scores and tree sizes by position in the list (0 where absent). The
 * arrays are the view's scratch: valid until the next call for this list.
 */
export function overlapsByPosition(
  view: ListView,
  overlaps: OverlapScores,
): { scores: Float64Array; treeSizes: Float64Array } {
  const { scores, treeSizes, positionOf, endpoints } = view;
  scores.fill(0);
  treeSizes.fill(0);
  if (positionOf === undefined) {
    for (let i = 0; i < endpoints.length; i++) {
      const key = endpoints[i]!.key;
      scores[i] = overlaps.scores.get(key) ?? 0;
      treeSizes[i] = overlaps.treeSizes.get(key) ?? 0;
    }
  } else {
    for (const [key, v] of overlaps.scores) {
      const i = positionOf.get(key);
      if (i !== undefined) scores[i] = v;
    }
    for (const [key, v] of overlaps.treeSizes) {
      const i = positionOf.get(key);
      if (i !== undefined) treeSizes[i] = v;
    }
  }
  return view;
}
