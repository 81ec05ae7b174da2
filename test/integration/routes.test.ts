/**
 * Every route a client uses (issue 11 §3), through a real router in front of two simulated
 * engines without a tokenizer: the engines answer each route minimally but in its real
 * shape, the router proxies it to a worker serving the model. Text without a tokenizer is
 * routed approximately (on the router's own decisions), which still keeps a repeated prefix
 * on one worker. Every process is stopped by PID in afterAll.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { freePorts, startMain, stopAll, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

const BS = 16;
let engines: Proc[] = [];
let router: Proc | undefined;
let url = "";

beforeAll(async () => {
  const [port] = freePorts(1);
  url = `http://127.0.0.1:${port}`;
  engines = await Promise.all(
    [1, 2].map((seed) =>
      startMain([
        "mocker",
        "--port",
        "0",
        "--router-url",
        url,
        "--seed",
        String(seed),
        "--block-size",
        String(BS),
        "--event-batch-ms",
        "2",
        "--decode-ms-per-step",
        "2",
      ]),
    ),
  );
  router = await startMain([
    "serve",
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--block-size",
    String(BS),
    ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
  ]);
});

afterAll(async () => {
  await stopAll([router, ...engines]);
});

const post = (path: string, body: unknown) =>
  fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

async function ok(path: string, body: unknown): Promise<Record<string, any>> {
  const r = await post(path, body);
  const text = await r.text();
  expect(r.status, `${path}: ${text}`).toBe(200);
  expect(r.headers.get("x-switchyard-worker")).toMatch(/^\d+$/);
  return JSON.parse(text);
}

const MODEL = "switchyard-sim";

describe("every client route through the router", () => {
  test("POST /v1/embeddings, /pooling and /classify: one answer per input", async () => {
    const e = await ok("/v1/embeddings", { model: MODEL, input: ["first text", "second text"] });
    expect(e.object).toBe("list");
    expect(e.data.map((d: any) => [d.index, d.object, d.embedding.length])).toEqual([
      [0, "embedding", 8],
      [1, "embedding", 8],
    ]);
    expect(e.usage.prompt_tokens).toBe("first text".length + "second text".length);
    const p = await ok("/pooling", { model: MODEL, input: [1, 2, 3] });
    expect(p.data[0].object).toBe("pooling");
    const c = await ok("/classify", { model: MODEL, input: ["good", "bad"] });
    expect(c.data.map((d: any) => [d.index, d.num_classes, d.probs.length])).toEqual([
      [0, 2, 2],
      [1, 2, 2],
    ]);
  });

  test("POST /v1/responses runs through the engine", async () => {
    const r = await ok("/v1/responses", {
      model: MODEL,
      input: "Tell me about switchyards.",
      max_output_tokens: 3,
    });
    expect(r).toMatchObject({ object: "response", status: "completed", model: MODEL });
    expect(r.output[0].content[0].type).toBe("output_text");
    expect(r.usage.output_tokens).toBe(3);
  });

  test("vLLM's native routes: /tokenize, /detokenize, /score, /v1/score, /rerank, /v1/rerank, /v2/rerank", async () => {
    const t = await ok("/tokenize", { model: MODEL, prompt: "héllo" });
    expect(t).toMatchObject({ count: 6, tokens: [104, 195, 169, 108, 108, 111] });
    expect(await ok("/detokenize", { model: MODEL, tokens: t.tokens })).toEqual({
      prompt: "héllo",
    });
    for (const path of ["/score", "/v1/score"]) {
      const s = await ok(path, {
        model: MODEL,
        text_1: "cats",
        text_2: ["cats and dogs", "trains"],
      });
      expect(s.data.map((d: any) => d.index)).toEqual([0, 1]);
    }
    for (const path of ["/rerank", "/v1/rerank", "/v2/rerank"]) {
      const r = await ok(path, {
        model: MODEL,
        query: "train",
        documents: ["a train yard", "zzz"],
        top_n: 1,
      });
      expect(r.results).toHaveLength(1);
      expect(r.results[0].document.text).toBe("a train yard");
    }
  });

  test("SGLang's /generate (text and input_ids)", async () => {
    const g = await ok("/generate", {
      text: "The switchyard",
      sampling_params: { max_new_tokens: 4 },
    });
    expect(g.meta_info).toMatchObject({
      completion_tokens: 4,
      prompt_tokens: "The switchyard".length,
    });
    expect(g.text).toHaveLength(4);
    const ids = await ok("/generate", {
      input_ids: [5, 6, 7],
      sampling_params: { max_new_tokens: 1 },
    });
    expect(ids.meta_info.prompt_tokens).toBe(3);
  });

  test("completions with a batch of prompts: one choice per prompt", async () => {
    const c = await ok("/v1/completions", {
      model: MODEL,
      prompt: ["one", "two", [1, 2, 3]],
      max_tokens: 2,
    });
    expect(c.choices.map((x: any) => x.index)).toEqual([0, 1, 2]);
  });

  test("chat content parts with images are accepted and proxied", async () => {
    const c = await ok("/v1/chat/completions", {
      model: MODEL,
      max_tokens: 2,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is in this picture?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          ],
        },
      ],
    });
    expect(c.choices[0].message.role).toBe("assistant");
  });

  test("an unknown route is a 404 in OpenAI's shape", async () => {
    const r = await post("/v1/does-not-exist", {});
    expect(r.status).toBe(404);
    const e = (await r.json()) as { error: { type: string; code: string; message: string } };
    expect(e.error).toMatchObject({ type: "not_found_error", code: "not_found" });
  });

  test("text without a tokenizer is routed approximately, and a repeated prefix stays on one worker with overlap", async () => {
    const base = "You are a helpful assistant. Tell me about KV caches and how routers use them. ";
    const a = await post("/v1/completions", { prompt: base, max_tokens: 1 });
    await a.text();
    const b = await post("/v1/completions", { prompt: `${base}And routers?`, max_tokens: 1 });
    await b.text();
    expect(b.headers.get("x-switchyard-worker")).toBe(a.headers.get("x-switchyard-worker"));
    expect(Number(b.headers.get("x-switchyard-overlap-blocks"))).toBe(Math.floor(base.length / BS));
    const ws = (
      (await (await fetch(`${url}/v1/workers`)).json()) as {
        workers: { text_routing: string; tokenizer: unknown }[];
      }
    ).workers;
    for (const w of ws) expect(w).toMatchObject({ text_routing: "approximate", tokenizer: null });
  });
});
