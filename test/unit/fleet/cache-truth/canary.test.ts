import { describe, expect, test } from "bun:test";
import {
  canaryTokens,
  runCanary,
  type CanaryDeps,
  type CanaryUsage,
} from "../../../../src/fleet/cache-truth/canary.ts";

/** An engine and an index as the canary sees them: what each send reports, what the index holds after the first. */
function deps(o: {
  routerBs?: number;
  engineBs?: number;
  indexed?: number;
  events?: number;
  /** Tries whose blocks the engine evicts between the sends (with a removal event): cached 0. */
  evictedTries?: number;
  /** The rank's index restore runs until this time (ms). */
  restoringUntil?: number;
  /** The engine reports no cached tokens, evicting nothing (its count is false). */
  reportsNoHits?: boolean;
  promptTokens?: number;
  /** The engine's answers carry no usage at all (not vLLM's or SGLang's contract). */
  noUsage?: boolean;
  /** Cached tokens left out of the usage: always (vLLM without --enable-prompt-tokens-details), or when 0 (vLLM with it). */
  omitsCached?: "always" | "zero";
  /** The tracker has seen this rank report cached tokens in an answer before. */
  speaksCached?: boolean;
}): CanaryDeps & { sends: number; prompts: number[] } {
  let t = 0;
  let sends = 0;
  let events = 0;
  let removals = 0;
  const routerBs = o.routerBs ?? 16;
  const engineBs = o.engineBs ?? routerBs;
  const prompts: number[] = [];
  const d = {
    blockSize: routerBs,
    get sends() {
      return sends;
    },
    prompts,
    complete: async (
      _url: string,
      _rank: number,
      prompt: readonly number[],
    ): Promise<CanaryUsage | undefined> => {
      sends++;
      prompts.push(prompt.length);
      const first = sends % 2 === 1;
      if (sends === 1) events += o.events ?? 1;
      const evicted = Math.ceil(sends / 2) <= (o.evictedTries ?? 0);
      if (first && evicted) removals++;
      // As vLLM: whole blocks only, and a prompt cached whole recomputes its last token.
      const cached =
        first || evicted || o.reportsNoHits === true
          ? 0
          : Math.floor((prompt.length - 1) / engineBs) * engineBs;
      if (o.noUsage === true) return undefined;
      const omitted = o.omitsCached === "always" || (o.omitsCached === "zero" && cached === 0);
      return {
        promptTokens: o.promptTokens ?? prompt.length,
        cachedTokens: omitted ? undefined : cached,
      };
    },
    indexedBlocks: (tokens: Uint32Array) =>
      sends === 0 ? 0 : (o.indexed ?? Math.floor(tokens.length / routerBs)),
    eventsSeen: () => events,
    removalsSeen: () => removals,
    speaksCached: () => o.speaksCached === true,
    restoring: () => t < (o.restoringUntil ?? 0),
    sleep: async (ms: number) => {
      t += ms;
    },
    now: () => t,
    random: () => 0.25,
  };
  return d;
}
const target = { workerId: 7n, url: "http://e:1", dpRank: 0 };

