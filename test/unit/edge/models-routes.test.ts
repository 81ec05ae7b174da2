/**
 * Routing by model (issue 11 §2) and the pass-through routes (§3) on the in-process app:
 * a request's `model` reaches only workers serving it, unknown models and routes are 404s in
 * OpenAI's shape, every client route is proxied byte for byte.
 */
import { describe, expect, test } from "bun:test";
import { PASSTHROUGH_ROUTES } from "../../../src/edge/routes/passthrough.ts";
import { parseModelList } from "../../../src/fleet/models.ts";
import { harness, jsonResponse } from "./harness.ts";

const W1 = { id: 11n, url: "http://w1:1" };
const W2 = { id: 22n, url: "http://w2:2" };
const W3 = { id: 33n, url: "http://w3:3" };

const ok = () => Promise.resolve(jsonResponse({ ok: true }));

function fleet() {
  const h = harness({ workers: [W1, W2, W3], fetch: ok });
  h.models.set(W1.id, [
    { id: "alpha", parent: null },
    { id: "alpha-sql", parent: "alpha" },
  ]);
  h.models.set(W2.id, [{ id: "alpha", parent: null }]);
  h.models.set(W3.id, [{ id: "beta", parent: null }]);
  return h;
}

const hosts = (h: ReturnType<typeof harness>) => new Set(h.calls.map((c) => new URL(c.url).host));

describe("routing by model", () => {
  test("a base model goes only to the workers serving it; an adapter only to the one listing it", async () => {
    const h = fleet();
    // Held open (not read), so the load spreads them over both alpha workers.
    const held = [];
    for (let i = 0; i < 12; i++)
      held.push(
        await h.request("/v1/completions", { json: { model: "alpha", prompt: `p${i}`.repeat(8) } }),
      );
    expect(held.every((r) => r.status === 200)).toBe(true);
    expect(hosts(h)).toEqual(new Set(["w1:1", "w2:2"]));
    for (const r of held) await r.text();
    h.calls.length = 0;
    for (let i = 0; i < 4; i++)
      await h.request("/v1/chat/completions", {
        json: { model: "beta", messages: [{ role: "user", content: `q${i}` }] },
      });
    expect(hosts(h)).toEqual(new Set(["w3:3"]));
    h.calls.length = 0;
    for (let i = 0; i < 4; i++)
      await h.request("/v1/completions", { json: { model: "alpha-sql", prompt: `s${i}` } });
    expect(hosts(h)).toEqual(new Set(["w1:1"]));
  });

  test("an unknown model is a 404 model_not_found in OpenAI's shape, and no engine is called", async () => {
    const h = fleet();
    const r = await h.request("/v1/completions", { json: { model: "gamma", prompt: "x" } });
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({
      error: {
        message: "The model `gamma` does not exist.",
        type: "not_found_error",
        code: "model_not_found",
        param: "model",
      },
    });
    expect(h.calls).toHaveLength(0);
  });

  test("workers whose list is unknown may serve any name; without any list every model goes everywhere", async () => {
    const h = fleet();
    h.models.remove(W2.id);
    for (let i = 0; i < 4; i++)
      await h.request("/v1/completions", { json: { model: "gamma", prompt: `p${i}` } });
    expect(hosts(h)).toEqual(new Set(["w2:2"]));
    const bare = harness({ workers: [W1, W2], fetch: ok });
    expect(
      (await bare.request("/v1/completions", { json: { model: "anything", prompt: "x" } })).status,
    ).toBe(200);
  });

  test("no `model` goes to any worker", async () => {
    const h = fleet();
    const held = [];
    for (let i = 0; i < 12; i++)
      held.push(await h.request("/v1/completions", { json: { prompt: `p${i}`.repeat(8) } }));
    expect(hosts(h).size).toBe(3);
    for (const r of held) await r.text();
  });

  test("GET /v1/models is the union of the workers' lists with adapters' parents; GET /v1/workers shows each list", async () => {
    const h = fleet();
    const body = (await (await h.request("/v1/models")).json()) as {
      object: string;
      data: { id: string; object: string; parent: string | null }[];
    };
    expect(body.object).toBe("list");
    expect(body.data.map((m) => [m.id, m.parent])).toEqual([
      ["alpha", null],
      ["alpha-sql", "alpha"],
      ["beta", null],
    ]);
    expect(body.data.every((m) => m.object === "model")).toBe(true);
    expect(h.calls).toHaveLength(0); // answered from what the health checks read
    const ws = (await (await h.request("/v1/workers")).json()) as {
      workers: { id: string; models: unknown }[];
    };
    expect(ws.workers.find((w) => w.id === "33")!.models).toEqual([{ id: "beta", parent: null }]);
  });

  test("GET /v1/models keeps each engine's own fields and merges them per model (answered from the lists read, or by asking)", async () => {
    // Two stand-in engines serving the same base model with different fields: a vLLM one
    // (adapter, permission, a larger max_model_len) and an SGLang-like one.
    const vllm = {
      object: "list",
      data: [
        {
          id: "llama",
          object: "model",
          created: 1,
          owned_by: "vllm",
          root: "/models/llama",
          parent: null,
          max_model_len: 8192,
          permission: [{ id: "modelperm-1", object: "model_permission", allow_sampling: true }],
        },
        {
          id: "llama-sql",
          object: "model",
          created: 1,
          owned_by: "vllm",
          root: "/loras/sql",
          parent: "llama",
          max_model_len: 8192,
          permission: [],
        },
      ],
    };
    const sglang = {
      object: "list",
      data: [
        {
          id: "llama",
          object: "model",
          created: 2,
          owned_by: "sglang",
          root: "llama",
          max_model_len: 4096,
          sglang_only: "kept",
        },
      ],
    };
    const expected = [
      {
        id: "llama",
        object: "model",
        created: expect.any(Number),
        owned_by: "vllm",
        root: "/models/llama",
        parent: null,
        max_model_len: 4096, // the smallest: a request may reach either engine
        permission: vllm.data[0]!.permission,
        sglang_only: "kept",
      },
      {
        id: "llama-sql",
        object: "model",
        created: expect.any(Number),
        owned_by: "vllm",
        root: "/loras/sql",
        parent: "llama",
        max_model_len: 8192,
        permission: [],
      },
    ];
    const engines = async (url: string) => jsonResponse(url.startsWith(W1.url) ? vllm : sglang);

    // Some worker's list unknown: the engines are asked.
    const asking = harness({ workers: [W1, W2], fetch: engines });
    const asked = (await (await asking.request("/v1/models")).json()) as {
      object: string;
      data: { created: number }[];
    };
    expect(asking.calls.map((c) => c.url).sort()).toEqual([
      `${W1.url}/v1/models`,
      `${W2.url}/v1/models`,
    ]);
    expect(asked).toEqual({ object: "list", data: expected });
    expect(asked.data[0]!.created).toBeGreaterThan(1_700_000_000); // this answer's time, not an engine's

    // Every list known (what the health checks read): the same cards, nobody asked.
    const known = harness({ workers: [W1, W2], fetch: engines });
    known.models.set(W1.id, parseModelList(vllm)!);
    known.models.set(W2.id, parseModelList(sglang)!);
    expect(await (await known.request("/v1/models")).json()).toEqual({
      object: "list",
      data: expected,
    });
    expect(known.calls).toHaveLength(0);
  });

  test("a bad `model` type is a 400 naming it", async () => {
    const h = fleet();
    const r = await h.request("/v1/embeddings", { json: { model: 3, input: "x" } });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { param: string } }).error.param).toBe("model");
  });
});

