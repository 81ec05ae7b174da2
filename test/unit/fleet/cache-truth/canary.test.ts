import { describe, expect, test } from "bun:test";
import {
  CANARY_TOKENS,
  runCanary,
  type CanaryDeps,
  type CanaryUsage,
} from "../../../../src/fleet/cache-truth/canary.ts";

/** An engine and an index as the canary sees them: what each send reports, what the index holds after the first. */
function deps(o: {
  engineBs?: number;
  indexed?: number;
  events?: number;
  promptTokens?: number;
}): CanaryDeps & { sends: number } {
  let t = 0;
  let sends = 0;
  let events = 0;
  const engineBs = o.engineBs ?? 16;
  const d = {
    blockSize: 16,
    get sends() {
      return sends;
    },
    complete: async (): Promise<CanaryUsage> => {
      sends++;
      if (sends === 1) events += o.events ?? 1;
      const cached = sends === 1 ? 0 : Math.floor((CANARY_TOKENS - 1) / engineBs) * engineBs;
      return { promptTokens: o.promptTokens ?? CANARY_TOKENS, cachedTokens: cached };
    },
    indexedBlocks: () => (sends === 0 ? 0 : (o.indexed ?? 16)),
    eventsSeen: () => events,
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
  test("another prompt length for the same ids: template_or_tokenizer", async () => {
    expect(await runCanary(deps({ promptTokens: 260 }), target)).toMatchObject({
      ok: false,
      cause: "template_or_tokenizer",
    });
  });
});
