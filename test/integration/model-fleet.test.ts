/**
 * A mixed-model fleet (issue 11 §2): two base models on different simulated engines plus LoRA
 * adapters, behind one router that learns who serves what from the engines' GET /v1/models
 * (at registration and on every health check). No request may ever reach an engine that
 * does not serve its model: every engine counts such requests (mocker_unknown_model_total),
 * and those counts must stay 0. Every process is stopped by PID in afterAll.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { freePorts, startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

const BS = 16;
let engines: Proc[] = [];
let router: Proc | undefined;
let url = "";
/** worker id -> the models its engine serves */
const serves = new Map<string, Set<string>>();

const common = ["--block-size", String(BS), "--event-batch-ms", "2", "--decode-ms-per-step", "2"];

beforeAll(async () => {
  const [port] = freePorts(1);
  url = `http://127.0.0.1:${port}`;
  const specs = [
    ["--model", "alpha", "--lora", "alpha-sql"],
    ["--model", "alpha"],
    ["--model", "beta", "--lora", "beta-chat"],
  ];
  engines = await Promise.all(
    specs.map((s, i) =>
      startMain([
        "mocker",
        "--port",
        "0",
        "--router-url",
        url,
        "--seed",
        String(i + 1),
        ...common,
        ...s,
      ]),
    ),
  );
  serves.set(String(engines[0]!.info.worker_id), new Set(["alpha", "alpha-sql"]));
  serves.set(String(engines[1]!.info.worker_id), new Set(["alpha"]));
  serves.set(String(engines[2]!.info.worker_id), new Set(["beta", "beta-chat"]));
  router = await startMain([
    "serve",
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--block-size",
    String(BS),
    "--health-interval",
    "0.2",
    ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
  ]);
});

afterAll(async () => {
  await stopAll([router, ...engines]);
});

const post = (base: string, path: string, body: unknown) =>
  fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

async function unknownModelCounts(): Promise<number[]> {
  return Promise.all(
    engines.map(async (e) => {
      const text = await (await fetch(`${e.info.url}/metrics`)).text();
      const line = text.split("\n").find((l) => l.startsWith("mocker_unknown_model_total "));
      return Number(line?.split(" ")[1]);
    }),
  );
}

describe("a fleet of two base models and their adapters", () => {
  test("every request reaches only engines serving its model, on every route", async () => {
    const models = ["alpha", "beta", "alpha-sql", "beta-chat"];
    const seen = new Map<string, Set<string>>();
    const requests: Promise<void>[] = [];
    for (let i = 0; i < 40; i++) {
      const model = models[i % models.length]!;
      const [path, body] =
        i % 3 === 0
          ? [
              "/v1/chat/completions",
              {
                model,
                messages: [{ role: "user", content: `question ${i} about ${model}` }],
                max_tokens: 2,
              },
            ]
          : i % 3 === 1
            ? [
                "/v1/completions",
                { model, prompt: `prompt ${i} for ${model} `.repeat(4), max_tokens: 2 },
              ]
            : ["/v1/embeddings", { model, input: `embed ${i}` }];
      requests.push(
        post(url, path as string, body).then(async (r) => {
          const text = await r.text();
          expect(r.status, `${path} ${model}: ${text}`).toBe(200);
          const w = r.headers.get("x-switchyard-worker")!;
          expect(serves.get(w)?.has(model), `${model} went to worker ${w}`).toBe(true);
          let s = seen.get(model);
          if (!s) seen.set(model, (s = new Set()));
          s.add(w);
        }),
      );
    }
    await Promise.all(requests);
    expect((await unknownModelCounts()).every((n) => n === 0)).toBe(true);
    expect(seen.get("beta")!.size).toBe(1);
    expect(seen.get("alpha-sql")!.size).toBe(1);
  });

  test("an unknown model is a 404 model_not_found in OpenAI's shape and reaches no engine", async () => {
    const r = await post(url, "/v1/completions", { model: "gamma", prompt: "hello" });
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({
      error: {
        message: "The model `gamma` does not exist.",
        type: "not_found_error",
        code: "model_not_found",
        param: "model",
      },
    });
    expect((await unknownModelCounts()).every((n) => n === 0)).toBe(true);
  });

  test("GET /v1/models is the union, adapters with their parent", async () => {
    const body = (await (await fetch(`${url}/v1/models`)).json()) as {
      object: string;
      data: { id: string; parent: string | null }[];
    };
    expect(body.object).toBe("list");
    const byId = Object.fromEntries(body.data.map((m) => [m.id, m.parent]));
    expect(byId).toEqual({ alpha: null, "alpha-sql": "alpha", beta: null, "beta-chat": "beta" });
  });

  test("models given at registration route the worker's model without asking its engine first", async () => {
    const delta = await startMain(["mocker", "--port", "0", ...common, "--model", "delta"]);
    engines.push(delta);
    serves.set(String(delta.info.worker_id), new Set(["delta"]));
    const reg = await post(url, "/v1/workers", { url: String(delta.info.url), models: ["delta"] });
    expect(reg.status).toBe(201);
    const r = await post(url, "/v1/completions", {
      model: "delta",
      prompt: "to delta",
      max_tokens: 1,
    });
    expect(r.status).toBe(200);
    await r.text();
    expect(r.headers.get("x-switchyard-worker")).toBe(String(delta.info.worker_id));
    const bad = await post(url, "/v1/workers", { url: "http://127.0.0.1:1", models: [] });
    expect(bad.status).toBe(400);
  });

  test("an adapter loaded on an engine behind the router's back is learned at the next health check", async () => {
    const e1 = engines[1]!;
    expect(
      (
        await post(String(e1.info.url), "/v1/load_lora_adapter", {
          lora_name: "alpha-new",
          lora_path: "/l",
        })
      ).status,
    ).toBe(200);
    const id = String(e1.info.worker_id);
    await until(async () => {
      const ws = (
        (await (await fetch(`${url}/v1/workers`)).json()) as {
          workers: { id: string; models: { id: string }[] | null }[];
        }
      ).workers;
      return ws.find((w) => w.id === id)?.models?.some((m) => m.id === "alpha-new");
    }, "the new adapter in the worker's models");
    for (let i = 0; i < 6; i++) {
      const r = await post(url, "/v1/completions", {
        model: "alpha-new",
        prompt: `new ${i}`,
        max_tokens: 1,
      });
      expect(r.status).toBe(200);
      await r.text();
      expect(r.headers.get("x-switchyard-worker")).toBe(id);
    }
    expect((await unknownModelCounts()).every((n) => n === 0)).toBe(true);
  });
});