describe("the canary", () => {
  test("a true engine: passes, two sends", async () => {
    const d = deps({});
    expect(await runCanary(d, target)).toMatchObject({ ok: true });
    expect(d.sends).toBe(2);
  });
  test("another block size: named from the cached tokens of a prompt cached whole", async () => {
    const r = await runCanary(deps({ engineBs: 32, indexed: 0 }), target);
    expect(r).toMatchObject({ ok: false, cause: "block_size" });
    expect(r.evidence).toContain("whole blocks of 32");
  });
  test("events come but do not match the router's hashes: block_hashes; with an adapter: lora_salt", async () => {
    expect(await runCanary(deps({ indexed: 0 }), target)).toMatchObject({
      ok: false,
      cause: "block_hashes",
    });
    expect(
      await runCanary(deps({ indexed: 0 }), { ...target, model: "a", loraName: "a" }),
    ).toMatchObject({ ok: false, cause: "lora_salt" });
  });
  test("no event at all within the wait: no_events", async () => {
    expect(await runCanary(deps({ indexed: 0, events: 0 }), target)).toMatchObject({
      ok: false,
      cause: "no_events",
    });
  });
  test("its length covers two whole blocks and a token at any block size, 256 at least", () => {
    expect(canaryTokens(16)).toBe(256);
    expect(canaryTokens(128)).toBe(257);
    expect(canaryTokens(512)).toBe(1025);
  });
  test("at 512-token blocks: two blocks checked; a true engine passes, another hash seed is found", async () => {
    const ok = deps({ routerBs: 512 });
    const r = await runCanary(ok, target);
    expect(r).toMatchObject({ ok: true });
    expect(r.evidence).toContain("2 blocks indexed");
    expect(r.evidence).toContain("1024 cached tokens");
    expect(ok.prompts).toEqual([1025, 1025]);
    // Another hash seed: the engine's events come, none is under the router's hashes.
    expect(await runCanary(deps({ routerBs: 512, indexed: 0 }), target)).toMatchObject({
      ok: false,
      cause: "block_hashes",
    });
  });
  test("an engine that evicts the canary's blocks between the sends: tried again, inconclusive after every try spoiled", async () => {
    const once = deps({ evictedTries: 1 });
    expect(await runCanary(once, target)).toMatchObject({ ok: true });
    expect(once.sends).toBe(4);
    const always = deps({ evictedTries: 99 });
    const r = await runCanary(always, target);
    expect(r).toMatchObject({ ok: true, inconclusive: true });
    expect(r.evidence).toContain("the engine evicted during each of 3 tries");
    expect(always.sends).toBe(6);
    // Cached tokens that are false, with no eviction: found at the first try.
    const noHits = deps({ reportsNoHits: true });
    expect(await runCanary(noHits, target)).toMatchObject({ ok: false, cause: "cached_tokens" });
    expect(noHits.sends).toBe(2);
    // A view that is false, with no eviction: found at the first try.
    const falseView = deps({ indexed: 0 });
    expect(await runCanary(falseView, target)).toMatchObject({ ok: false, cause: "block_hashes" });
    expect(falseView.sends).toBe(2);
  });
  test("waits for the rank's index restore before its first send; inconclusive when it does not end", async () => {
    const d = deps({ restoringUntil: 500 });
    expect(await runCanary(d, target)).toMatchObject({ ok: true });
    expect(d.now()).toBeGreaterThanOrEqual(500);
    expect(d.sends).toBe(2);
    const stuck = deps({ restoringUntil: Infinity });
    const r = await runCanary(stuck, target);
    expect(r).toMatchObject({ ok: true, inconclusive: true });
    expect(stuck.sends).toBe(0);
  });
  test("an answer with no usage at all: inconclusive at the first send, whatever the events (nothing says the engine ran the prompt)", async () => {
    const d = deps({ noUsage: true, indexed: 0, events: 0 });
    const r = await runCanary(d, target);
    expect(r).toMatchObject({ ok: true, inconclusive: true });
    expect(r.evidence).toContain("carries no usage");
    expect(d.sends).toBe(1);
  });
  test("no cached_tokens in the usage (vLLM without --enable-prompt-tokens-details): no evidence, the events still judged", async () => {
    // A true engine that never writes the count: passes on its events, the count not judged as 0.
    const quiet = await runCanary(deps({ omitsCached: "always" }), target);
    expect(quiet).toMatchObject({ ok: true });
    expect(quiet.inconclusive).toBeUndefined();
    expect(quiet.evidence).toContain("cached tokens not checked");
    // Its events are still checked: none at all, or under other hashes.
    expect(
      await runCanary(deps({ omitsCached: "always", indexed: 0, events: 0 }), target),
    ).toMatchObject({ ok: false, cause: "no_events" });
    expect(await runCanary(deps({ omitsCached: "always", indexed: 0 }), target)).toMatchObject({
      ok: false,
      cause: "block_hashes",
    });
    // vLLM with the flag leaves a 0 out: a true engine passes with its count checked.
    const zero = await runCanary(deps({ omitsCached: "zero" }), target);
    expect(zero).toMatchObject({ ok: true });
    expect(zero.evidence).toContain("240 cached tokens");
    // A count left out where the rank has reported counts before is 0: a false count is found.
    expect(
      await runCanary(
        deps({ omitsCached: "zero", reportsNoHits: true, speaksCached: true }),
        target,
      ),
    ).toMatchObject({ ok: false, cause: "cached_tokens" });
    // ...but not from a rank that never did (it may only be running without the flag).
    expect(
      await runCanary(deps({ omitsCached: "zero", reportsNoHits: true }), target),
    ).toMatchObject({ ok: true });
  });
  test("another prompt length for the same ids: template_or_tokenizer", async () => {
    expect(await runCanary(deps({ promptTokens: 260 }), target)).toMatchObject({
      ok: false,
      cause: "template_or_tokenizer",
    });
  });
});
