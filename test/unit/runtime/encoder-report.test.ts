/**
 * The router's report of a tokenizer's encoder choice (src/runtime/compose/encoder-report.ts):
 * a warning naming the first differing input when the differential check sent the model to the
 * library, an info line when the check passed, and one `switchyard_tokenizer_encoder` series
 * naming the directory, the encoder and the reason.
 */
import { describe, expect, test } from "bun:test";
import type { Logger } from "../../../src/core/logger.ts";
import { RouterMetrics } from "../../../src/observe/names.ts";
import { reportEncoderChoice } from "../../../src/runtime/compose/encoder-report.ts";
import type { EncoderChoice, EngineTokenizer } from "../../../src/tokens/index.ts";

function recorder(): {
  log: Logger;
  lines: { level: string; msg: string; fields?: Record<string, unknown> }[];
} {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    void lines.push({ level, msg, fields });
  return {
    log: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") },
    lines,
  };
}

const tokenizer = (encoderChoice: EncoderChoice | undefined) =>
  ({ source: "/models/m", encoderChoice }) as unknown as EngineTokenizer;

describe("reportEncoderChoice", () => {
  test("a difference: a warning with the input and both ids, and the metric's reason", () => {
    const { log, lines } = recorder();
    const metrics = new RouterMetrics();
    const choice: EncoderChoice = {
      encoder: "library",
      reason: "the byte-level BPE differs from the library on differential input 7",
      guard: {
        agree: false,
        inputs: 8,
        tokens: 90,
        difference: {
          input: "👩‍👩‍👧‍👦",
          inputIndex: 7,
          addSpecialTokens: false,
          at: 2,
          bpe: [5],
          library: [6],
        },
      },
    };
    reportEncoderChoice(tokenizer(choice), metrics, log);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.level).toBe("warn");
    expect(lines[0]!.msg).toContain("/models/m");
    expect(lines[0]!.fields).toEqual({
      first_difference: "👩‍👩‍👧‍👦",
      input_index: 7,
      add_special_tokens: false,
      bpe_ids: [5],
      library_ids: [6],
    });
    expect(metrics.tokenizerEncoder.get(["/models/m", "library", choice.reason!])).toBe(1);
    expect(metrics.render()).toContain(
      'switchyard_tokenizer_encoder{tokenizer="/models/m",encoder="library",reason="the byte-level BPE differs',
    );
  });

  test("the check passed: an info line, the BPE with an empty reason", () => {
    const { log, lines } = recorder();
    const metrics = new RouterMetrics();
    reportEncoderChoice(
      tokenizer({
        encoder: "byte-level-bpe",
        guard: { agree: true, inputs: 1063, tokens: 218_308 },
      }),
      metrics,
      log,
    );
    expect(lines.map((l) => l.level)).toEqual(["info"]);
    expect(lines[0]!.msg).toContain("1063 inputs, 218308 tokens");
    expect(metrics.tokenizerEncoder.get(["/models/m", "byte-level-bpe", ""])).toBe(1);
  });

  test("forced or not taken: no line of its own, the metric still says which and why", () => {
    const { log, lines } = recorder();
    const metrics = new RouterMetrics();
    reportEncoderChoice(
      tokenizer({
        encoder: "library",
        reason: "the byte-level BPE does not take this tokenizer.json: byte_fallback",
      }),
      metrics,
      log,
    );
    expect(lines).toEqual([]);
    expect(
      metrics.tokenizerEncoder.get([
        "/models/m",
        "library",
        "the byte-level BPE does not take this tokenizer.json: byte_fallback",
      ]),
    ).toBe(1);
  });
});
