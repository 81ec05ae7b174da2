/**
 * The proxy's hook for the cache check (src/fleet/cache-truth): the body sent with usage asked
 * for (usage-injection.ts), and each 2xx answer's usage read on its way to the client and handed,
 * with what the router predicted for it, to the tracker. It decides nothing about routing.
 */
import type { DpRank, WorkerId } from "../../core/ids.ts";
import type { RouteDecision } from "../../router/index.ts";
import type { AnswerInput } from "../../fleet/cache-truth/tracker.ts";
import {
  prepareBody,
  tappedReader,
  UsageTap,
  type ParsedStreamOptions,
  type PreparedBody,
  type TapReader,
} from "./usage-injection.ts";

/** What the proxy needs of the tracker. */
export interface CacheCheck {
  readonly blockSize: number;
  answer(workerId: WorkerId, dpRank: DpRank, facts: AnswerInput): void;
  /** Leading blocks of these prompt hashes the index holds for the rank now. */
  indexedBlocks(hashes: BigUint64Array, workerId: WorkerId, dpRank: DpRank): number;
  /** Removal events (removed or cleared) heard from the rank so far: read when it is chosen. */
  removalsSeen(workerId: WorkerId, dpRank: DpRank): number;
}

/** The body for the engine: usage asked for where it can be; undefined: this request is not checked. */
export function checkedBody(
  body: Uint8Array,
  stream: boolean,
  skip: boolean,
  streamOptions?: ParsedStreamOptions,
): PreparedBody | undefined {
  if (skip) return undefined;
  const p = prepareBody(body, stream, streamOptions);
  return p.checked ? p : undefined;
}

/**
 * The answer's first chunk and reader, through a tap that (for an injected stream) takes the
 * usage event out and, at the end, reports the usage against the decision's prediction. The
 * engine's output count of a usage taken out goes to `engineTokens` (the settlement), since the
 * router's own token counter, downstream of the tap, no longer sees it.
 */
export function watchAnswer(
  check: CacheCheck,
  decision: RouteDecision,
  routerTokens: number,
  hashes: BigUint64Array,
  prepared: PreparedBody,
  sse: boolean,
  first: Uint8Array | undefined,
  reader: TapReader,
  engineTokens: (completionTokens: number) => void = () => {},
  removalsAtRoute?: number,
): { first: Uint8Array | undefined; reader: TapReader } {
  const facts = decision.check;
  const tap = new UsageTap(prepared.strip && sse);
  return tappedReader(first, reader, tap, (u) => {
    if (u === undefined) return;
    if (tap.strip && u.completionTokens !== undefined) engineTokens(u.completionTokens);
    if (facts === undefined) return;
    check.answer(decision.worker.workerId, decision.worker.dpRank, {
      routerTokens,
      predictedBlocks: facts.indexBlocks,
      inFlightBlocks: facts.inFlightBlocks,
      routedBlocks: facts.routedBlocks,
      removalsAtRoute,
      indexBlocksNow: () =>
        check.indexedBlocks(hashes, decision.worker.workerId, decision.worker.dpRank),
      blockSize: check.blockSize,
      promptTokens: u.promptTokens,
      cachedTokens: u.cachedTokens,
    });
  });
}
