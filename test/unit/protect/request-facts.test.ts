/** What a request asks (output budget), what an answer reports (usage), and the tenant's band and models. */
import { describe, expect, test } from "bun:test";
import { outputTokensAsked } from "../../../src/protect/output-budget.ts";
import { effectivePriority, mayUseModel, type Tenant } from "../../../src/protect/tenant.ts";
import { UsageSniffer } from "../../../src/protect/usage-sniffer.ts";
import { setRequestTenant, tenantOf } from "../../../src/protect/request-tenant.ts";

const enc = new TextEncoder();

describe("outputTokensAsked", () => {
  test("each API's own field, times n", () => {
    expect(outputTokensAsked("/v1/completions", { max_tokens: 20 })).toBe(20);
    expect(outputTokensAsked("/v1/completions", { max_tokens: 20, n: 3 })).toBe(60);
    expect(
      outputTokensAsked("/v1/chat/completions", { max_completion_tokens: 7, max_tokens: 99 }),
    ).toBe(7);
    expect(outputTokensAsked("/v1/chat/completions", { max_tokens: 9 })).toBe(9);
    expect(outputTokensAsked("/v1/responses", { max_output_tokens: 11 })).toBe(11);
    expect(outputTokensAsked("/generate", { sampling_params: { max_new_tokens: 5 } })).toBe(5);
    expect(outputTokensAsked("/v1/embeddings", { max_tokens: 50 })).toBe(0);
    expect(outputTokensAsked("/v1/completions", {})).toBeUndefined();
    expect(outputTokensAsked("/v1/completions", { max_tokens: "many" })).toBeUndefined();
  });
});

describe("UsageSniffer", () => {
  test("reads prompt_tokens too (not prompt_tokens_details), and no count from inside a generated string", () => {
    const s = new UsageSniffer();
    const text =
      '{"choices":[{"text":"say \\"prompt_tokens\\": 1"}],"usage":{"prompt_tokens":512,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens":2}}';
    for (let cut = 0; cut <= text.length; cut += 7) {
      const t = new UsageSniffer();
      t.push(enc.encode(text.slice(0, cut)));
      t.push(enc.encode(text.slice(cut)));
      expect(t.promptTokens).toBe(512);
    }
    s.push(enc.encode('{"object":"list","data":[],"usage":{"prompt_tokens":7,"total_tokens":7}}'));
    expect(s.promptTokens).toBe(7);
    expect(s.completionTokens).toBeUndefined();
  });

  test("reads completion_tokens from a whole answer and from a stream's last usage chunk", () => {
    const s = new UsageSniffer();
    s.push(
      enc.encode(
        '{"id":"x","usage":{"prompt_tokens":12,"completion_tokens": 34,"total_tokens":46}}',
      ),
    );
    expect(s.completionTokens).toBe(34);
    const t = new UsageSniffer();
    t.push(enc.encode('data: {"usage":{"completion_tokens":1}}\n\n'));
    t.push(
      enc.encode(
        'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":8}}\n\ndata: [DONE]\n\n',
      ),
    );
    expect(t.completionTokens).toBe(8);
  });

  test("a field or number split across chunks is still read; none: undefined", () => {
    const text = '{"usage":{"completion_tokens":  1234}}';
    for (let cut = 1; cut < text.length; cut++) {
      const s = new UsageSniffer();
      s.push(enc.encode(text.slice(0, cut)));
      s.push(enc.encode(text.slice(cut)));
      expect(s.completionTokens).toBe(1234);
    }
    const none = new UsageSniffer();
    none.push(enc.encode('{"completion":"tokens"}'));
    expect(none.completionTokens).toBeUndefined();
  });
});

describe("tenant helpers", () => {
  const t = (o: Partial<Tenant>): Tenant => ({
    name: "t",
    limits: {},
    weight: 1,
    defaultOutputTokens: 16,
    ...o,
  });

  test("a request's priority never goes below its tenant's band", () => {
    expect(effectivePriority(t({ priority: 5 }), 0)).toBe(5);
    expect(effectivePriority(t({ priority: 5 }), 9)).toBe(9);
    expect(effectivePriority(t({ priority: 5 }), undefined)).toBe(5);
    expect(effectivePriority(t({}), -3)).toBe(-3);
  });

  test("models: exact names and * patterns; no list means every model", () => {
    const m = t({ models: ["llama-3", "team-a-*", "*-chat"] });
    expect(mayUseModel(m, "llama-3")).toBe(true);
    expect(mayUseModel(m, "llama-3.1")).toBe(false);
    expect(mayUseModel(m, "team-a-lora")).toBe(true);
    expect(mayUseModel(m, "qwen-chat")).toBe(true);
    expect(mayUseModel(m, "team-b-lora")).toBe(false);
    expect(mayUseModel(t({}), "anything")).toBe(true);
  });

  test("tenantOf gives the tenant's name only for a request that was authenticated", () => {
    const req = new Request("http://r/v1/completions");
    expect(tenantOf(req)).toBeUndefined();
    setRequestTenant(req, t({ name: "team-a" }));
    expect(tenantOf(req)).toBe("team-a");
    expect(tenantOf(new Request("http://r/v1/completions"))).toBeUndefined();
  });
});
