/**
 * The streamed answer's first data event marks the end of the prefill: a chat stream's role
 * chunk goes out with the first token (as vLLM's does), not when prefill starts. A fake engine
 * (this module's only collaborator) lets the test hold the request between the two.
 */
import { describe, expect, test } from "bun:test";
import { streamCompletion } from "../../../src/mocker/completion-stream.ts";
import type {
  GenerateRequest,
  GenerateResult,
  MockEngine,
  TokenSink,
} from "../../../src/mocker/engine.ts";

/** An engine that starts the request at once and emits tokens only when the test says so. */
function heldEngine() {
  let sink: TokenSink | undefined;
  let finish!: (r: GenerateResult) => void;
  const engine = {
    generate(_req: GenerateRequest, s: TokenSink): Promise<GenerateResult> {
      sink = s;
      s.start({ dpRank: 0, cachedTokens: 0, promptTokens: 4 });
      return new Promise((resolve) => (finish = resolve));
    },
  } as unknown as MockEngine;
  return {
    engine,
    token: (text: string, i: number) => sink!.token(text, i),
    finish: () =>
      finish({
        dpRank: 0,
        cachedTokens: 0,
        promptTokens: 4,
        completionTokens: 2,
        text: "ab",
        transferredBlocks: 0,
        transferredBytes: 0,
      }),
  };
}

/** Lets every queued task and microtask run, so anything already enqueued would have been read. */
const settle = () => new Promise<void>((r) => setImmediate(r));

async function firstEventsOf(kind: "chat" | "completions") {
  const eng = heldEngine();
  const abort = new AbortController();
  const genReq = { maxTokens: 2, signal: abort.signal } as unknown as GenerateRequest;
  const res = await streamCompletion(
    { engine: eng.engine, workerId: 1n, log: () => {} },
    kind,
    { id: "x", created: 0, model: "m" },
    genReq,
    abort,
    {},
  );
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let readBeforeFirstToken = false;
  const first = reader.read().then((r) => {
    readBeforeFirstToken = !tokenSent;
    return dec.decode(r.value);
  });
  let tokenSent = false;
  await settle();
  // Nothing may be readable while the engine is still prefilling.
  expect(readBeforeFirstToken).toBe(false);
  tokenSent = true;
  eng.token("a", 0);
  const events = [await first];
  eng.token("b", 1);
  eng.finish();
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    events.push(dec.decode(r.value));
  }
  return events
    .join("")
    .split("\n\n")
    .filter((e) => e !== "");
}

describe("streamed answers: the first data event is the first token", () => {
  test("chat: headers at admission, the role chunk only with the first token, right before it", async () => {
    const events = await firstEventsOf("chat");
    expect(events[0]).toContain('"delta":{"role":"assistant","content":""}');
    expect(events[1]).toContain('"content":"a"');
    expect(events.at(-1)).toBe("data: [DONE]");
  });

  test("completions: no role chunk; the first event is the first token", async () => {
    const events = await firstEventsOf("completions");
    expect(events[0]).toContain('"text":"a"');
    expect(events.some((e) => e.includes('"role"'))).toBe(false);
  });
});
