/**
 * The canary: a known prompt sent twice straight to one engine rank (never through the proxy, so
 * no tenant is billed and no request metric moves; 2 x 256 prompt tokens and 2 output tokens).
 * After the first send, the blocks the engine published must be in the router's index under the
 * hashes the router computes for that prompt; the second send must report the cached tokens vLLM
 * reports for a prompt cached whole (answer-check.ts): floor((256 - 1) / block size) blocks. That
 * checks the block size, the hash algorithm and seed, the LoRA salt (with an adapter) and that the
 * events reach this router. Each run's prompt starts with a fresh nonce, so it is never cached yet.
 * Runtime-free: the engine call, the index, the clock and the sleep come in.
 *
 * What the engine does not say is no evidence. vLLM always answers a completion with `usage`, but
 * writes `usage.prompt_tokens_details` only with `--enable-prompt-tokens-details` and a count that is
 * not 0 (`UsageInfo.prompt_tokens_details: PromptTokenUsageInfo | None = None` in
 * vllm/entrypoints/openai/engine/protocol.py at d7e5252; `if self.enable_prompt_tokens_details and
 * last_final_res and last_final_res.num_cached_tokens` in
 * vllm/entrypoints/openai/completion/serving.py at cc139d8). So a missing `cached_tokens` is 0 only
 * from a source that has reported cached tokens before; otherwise the cached tokens are not judged
 * and the events still are. An answer with no `usage` at all does not even say the engine ran the
 * prompt, so missing events prove nothing either: the canary is inconclusive and changes no state.
 */
import type { DpRank, WorkerId } from "../../core/ids.ts";
import { expectedCachedTokens } from "./answer-check.ts";
import type { TruthCause } from "./source-state.ts";

/** The canary's length where the block size asks no more (16-token blocks: 15 whole blocks checked). */
export const CANARY_MIN_TOKENS = 256;

/**
 * The canary's length at a block size: at least two whole blocks must be published after the first
 * send and reported cached by the second, and vLLM caps a whole-prompt hit at length - 1 tokens
 * (answer-check.ts), so 2 x block size + 1 at least. A prompt shorter than one block would publish
 * nothing and pass while checking nothing. Large blocks cost more: 1,025 tokens a send at 512.
 */
export function canaryTokens(blockSize: number): number {
  return Math.max(CANARY_MIN_TOKENS, 2 * blockSize + 1);
}
/**
 * Tries before a canary the engine's evictions spoiled each time is given up as inconclusive: a
 * cache that evicts while the canary runs (a full cache under load, after a restart) may drop its
 * blocks between the sends, which proves nothing about the router's view.
 */
export const CANARY_TRIES = 3;
/**
 * How long the first send's events may take to reach the index: a rank's live events wait while
 * its registration restore runs, which a loaded machine can make take seconds.
 */
export const CANARY_EVENT_WAIT_MS = 8_000;
/**
 * How long the canary waits for the rank's index restore (registration, restart) to end before its
 * first send: the rank's live events are held until it ends, so the event wait would measure the
 * restore (seconds on a loaded machine with several routers restoring at once), not the events.
 */
export const CANARY_RESTORE_WAIT_MS = 30_000;
/**
 * How long a canary whose second send served less than expected waits for removal events: the
 * engine published them when it evicted, before it served the send, but they may be batched behind
 * the answer.
 */
export const CANARY_REMOVAL_WAIT_MS = 2_000;

/** What an engine's answer says of its prompt (its `usage`). */
export interface CanaryUsage {
  readonly promptTokens: number;
  readonly cachedTokens: number | undefined;
}

export interface CanaryDeps {
  readonly blockSize: number;
  /** One completion of these token ids on the rank, straight to the engine; its usage. Throws on failure. */
  readonly complete: (
    url: string,
    dpRank: DpRank,
    prompt: readonly number[],
    model: string | undefined,
  ) => Promise<CanaryUsage | undefined>;
  /** Leading blocks of `tokens` the router's index holds for the rank (hashed as the router hashes them). */
  readonly indexedBlocks: (
    tokens: Uint32Array,
    workerId: WorkerId,
    dpRank: DpRank,
    loraName: string | undefined,
  ) => number;
  /** Live events heard from the rank so far. */
  readonly eventsSeen: (workerId: WorkerId, dpRank: DpRank) => number;
  /** The rank's index is being restored (its live events are held until then); undefined: never. */
  readonly restoring?: (workerId: WorkerId, dpRank: DpRank) => boolean;
  /** Removal events (removed, cleared) heard from the rank so far: it evicted. */
  readonly removalsSeen: (workerId: WorkerId, dpRank: DpRank) => number;
  /** The rank has reported cached tokens in an answer before: a missing count is then 0. Undefined: never. */
  readonly speaksCached?: (workerId: WorkerId, dpRank: DpRank) => boolean;
  readonly sleep: (ms: number) => Promise<void>;
  readonly now: () => number;
  readonly random: () => number;
}

export interface CanaryTarget {
  readonly workerId: WorkerId;
  readonly url: string;
  readonly dpRank: DpRank;
  /** The model to name (undefined: the engine's default). */
  readonly model?: string;
  /** The model is this LoRA adapter: its blocks are salted with its name. */
  readonly loraName?: string;
}

export interface CanaryResult {
  readonly ok: boolean;
  /** Every try was spoiled by the engine's evictions: nothing found either way (`ok` is true). */
  readonly inconclusive?: boolean;
  readonly cause?: TruthCause;
  readonly evidence: string;
}

/** The canary's prompt: a nonce, then a fixed pattern (token ids well inside any vocabulary). */
export function canaryPrompt(nonce: number, length = CANARY_MIN_TOKENS): number[] {
  const out = new Array<number>(length);
  out[0] = 1000 + (nonce % 20_000);
  for (let i = 1; i < length; i++) out[i] = 1000 + ((nonce * 7919 + i * 104_729) % 20_000);
  return out;
}

