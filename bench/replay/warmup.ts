/**
 * The warm-up before each policy's replay: a few dozen requests per router whose prompts share
 * nothing with the trace (or with one another), sent a few at a time and awaited before the
 * replay's clock starts. Nothing about them is measured.
 *
 * Why: every policy runs on a fresh cluster, and its first second is unlike the rest of the run.
 * Bun compiles the router's and engines' hot paths as they first run, so those first tokens come
 * late whatever the policy chose. kv's predictor also starts from its prior speed and learns the
 * engines' real one from these first tokens. In a 300-request cell, that start was most of the
 * predictor's error. On gen-rag with one router, the first 50 requests had p90 1.37, and the last
 * 200 had p90 0.15 (bench/replay/findings.md, "Warm clusters"). A router in service has long been past
 * both. Every policy gets the same warm-up, so the comparison stays fair.
 *
 * The prompts take the trace's own lengths, the first `perRouter` of them. The predictor's line is
 * then fitted over the token counts the replay will send. Their tokens are drawn at random from a
 * fixed seed, so no block of theirs matches one of the trace's. The engines keep those blocks as
 * their oldest, and evict them first.
 */
import { mulberry32 } from "../../src/core/mulberry32.ts";
import { DEFAULT_MODEL, type PromptFormat } from "./replay.ts";
import { tokensAsText, type TraceRequest } from "./trace.ts";

/** Requests per router when a cell does not say: one full fleet window of the predictor's (FLEET_WINDOW). */
export const DEFAULT_WARMUP_PER_ROUTER = 48;
/** In flight per router: some warm-up requests queue behind others, as the replay's will. */
const IN_FLIGHT = 4;
/** A warm-up request that takes longer than this failed (the cluster is not well). */
const TIMEOUT_MS = 30_000;

export interface WarmUpOptions {
  readonly routerUrls: readonly string[];
  /** Requests each router is sent; 0: no warm-up. */
  readonly perRouter: number;
  readonly promptFormat: PromptFormat;
  readonly model?: string;
  readonly seed: number;
}

/**
 * Warm every router, all at once. It resolves once every warm-up request has finished, and it
 * throws if any of them failed. A replay on a cluster that cannot answer these would measure
 * nothing useful.
 */
export async function warmUp(trace: readonly TraceRequest[], o: WarmUpOptions): Promise<void> {
  if (!(Number.isInteger(o.perRouter) && o.perRouter >= 0))
    throw new Error(`warm-up requests per router must be a whole number >= 0, got ${o.perRouter}`);
  if (o.perRouter === 0 || trace.length === 0) return;
  const rand = mulberry32(o.seed ^ 0x5eed_a11);
  const lengths = Array.from(
    { length: o.perRouter },
    (_, i) => trace[i % trace.length]!.inputLength,
  );
  await Promise.all(
    o.routerUrls.map(async (url) => {
      // Prompts are drawn here, in order, so the same seed gives every run the same warm-up.
      const prompts = lengths.map((n) => warmUpPrompt(n, rand, o.promptFormat));
      let next = 0;
      const lane = async () => {
        while (next < prompts.length)
          await sendWarmUp(url, prompts[next++]!, o.model ?? DEFAULT_MODEL);
      };
      await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, prompts.length) }, lane));
    }),
  );
}

/** `n` random tokens (ids below 32,000, as the trace's), written as the replay writes a prompt in `format`. */
export function warmUpPrompt(
  n: number,
  rand: () => number,
  format: PromptFormat,
): number[] | string {
  const tokens = Array.from({ length: n }, () => Math.floor(rand() * 32000));
  return format === "text" ? tokensAsText(tokens) : tokens;
}

async function sendWarmUp(
  routerUrl: string,
  prompt: number[] | string,
  model: string,
): Promise<void> {
  const res = await fetch(`${routerUrl}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, prompt, max_tokens: 1, stream: true }),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  // Read the stream through: the first token is what the router learns from, the end frees the load.
  const text = await res.text();
  if (!res.ok)
    throw new Error(`warm-up request to ${routerUrl}: HTTP ${res.status}: ${text.slice(0, 200)}`);
}