describe("every client route is proxied", () => {
  test.each(Object.keys(PASSTHROUGH_ROUTES))(
    "POST %s goes to a worker serving the model, body byte for byte",
    async (path) => {
      const h = fleet();
      const raw = `{"model":"beta","input":"hello there","text":"hi","query":"q","documents":["d"],"tokens":[1,2]}`;
      const r = await h.request(path, {
        method: "POST",
        body: raw,
        headers: { "content-type": "application/json" },
      });
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({ ok: true });
      expect(r.headers.get("x-switchyard-worker")).toBe("33");
      expect(h.calls.map((c) => c.url)).toEqual([`http://w3:3${path}`]);
      expect(new TextDecoder().decode(h.calls[0]!.body)).toBe(raw);
      expect(h.activeLoad()).toBe(0);
    },
  );

  test("a completions batch of prompts is proxied whole; chat with image parts is accepted", async () => {
    const h = fleet();
    expect(
      (
        await h.request("/v1/completions", {
          json: { model: "alpha", prompt: ["one", "two", "three"] },
        })
      ).status,
    ).toBe(200);
    const chat = {
      model: "beta",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "what is this?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
          ],
        },
      ],
    };
    expect((await h.request("/v1/chat/completions", { json: chat })).status).toBe(200);
    expect(JSON.parse(new TextDecoder().decode(h.calls[1]!.body))).toEqual(chat);
  });

  test("an unknown route is a 404 in OpenAI's shape", async () => {
    const h = fleet();
    const r = await h.request("/v1/nope", { json: {} });
    expect(r.status).toBe(404);
    const e = (await r.json()) as { error: { code: string; type: string; message: string } };
    expect(e.error).toMatchObject({ code: "not_found", type: "not_found_error" });
    expect(e.error.message).toContain("/v1/nope");
  });
});