/** Other block sizes an engine may run with, to name the one whose hit we saw. */
const BLOCK_SIZES = [1, 8, 16, 32, 64, 128, 256, 512];

/**
 * The canary, tried again while the engine evicted during a try that failed (its removal events
 * say so): up to CANARY_TRIES, then inconclusive. A wrong prompt length is not an eviction's doing.
 */
export async function runCanary(d: CanaryDeps, t: CanaryTarget): Promise<CanaryResult> {
  const restoreDeadline = d.now() + CANARY_RESTORE_WAIT_MS;
  while (d.restoring?.(t.workerId, t.dpRank) === true) {
    if (d.now() >= restoreDeadline)
      return {
        ok: true,
        inconclusive: true,
        evidence: `inconclusive: the rank's index restore did not end within ${CANARY_RESTORE_WAIT_MS} ms`,
      };
    await d.sleep(50);
  }
  let last: CanaryResult | undefined;
  for (let i = 0; i < CANARY_TRIES; i++) {
    const removals = d.removalsSeen(t.workerId, t.dpRank);
    last = await canaryOnce(d, t);
    if (last.ok || last.cause === "template_or_tokenizer") return last;
    if (last.cause === "cached_tokens") {
      const deadline = d.now() + CANARY_REMOVAL_WAIT_MS;
      while (d.removalsSeen(t.workerId, t.dpRank) === removals && d.now() < deadline)
        await d.sleep(50);
    }
    if (d.removalsSeen(t.workerId, t.dpRank) === removals) return last;
  }
  return {
    ok: true,
    inconclusive: true,
    evidence: `inconclusive: the engine evicted during each of ${CANARY_TRIES} tries (the last: ${last!.evidence})`,
  };
}

/** An engine whose answers carry no usage: nothing says it ran the prompt (no state changes). */
const NO_USAGE: CanaryResult = {
  ok: true,
  inconclusive: true,
  evidence:
    "inconclusive: the engine's answer carries no usage, so nothing says it ran the prompt; neither its events nor its cached tokens can be judged",
};

async function canaryOnce(d: CanaryDeps, t: CanaryTarget): Promise<CanaryResult> {
  const length = canaryTokens(d.blockSize);
  const prompt = canaryPrompt(Math.floor(d.random() * 1e9), length);
  const tokens = Uint32Array.from(prompt);
  const full = Math.floor(length / d.blockSize);
  const before = d.eventsSeen(t.workerId, t.dpRank);
  const first = await d.complete(t.url, t.dpRank, prompt, t.model);
  if (first === undefined) return NO_USAGE;
  if (first.promptTokens !== length) {
    return {
      ok: false,
      cause: "template_or_tokenizer",
      evidence: `the engine counted ${first.promptTokens} prompt tokens for ${length} token ids`,
    };
  }
  const deadline = d.now() + CANARY_EVENT_WAIT_MS;
  let indexed = d.indexedBlocks(tokens, t.workerId, t.dpRank, t.loraName);
  while (indexed < full && d.now() < deadline) {
    await d.sleep(50);
    indexed = d.indexedBlocks(tokens, t.workerId, t.dpRank, t.loraName);
  }
  const heard = d.eventsSeen(t.workerId, t.dpRank) - before;
  const second = await d.complete(t.url, t.dpRank, prompt, t.model);
  if (second === undefined) return NO_USAGE;
  const expected = expectedCachedTokens(full, length, d.blockSize);
  // The first send's count is 0 (a fresh prompt): an engine that writes it shows it reports them.
  const speaks =
    first.cachedTokens !== undefined || d.speaksCached?.(t.workerId, t.dpRank) === true;
  const cached = second.cachedTokens ?? (speaks ? 0 : undefined);
  if (cached !== undefined && cached !== expected) {
    const other = BLOCK_SIZES.find(
      (b) =>
        b !== d.blockSize &&
        cached > 0 &&
        cached === expectedCachedTokens(Math.floor(length / b), length, b),
    );
    if (other !== undefined)
      return {
        ok: false,
        cause: "block_size",
        evidence: `the engine served ${cached} of ${length} cached tokens, whole blocks of ${other}; the router hashes blocks of ${d.blockSize} (expected ${expected})`,
      };
  }
  if (indexed < full) {
    if (heard === 0)
      return {
        ok: false,
        cause: "no_events",
        evidence: `no event from this rank within ${CANARY_EVENT_WAIT_MS} ms of the first send; the index holds ${indexed} of its ${full} blocks`,
      };
    const cause: TruthCause = t.loraName !== undefined ? "lora_salt" : "block_hashes";
    return {
      ok: false,
      cause,
      evidence: `${heard} events came after the first send, but the index holds ${indexed} of its ${full} blocks under the router's hashes${t.loraName !== undefined ? ` (adapter ${t.loraName}: its salt is not the router's)` : ""}`,
    };
  }
  if (cached === undefined)
    return {
      ok: true,
      evidence: `${full} blocks indexed under the router's hashes; cached tokens not checked: the answer has no prompt_tokens_details.cached_tokens (vLLM writes it only with --enable-prompt-tokens-details, and not when it is 0)${t.loraName !== undefined ? ` (adapter ${t.loraName})` : ""}`,
    };
  if (cached !== expected)
    return {
      ok: false,
      cause: "cached_tokens",
      evidence: `the second send reported ${cached} cached tokens, expected ${expected}`,
    };
  return {
    ok: true,
    evidence: `${full} blocks indexed under the router's hashes, ${cached} cached tokens reported as expected${t.loraName !== undefined ? ` (adapter ${t.loraName})` : ""}`,
  };
}
