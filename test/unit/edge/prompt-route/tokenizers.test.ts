import { describe, expect, test } from "bun:test";
import { RouterTokenizers, TOKENIZER_PROBE } from "../../../../src/edge/prompt-route/tokenizers.ts";
import type { EngineTokenizer } from "../../../../src/tokens/index.ts";

/** A stand-in tokenizer: one id per character code plus `shift`. */
function fakeTokenizer(source: string, shift = 0): EngineTokenizer {
  const ids = (t: string) => Uint32Array.from([...t].map((c) => c.codePointAt(0)! + shift));
  return {
    source,
    implementation: "fake",
    segmentCache: false,
    encodeText: async (t) => ids(t),
    renderChat: () => "",
    encodeChat: async () => new Uint32Array(0),
    decode: async () => "",
  };
}

function setup(answer: (body: { model?: string; prompt: string }) => Response | Promise<Response>) {
  const loads: string[] = [];
  const t = new RouterTokenizers({
    load: async (dir) => (loads.push(dir), fakeTokenizer(dir, dir === "/other" ? 1 : 0)),
    parentOf: (m) => (m === "a-lora" ? "a" : undefined),
    fetch: async (_url, init) => answer(JSON.parse(String(init.body))),
    timeoutMs: 1000,
  });
  return { t, loads };
}

const ids = (s: string) => [...s].map((c) => c.codePointAt(0)!);

describe("RouterTokenizers", () => {
  test("a model's own tokenizer, else its base model's (adapters), else the default; each directory loaded once", async () => {
    const { t, loads } = setup(() => new Response("", { status: 404 }));
    expect(t.forModel("a")).toBeUndefined();
    await t.add("a", "/tok-a");
    await t.add("b", "/tok-a");
    await t.add(undefined, "/tok-default");
    expect(loads).toEqual(["/tok-a", "/tok-default"]);
    expect(t.forModel("a")!.source).toBe("/tok-a");
    expect(t.forModel("a-lora")!.source).toBe("/tok-a");
    expect(t.forModel("zzz")!.source).toBe("/tok-default");
    expect(t.forModel(undefined)!.source).toBe("/tok-default");
    expect(t.size).toBe(3);
  });

  test("the probe: same tokens = match (and max_model_len learned), different = mismatch naming the position, no /tokenize = unchecked", async () => {
    let reply: (b: { prompt: string }) => Response = (b) =>
      Response.json({ count: 1, max_model_len: 4096, tokens: ids(b.prompt) });
    const { t } = setup((b) => reply(b));
    await t.add("m", "/tok");
    expect(await t.check(1n, "http://w", "m")).toEqual({ status: "match" });
    expect(t.maxModelLen("m")).toBe(4096);
    reply = (b) => Response.json({ tokens: [...ids(b.prompt).slice(0, 3), 1] });
    const bad = await t.check(2n, "http://w", "m");
    expect(bad?.status).toBe("mismatch");
    expect(bad?.status === "mismatch" && bad.detail).toContain("at token 3 of the probe");
    reply = () => new Response("no", { status: 404 });
    expect((await t.check(3n, "http://w", "m"))?.status).toBe("unchecked");
    expect(t.checkOf(2n)?.status).toBe("mismatch");
    t.forget(2n);
    expect(t.checkOf(2n)).toBeUndefined();
    // No tokenizer for the model: nothing to compare, nothing recorded.
    expect(await t.check(4n, "http://w", "other-model")).toBeUndefined();
    expect(TOKENIZER_PROBE.length).toBeGreaterThan(20);
  });
});
