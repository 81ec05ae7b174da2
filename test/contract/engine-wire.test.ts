/**
 * The simulated engine speaks as vLLM (and, where SGLang's clients ask, SGLang) does on every
 * route the community's benchmark clients touch, held against the engines' own source. One real
 * engine process (test/support/run-mocker.ts); every answer is parsed as a client would.
 *
 * vLLM, vllm/entrypoints/serve/utils/api_utils.py at vllm-project/vllm 00a5fdd2:
 *     def should_include_usage(stream_options, enable_force_include_usage):
 *         ...
 *         if stream_options:
 *             include_usage = bool(stream_options.include_usage)
 *             include_continuous_usage = include_usage and bool(
 *                 stream_options.continuous_usage_stats)
 *         else:
 *             include_usage, include_continuous_usage = False, False
 * vllm/entrypoints/openai/engine/protocol.py at d7e52523:
 *     class StreamOptions(OpenAIBaseModel):
 *         include_usage: bool | None = True
 *         continuous_usage_stats: bool | None = False
 * vllm/entrypoints/openai/completion/serving.py (030ea52e) and chat_completion/serving.py
 * (006c49d4), the stream generators:
 *     if include_continuous_usage: ... chunk.usage = UsageInfo(prompt_tokens=...,
 *         completion_tokens=..., total_tokens=...)
 *     if include_usage: ... final_usage_chunk = ...(choices=[], usage=final_usage_info)
 *     (chat) if first_iteration: ... DeltaMessage(role=role, content="") ...
 *         if include_continuous_usage: chunk.usage = UsageInfo(..., completion_tokens=0, ...)
 * The request validator: `if data.get("stream_options") and not data.get("stream"): raise
 * ... "Stream options can only be defined when `stream=True`."`.
 * vllm/entrypoints/serve/engine/protocol.py at f1bf7bd0: `class ModelCard: ... max_model_len:
 * int | None = None`.
 * SGLang, python/sglang/srt/entrypoints/http_server.py at sgl-project/sglang 9c0549b7:
 *     @app.get("/get_server_info")
 *     async def get_server_info():
 *         internal_states = await _global_state.tokenizer_manager.get_internal_state()
 *         return {**dataclasses.asdict(...server_args), **_global_state.scheduler_info,
 *                 "internal_states": internal_states, "version": __version__}
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ROOT, startCommand, stopAll, type Proc } from "../support/processes.ts";

const BLOCK_SIZE = 16;
const KV_BLOCKS = 512;
let engine: Proc | undefined;
let url = "";

beforeAll(async () => {
  engine = await startCommand(
    [
      process.execPath,
      join(ROOT, "test", "support", "run-mocker.ts"),
      "--port",
      "0",
      "--block-size",
      String(BLOCK_SIZE),
      "--kv-blocks",
      String(KV_BLOCKS),
      "--speedup",
      "20",
    ],
    "mocker",
  );
  url = engine.info.url as string;
});

afterAll(async () => {
  await stopAll([engine]);
});

type Kind = "completions" | "chat";
const PATH: Record<Kind, string> = { completions: "/v1/completions", chat: "/v1/chat/completions" };

function body(kind: Kind, extra: Record<string, unknown>): Record<string, unknown> {
  const input =
    kind === "chat"
      ? { messages: [{ role: "user", content: "tell me about routers" }] }
      : { prompt: "tell me about routers" };
  return { model: "switchyard-sim", max_tokens: 5, ...input, ...extra };
}

/** Every `data:` event of a stream before `[DONE]`, parsed; the stream must end with `[DONE]`. */
async function streamed(
  kind: Kind,
  extra: Record<string, unknown>,
): Promise<Record<string, any>[]> {
  const res = await fetch(`${url}${PATH[kind]}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body(kind, { stream: true, ...extra })),
  });
  expect(res.status).toBe(200);
  const events = (await res.text()).split("\n\n").filter((e) => e !== "");
  expect(events.at(-1)).toBe("data: [DONE]");
  return events
    .slice(0, -1)
    .map((e) => JSON.parse(e.slice("data: ".length)) as Record<string, any>);
}

const content = (kind: Kind, c: Record<string, any>): string =>
  kind === "chat" ? (c.choices[0].delta.content ?? "") : c.choices[0].text;

for (const kind of ["completions", "chat"] as const) {
  describe(`${kind} stream, as vLLM sends it`, () => {
    test("no stream_options: no usage anywhere, and every event has choices[0] (the clients read it from each)", async () => {
      const chunks = await streamed(kind, {});
      for (const c of chunks) {
        expect(c.choices.length).toBe(1);
        expect(c.usage).toBeUndefined();
      }
      expect(chunks.filter((c) => content(kind, c) !== "").length).toBe(5);
      if (kind === "chat")
        expect(chunks[0]!.choices[0].delta).toEqual({ role: "assistant", content: "" });
      else expect(chunks.length).toBe(5);
    });

    test("include_usage: false is the same as none; continuous_usage_stats alone gives nothing either", async () => {
      for (const opts of [
        { include_usage: false },
        { include_usage: false, continuous_usage_stats: true },
      ]) {
        const chunks = await streamed(kind, { stream_options: opts });
        expect(chunks.every((c) => c.usage === undefined && c.choices.length === 1)).toBe(true);
      }
    });

    test("include_usage: one last chunk with choices [] and the whole usage, after the last token", async () => {
      for (const opts of [{ include_usage: true }, {}]) {
        const chunks = await streamed(kind, { stream_options: opts });
        const last = chunks.at(-1)!;
        expect(last.choices).toEqual([]);
        expect(last.usage).toMatchObject({
          completion_tokens: 5,
          total_tokens: last.usage.prompt_tokens + 5,
        });
        expect(last.object).toBe(kind === "chat" ? "chat.completion.chunk" : "text_completion");
        for (const c of chunks.slice(0, -1)) {
          expect(c.choices.length).toBe(1);
          expect(c.usage).toBeUndefined();
        }
      }
    });

    test("continuous_usage_stats with include_usage: each chunk carries the usage so far (the role chunk 0)", async () => {
      const chunks = await streamed(kind, {
        stream_options: { include_usage: true, continuous_usage_stats: true },
      });
      const perChunk = chunks.slice(0, -1);
      const prompt = chunks.at(-1)!.usage.prompt_tokens as number;
      const expected = kind === "chat" ? [0, 1, 2, 3, 4, 5] : [1, 2, 3, 4, 5];
      expect(perChunk.map((c) => c.usage.completion_tokens)).toEqual(expected);
      for (const c of perChunk)
        expect(c.usage).toEqual({
          prompt_tokens: prompt,
          completion_tokens: c.usage.completion_tokens,
          total_tokens: prompt + c.usage.completion_tokens,
        });
      expect(chunks.at(-1)!.choices).toEqual([]);
    });

    test("stream_options on a request that does not stream is a 400 naming it; an empty one is allowed", async () => {
      const bad = await fetch(`${url}${PATH[kind]}`, {
        method: "POST",
        body: JSON.stringify(
          body(kind, { stream: false, stream_options: { include_usage: true } }),
        ),
      });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { message: string } }).error.message).toContain(
        "Stream options can only be defined when `stream=True`.",
      );
      const ok = await fetch(`${url}${PATH[kind]}`, {
        method: "POST",
        body: JSON.stringify(body(kind, { stream_options: {} })),
      });
      expect(ok.status).toBe(200);
      expect(
        ((await ok.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens,
      ).toBe(5);
    });

    test("a stream_options value of the wrong type is a 400 naming the field", async () => {
      const bad = await fetch(`${url}${PATH[kind]}`, {
        method: "POST",
        body: JSON.stringify(
          body(kind, { stream: true, stream_options: { include_usage: "yes" } }),
        ),
      });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { message: string } }).error.message).toContain(
        "stream_options.include_usage",
      );
    });
  });
}

describe("what the clients read about the server", () => {
  test("GET /v1/models: every card has vLLM's max_model_len", async () => {
    const models = (await (await fetch(`${url}/v1/models`)).json()) as {
      data: Record<string, unknown>[];
    };
    expect(models.data.length).toBeGreaterThan(0);
    for (const m of models.data) expect(m.max_model_len).toBe(BLOCK_SIZE * KV_BLOCKS);
  });

  test("SGLang's GET /get_server_info and /server_info: server args, the scheduler's token pool, internal_states, version", async () => {
    for (const path of ["/get_server_info", "/server_info"]) {
      const res = await fetch(`${url}${path}`);
      expect(res.status).toBe(200);
      const info = (await res.json()) as Record<string, any>;
      expect(info).toMatchObject({
        model_path: "switchyard-sim",
        served_model_name: "switchyard-sim",
        dp_size: 1,
        page_size: BLOCK_SIZE,
        max_total_num_tokens: BLOCK_SIZE * KV_BLOCKS,
      });
      expect(typeof info.version).toBe("string");
      // bench_serving.py: server_info_json["internal_states"][0].get("avg_spec_accept_length", None)
      expect(Array.isArray(info.internal_states)).toBe(true);
      expect(typeof info.internal_states[0]).toBe("object");
      expect(info.internal_states[0].avg_spec_accept_length).toBeUndefined();
    }
    const model = (await (await fetch(`${url}/get_model_info`)).json()) as Record<string, unknown>;
    expect(model).toEqual({
      model_path: "switchyard-sim",
      tokenizer_path: "bytes",
      is_generation: true,
    });
  });
});
